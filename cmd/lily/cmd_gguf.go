package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/gguf"
	"github.com/lily-engine/lily/internal/ggufexport"
	"github.com/lily-engine/lily/ref"
)

// cmdGGUF writes a checkpoint as llama.cpp's GGUF, for comparing the two engines on the same
// weights.
func cmdGGUF(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("gguf", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	model := addModelFlag(fs)
	out := fs.String("out", "", "the GGUF file to write (must not exist)")
	typ := fs.String("type", "q4_0", "the matrices' type: q4_0 (the MLX checkpoint's bytes per weight), or f32 (exact, to check llama.cpp's outputs against lily's on a small model)")
	printUsage := func() {
		fmt.Fprintf(fs.Output(), "usage: lily gguf [--model DIR] [--type q4_0|f32] --out FILE.gguf\n\n"+
			"Write the checkpoint as a GGUF file of llama.cpp's qwen35moe architecture: the matrices\n"+
			"requantized to Q4_0 (the MLX checkpoint's bytes per weight) or in F32, the router, the shared\n"+
			"expert's gate and every vector in F32, the DeltaNet value heads in llama.cpp's order.\n"+
			"The vocabulary is llama.cpp's \"none\" tokenizer (ids only): the file is for llama-bench,\n"+
			"e.g. llama-bench -m FILE.gguf -t 2 -fa 1 -p 8,16,32,256 -n 32, beside lily bench on DIR.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, "gguf", printUsage, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lily gguf: unexpected argument %q\n", fs.Arg(0))
		printUsage()
		return 2
	}
	if *out == "" {
		fmt.Fprintln(stderr, "lily gguf: --out is required")
		printUsage()
		return 2
	}
	types := map[string]gguf.Type{"q4_0": gguf.Q4_0, "f32": gguf.F32}
	t, ok := types[*typ]
	if !ok {
		fmt.Fprintf(stderr, "lily gguf: --type %q: want q4_0 or f32\n", *typ)
		printUsage()
		return 2
	}
	dir, err := checkpoint.Locate(*model)
	if err != nil {
		fmt.Fprintf(stderr, "lily gguf: %v\n", err)
		return 1
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		fmt.Fprintf(stderr, "lily gguf: %v\n", err)
		return 1
	}
	defer ck.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	if err := writeGGUF(ctx, *out, ck.Weights, filepath.Base(dir), t); err != nil {
		fmt.Fprintf(stderr, "lily gguf: %v\n", err)
		return 1
	}
	st, err := os.Stat(*out)
	if err != nil {
		fmt.Fprintf(stderr, "lily gguf: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: %s as llama.cpp %s, %d bytes, %.1fs\n", *out, dir, ggufexport.Arch, st.Size(), time.Since(start).Seconds())
	return 0
}

// writeGGUF writes w to a new file at path, through a temporary file renamed at the end so that
// an interrupted (ctx: SIGINT, SIGTERM) or failed export leaves no file behind.
func writeGGUF(ctx context.Context, path string, w *checkpoint.Weights, name string, t gguf.Type) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if err := ggufexport.Write(ctx, tmp, w, ggufexport.Options{Name: name, Type: t, Row: ref.Row}); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp's 0600 is for secrets
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
