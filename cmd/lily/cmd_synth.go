package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/synth"
)

const synthUsage = `usage: lily synth --preset tiny|qwen3.6-35b-a3b [--layers N] --layout hf|mlx [--seed S] [--unpadded-header] --out DIR

Writes a random-weight checkpoint with exactly the tensor names, dtypes, shapes, shards, index and
config files of the real one (hf: transformers bf16; mlx: mlx-community 4-bit), plus the bundled tiny
tokenizer and chat template. Data is streamed: memory stays small whatever the size. DIR must be new
or empty. The full preset is about 19.5 GB in the mlx layout and 70 GB in the hf layout.

flags:
`

// cmdSynth implements "lily synth".
func cmdSynth(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("synth", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	preset := fs.String("preset", "", "model configuration: "+strings.Join(synth.PresetNames(), " or "))
	layers := fs.Int("layers", 0, "number of layers, at the preset's width (default: the preset's)")
	layout := fs.String("layout", "", "checkpoint layout: hf (bf16) or mlx (4-bit)")
	seed := fs.Uint64("seed", 0, "random seed; the same seed writes the same bytes")
	unpadded := fs.Bool("unpadded-header", false, "write safetensors headers unpadded, as MLX's writer does (data at arbitrary, unaligned offsets)")
	out := fs.String("out", "", "output directory (created; must be new or empty)")
	dryRun := fs.Bool("dry-run", false, "print the shards and sizes without writing anything")
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "lily synth: "+format+"\n\n", a...)
		fmt.Fprint(stderr, synthUsage, fs.FlagUsages())
		return 2
	}

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, synthUsage, fs.FlagUsages())
			return 0
		}
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	switch {
	case *preset == "":
		return usageErr("--preset is required")
	case *layout == "":
		return usageErr("--layout is required")
	case *out == "" && !*dryRun:
		return usageErr("--out is required")
	}
	cfg, err := synth.Preset(*preset)
	if err != nil {
		return usageErr("--preset: %v", err)
	}
	if fs.Changed("layers") {
		if cfg, err = cfg.WithLayers(*layers); err != nil {
			return usageErr("--layers: %v", err)
		}
		if k := cfg.FullAttentionInterval; k > 0 && *layers < k {
			return usageErr("--layers %d has no gated-attention layer (every %dth layer is one): use at least %d", *layers, k, k)
		}
	}
	l, err := synth.ParseLayout(*layout)
	if err != nil {
		return usageErr("--layout: %v", err)
	}
	plan, err := synth.NewPlan(cfg, l, 0)
	if err != nil {
		fmt.Fprintf(stderr, "lily synth: %v\n", err)
		return 1
	}
	if *dryRun {
		printPlan(stdout, plan)
		return 0
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	if err := synth.Write(ctx, plan, *out, synth.Options{Seed: *seed, Log: stderr, UnpaddedHeaders: *unpadded}); err != nil {
		fmt.Fprintf(stderr, "lily synth: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: preset %s, layout %s, %d layers, %d tensors, %d bytes in %d shards, seed %d, %.1fs\n",
		*out, *preset, l, cfg.NumLayers, plan.NumTensors(), plan.TotalBytes(), len(plan.Shards), *seed,
		time.Since(start).Seconds())
	return 0
}

// printPlan lists a plan's shards, tensor counts and data sizes.
func printPlan(w io.Writer, p *synth.Plan) {
	for _, s := range p.Shards {
		fmt.Fprintf(w, "%s  %5d tensors  %14d bytes\n", s.File, len(s.Tensors), s.Bytes())
	}
	fmt.Fprintf(w, "total: layout %s, %d layers, %d tensors, %d bytes in %d shards\n",
		p.Layout, p.Config.NumLayers, p.NumTensors(), p.TotalBytes(), len(p.Shards))
}
