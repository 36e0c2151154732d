package checkpoint

import (
	"errors"
	"fmt"
	"os"
)

// Checkpoint is an open model directory: its config, its typed weights and the memory-mapped
// files they alias. The weights are valid until Close. Reads are safe for concurrent use.
type Checkpoint struct {
	Dir     string
	Config  *Config
	Weights *Weights

	files *tensorFiles
	stats Stats
}

// Open reads dir's config.json (and generation_config.json), maps its safetensors files
// (model.safetensors, or the shards of model.safetensors.index.json) and builds the typed
// Weights, checking every text-model tensor against the config. Vision and MTP tensors are
// skipped; a missing, unexpected or mis-shaped tensor is an error naming it.
func Open(dir string) (*Checkpoint, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("checkpoint: %s is not a directory", dir)
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	tf, err := openTensorFiles(dir)
	if err != nil {
		return nil, err
	}
	w, l, err := build(cfg, tf.byName)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("checkpoint: %s: %w", dir, err), tf.close())
	}
	c := &Checkpoint{Dir: dir, Config: cfg, Weights: w, files: tf}
	c.stats = computeStats(w, l)
	c.stats.Files = len(tf.files)
	return c, nil
}

// Close unmaps the files; the Weights must not be used afterwards.
func (c *Checkpoint) Close() error {
	if c.files == nil {
		return nil
	}
	err := c.files.close()
	c.files = nil
	return err
}

// Stats describes the checkpoint's size (see Stats).
func (c *Checkpoint) Stats() Stats { return c.stats }
