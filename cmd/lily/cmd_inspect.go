package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// inspectReport is `lily inspect --json`: the checkpoint's Stats plus where it was found.
type inspectReport struct {
	Model string `json:"model"`
	checkpoint.Stats
	EOSTokenIDs []int `json:"eos_token_ids"`
}

// cmdInspect describes a checkpoint: layout, quantization, tensor count, parameters and bytes.
func cmdInspect(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("inspect", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	model := addModelFlag(fs)
	asJSON := fs.Bool("json", false, "print a JSON object instead of a table")
	printUsage := func() {
		fmt.Fprintf(fs.Output(), "usage: lily inspect [--model DIR] [--json]\n\n"+
			"Describe a checkpoint: layout (hf or mlx), quantization, tensor count, parameters\n"+
			"(total and active per token), stored bytes and the bytes one decode step reads.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, "inspect", printUsage, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lily inspect: unexpected argument %q\n", fs.Arg(0))
		printUsage()
		return 2
	}
	dir, err := checkpoint.Locate(*model)
	if err != nil {
		fmt.Fprintf(stderr, "lily inspect: %v\n", err)
		return 1
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		fmt.Fprintf(stderr, "lily inspect: %v\n", err)
		return 1
	}
	defer ck.Close()
	rep := inspectReport{Model: dir, Stats: ck.Stats(), EOSTokenIDs: ck.Config.EOSTokenIDs}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "lily inspect: %v\n", err)
			return 1
		}
		return 0
	}
	writeInspectTable(stdout, rep)
	return 0
}

// writeInspectTable prints the short human-readable form.
func writeInspectTable(w io.Writer, r inspectReport) {
	s := r.Stats
	quant := "none (dense)"
	if q := s.Quantization; q != nil {
		quant = fmt.Sprintf("%s %d-bit, group %d", q.Mode, q.Bits, q.GroupSize)
		if q.Overrides > 0 {
			var parts []string
			bits := make([]int, 0, len(q.OverrideBits))
			for b := range q.OverrideBits {
				bits = append(bits, b)
			}
			sort.Ints(bits)
			for _, b := range bits {
				parts = append(parts, fmt.Sprintf("%d at %d-bit", q.OverrideBits[b], b))
			}
			quant += fmt.Sprintf("; %d overrides (%s)", q.Overrides, strings.Join(parts, ", "))
		}
	}
	rows := [][2]string{
		{"model", r.Model},
		{"layout", s.Layout},
		{"quantization", quant},
		{"layers", fmt.Sprintf("%d (%d linear_attention, %d full_attention)", s.Layers, s.LinearAttention, s.FullAttention)},
		{"experts", fmt.Sprintf("%d, top %d per token", s.Experts, s.ExpertsPerToken)},
		{"tensors", fmt.Sprintf("%d in %d file(s), %d skipped (vision/mtp)", s.Tensors, s.Files, s.SkippedTensors)},
		{"params_total", fmt.Sprintf("%d (%s)", s.ParamsTotal, humanCount(s.ParamsTotal))},
		{"params_active", fmt.Sprintf("%d (%s per token)", s.ParamsActive, humanCount(s.ParamsActive))},
		{"bytes_total", fmt.Sprintf("%d (%.2f GiB)", s.BytesTotal, float64(s.BytesTotal)/(1<<30))},
		{"decode_bytes", fmt.Sprintf("%d per token (%.2f GiB)", s.DecodeBytesPerToken, float64(s.DecodeBytesPerToken)/(1<<30))},
		{"decode_parts", fmt.Sprintf("deltanet %d, attention %d, moe %d, lm_head %d (the matrices of decode_bytes by part)",
			s.DecodeParts.DeltaNet, s.DecodeParts.Attention, s.DecodeParts.MoE, s.DecodeParts.LMHead)},
		{"state_bytes", fmt.Sprintf("%d per token (float32 DeltaNet state, read and written)", s.StateBytesPerToken)},
		{"kv_bytes", fmt.Sprintf("%d per cached position (float32 K and V, read each step; fast holds fp16: half)", s.KVBytesPerPosition)},
	}
	for _, row := range rows {
		fmt.Fprintf(w, "%-14s %s\n", row[0], row[1])
	}
}

// humanCount writes n with the largest unit of B (10⁹), M or K that keeps it at least 1.
func humanCount[T ~int | ~int64](n T) string {
	v := float64(n)
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2f B", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.2f K", v/1e3)
	}
	return fmt.Sprintf("%d", n)
}
