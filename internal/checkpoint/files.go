package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lily-engine/lily/internal/safefile"
	"os"
	"path/filepath"
	"sort"

	"github.com/lily-engine/lily/internal/safetensors"
)

// Names of the weight files in a checkpoint directory.
const (
	indexFile  = "model.safetensors.index.json"
	singleFile = "model.safetensors"
)

// tensorFiles is every tensor of a checkpoint's safetensors files, by name.
type tensorFiles struct {
	files  []*safetensors.File
	byName map[string]Tensor
}

// close unmaps every file.
func (tf *tensorFiles) close() error {
	var errs []error
	for _, f := range tf.files {
		errs = append(errs, f.Close())
	}
	tf.files = nil
	return errors.Join(errs...)
}

// openTensorFiles opens dir's weights: the shards named by model.safetensors.index.json, or
// model.safetensors alone. With an index, every listed tensor must be in its shard and every
// shard tensor must be listed for that shard.
func openTensorFiles(dir string) (*tensorFiles, error) {
	tf := &tensorFiles{byName: map[string]Tensor{}}
	indexPath := filepath.Join(dir, indexFile)
	raw, err := safefile.ReadFile(indexPath, maxIndexBytes)
	if errors.Is(err, os.ErrNotExist) {
		if err := tf.add(filepath.Join(dir, singleFile), nil); err != nil {
			return nil, errors.Join(err, tf.close())
		}
		return tf, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", indexPath, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("checkpoint: %s: empty or missing weight_map", indexPath)
	}
	shards := map[string][]string{}
	for name, shard := range index.WeightMap {
		if shard == "" || filepath.Base(shard) != shard || shard == "." || shard == ".." {
			return nil, fmt.Errorf("checkpoint: %s: tensor %q: bad shard file name %q", indexPath, name, shard)
		}
		shards[shard] = append(shards[shard], name)
	}
	names := make([]string, 0, len(shards))
	for s := range shards {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		if err := tf.add(filepath.Join(dir, s), index.WeightMap); err != nil {
			return nil, errors.Join(err, tf.close())
		}
		for _, name := range shards[s] {
			if _, ok := tf.byName[name]; !ok {
				err := fmt.Errorf("checkpoint: tensor %q: %s lists it in %s, which does not hold it", name, indexFile, s)
				return nil, errors.Join(err, tf.close())
			}
		}
	}
	return tf, nil
}

// add opens one file and records its tensors; weightMap, when non-nil, must list each of them
// for this file.
func (tf *tensorFiles) add(path string, weightMap map[string]string) error {
	f, err := safetensors.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && weightMap == nil {
			return fmt.Errorf("checkpoint: no %s or %s in %s", indexFile, singleFile, filepath.Dir(path))
		}
		return fmt.Errorf("checkpoint: %w", err)
	}
	tf.files = append(tf.files, f)
	base := filepath.Base(path)
	for _, t := range f.Tensors() {
		if weightMap != nil && weightMap[t.Name] != base {
			if weightMap[t.Name] == "" {
				return fmt.Errorf("checkpoint: tensor %q in %s is not listed in %s", t.Name, path, indexFile)
			}
			return fmt.Errorf("checkpoint: tensor %q in %s is listed in %s for %s", t.Name, path, indexFile, weightMap[t.Name])
		}
		if _, dup := tf.byName[t.Name]; dup {
			return fmt.Errorf("checkpoint: tensor %q in %s appears in two files", t.Name, path)
		}
		tf.byName[t.Name] = Tensor{Name: t.Name, File: path, DType: t.DType, Shape: t.Shape, Data: t.Data}
	}
	return nil
}
