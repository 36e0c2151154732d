package synth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/lily-engine/lily/fixtures"
	"github.com/lily-engine/lily/internal/safetensors"
)

// Options control Write.
type Options struct {
	Seed    uint64    // the same seed writes the same bytes
	Workers int       // chunks generated in parallel while one is written; 0 means GOMAXPROCS
	Log     io.Writer // when non-nil, receives one line per file written
	// UnpaddedHeaders writes each shard's header as MLX's writer does (safetensors.HeaderOptions
	// Unpadded): no padding, so a shard's data starts at an arbitrary offset, as in real MLX
	// checkpoints.
	UnpaddedHeaders bool
}

// chunkBytes is the unit of parallel generation and of writes to the file. Write holds Workers+1
// chunk buffers.
const chunkBytes = 4 << 20

// IndexFile is the name of the shard index Write produces.
const IndexFile = "model.safetensors.index.json"

// Write streams the checkpoint of plan p into dir, which must not exist or be empty: the shards, the
// shard index, config.json, generation_config.json and the bundled tiny tokenizer and chat template.
// Every tensor is generated in chunks from opt.Seed as it is written, so memory stays small whatever
// the checkpoint's size. On error (or when ctx is cancelled) the shard being written is removed and
// config.json is not written.
func Write(ctx context.Context, p *Plan, dir string, opt Options) error {
	if err := checkEmptyDir(dir); err != nil {
		return err
	}
	fillers := make([][]filler, len(p.Shards))
	for i, s := range p.Shards {
		for _, t := range s.Tensors {
			f, err := newFiller(t.Init, t.Name, opt.Seed)
			if err != nil {
				return err
			}
			if err := checkDType(t); err != nil {
				return err
			}
			fillers[i] = append(fillers[i], f)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	st := newStreamer(workers + 1)
	format := "pt"
	if p.Layout == LayoutMLX {
		format = "mlx"
	}
	for i, s := range p.Shards {
		path := filepath.Join(dir, s.File)
		hopt := safetensors.HeaderOptions{Unpadded: opt.UnpaddedHeaders}
		if err := writeShard(ctx, st, path, s, fillers[i], format, hopt); err != nil {
			os.Remove(path)
			return err
		}
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, "wrote %s (%d tensors, %d bytes)\n", path, len(s.Tensors), s.Bytes())
		}
	}
	return writeSideFiles(p, dir)
}

// checkEmptyDir fails unless dir is absent or an empty directory.
func checkEmptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("output directory %s is not empty (%d entries); use a new or empty directory", dir, len(ents))
	}
	return nil
}

// checkDType fails when a tensor's dtype does not match what its init generates.
func checkDType(t Tensor) error {
	want := safetensors.BF16
	if t.Init.Kind == InitPacked {
		want = safetensors.U32
	}
	if t.DType != want {
		return fmt.Errorf("tensor %q: init kind %d generates %v, but the tensor is %v", t.Name, t.Init.Kind, want, t.DType)
	}
	return nil
}

func writeShard(ctx context.Context, st *streamer, path string, s Shard, fill []filler, format string, hopt safetensors.HeaderOptions) error {
	specs := make([]safetensors.TensorSpec, len(s.Tensors))
	for i, t := range s.Tensors {
		specs[i] = t.Spec()
	}
	w, err := safetensors.CreateWith(path, specs, map[string]string{"format": format}, hopt)
	if err != nil {
		return err
	}
	for i, t := range s.Tensors {
		size := t.Bytes()
		err := w.WriteTensor(t.Name, func(out io.Writer) error { return st.stream(ctx, out, size, fill[i]) })
		if err != nil {
			w.Close()
			return err // names the file and the tensor
		}
	}
	return w.Close()
}

// writeSideFiles writes everything but the shards; config.json goes last, so a directory that has
// it is complete.
func writeSideFiles(p *Plan, dir string) error {
	index, err := p.IndexJSON()
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	gen, err := GenerationConfigJSON()
	if err != nil {
		return fmt.Errorf("generation config: %w", err)
	}
	cfg, err := p.ConfigJSON()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{IndexFile, index},
		{"generation_config.json", gen},
		{"tokenizer.json", fixtures.TinyTokenizerJSON},
		{"tokenizer_config.json", fixtures.TinyTokenizerConfigJSON},
		{"chat_template.jinja", []byte(fixtures.ChatTemplate)},
		{"config.json", cfg},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err // names the file
		}
	}
	return nil
}

// streamer generates tensor data in parallel chunks and writes them in order. It owns a fixed pool
// of chunk buffers; one goroutine uses it at a time.
type streamer struct {
	free chan []byte
}

func newStreamer(buffers int) *streamer {
	s := &streamer{free: make(chan []byte, buffers)}
	for range buffers {
		s.free <- make([]byte, chunkBytes)
	}
	return s
}

// stream writes size bytes produced by fill to w: chunks are generated concurrently (as many as
// there are free buffers) and written strictly in order.
func (s *streamer) stream(ctx context.Context, w io.Writer, size int64, fill filler) error {
	type job struct {
		buf  []byte
		done chan struct{}
	}
	order := make(chan job, cap(s.free))
	stop := make(chan struct{})
	abort := sync.OnceFunc(func() { close(stop) })
	go func() { // producer: hands chunks to generators in order
		defer close(order)
		for off := int64(0); off < size; off += chunkBytes {
			var buf []byte
			select {
			case buf = <-s.free:
			case <-stop:
				return
			}
			j := job{buf[:min(chunkBytes, size-off)], make(chan struct{})}
			go func(off int64) {
				fill(j.buf, off)
				close(j.done)
			}(off)
			order <- j // never blocks for long: order holds as many jobs as there are buffers
		}
	}()
	var err error
	for j := range order {
		<-j.done
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			_, err = w.Write(j.buf)
		}
		if err != nil {
			abort()
		}
		s.free <- j.buf[:cap(j.buf)]
	}
	return err
}
