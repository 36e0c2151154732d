package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/bench"
	"github.com/lily-engine/lily/metal"
)

// cmdBench measures prefill and decode at batch 1 by the published protocol:
// lily bench --model DIR --backend ref|fast [--prompt-lengths L1,L2,…] [--decode-tokens N] [--json].
func cmdBench(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "checkpoint directory (default: the MLX checkpoint in the Hugging Face cache)")
	spec := backendSpec{}
	fs.StringVar(&spec.name, "backend", "fast", "backend: ref or fast")
	addFastFlags(fs, &spec)
	lengths := fs.String("prompt-lengths", joinInts(bench.DefaultPromptLengths), "comma-separated prompt lengths")
	decode := fs.Int("decode-tokens", 16, "tokens decoded after each prompt")
	ctxSize := fs.Int("ctx-size", 0, "session context limit (default: the longest prompt plus the decode tokens)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the measured runs to this file (for go tool pprof)")
	gpuPeak := fs.Float64("gpu-tflops", metal.M5Max().Peak/1e12, "on a Metal device: the compute peak the performance model assumes (TFLOP/s)")
	printUsage := func() {
		fmt.Fprintln(fs.Output(), "usage: lily bench --model DIR --backend ref|fast [--prompt-lengths 256,512,…] [--decode-tokens N] [--json]")
		fs.PrintDefaults()
	}
	fs.Usage = func() {} // pflag would print it on stderr before returning ErrHelp; we print it once
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			printUsage()
			return 0
		}
		fmt.Fprintf(stderr, "lily bench: %v\n", err)
		printUsage()
		return 2
	}
	ls, err := parseInts(*lengths)
	if err != nil || fs.NArg() > 0 || *decode < 1 {
		fmt.Fprintf(stderr, "lily bench: bad flags (prompt lengths %q, decode tokens %d)\n", *lengths, *decode)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "lily bench: %v\n", err)
		return 1
	}
	longest := 0
	for _, n := range ls {
		longest = max(longest, n)
	}
	if *ctxSize == 0 {
		*ctxSize = longest + *decode
	}
	spec.ctxSize = *ctxSize
	l, err := openBackend(*model, spec)
	if err != nil {
		return fail(err)
	}
	defer l.close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	mach := measureMachine()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(fmt.Errorf("cpu profile: %w", err))
		}
		defer pprof.StopCPUProfile()
	}
	rs, err := bench.Run(ctx, l.backend, bench.Options{PromptLengths: ls, DecodeTokens: *decode, Seed: 1,
		Progress: func(n int) { fmt.Fprintf(stderr, "lily bench: %s, %d-token prompt…\n", spec.name, n) },
		Resident: residentBytes})
	if err != nil {
		return fail(err)
	}
	st := l.ck.Stats()
	// A prompt token costs 2 FLOPs per active matrix parameter, except lm_head, which prefill applies
	// to the last position only.
	lmHead := float64(l.ck.Config.VocabSize) * float64(l.ck.Config.HiddenSize)
	rep := bench.Summarize(spec.name, rs, st.DecodeBytesPerToken, 2*(float64(st.ParamsActive)-lmHead), mach.memReadGBs, mach.peakGFLOPs)
	rep.WeightsBytes = st.BytesTotal
	if gpu, ok := l.backend.(interface{ Device() metal.Device }); ok {
		bw, err := metal.MeasureCopyBandwidth(gpu.Device())
		if err != nil {
			return fail(err)
		}
		cfg := l.ck.Config
		err = rep.AgainstModel(bw/1e9, func(n int) (float64, float64, error) { return metal.Expected(cfg, bw, *gpuPeak*1e12, n) })
		if err != nil {
			return fail(err)
		}
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return fail(err)
		}
		return 0
	}
	fmt.Fprintf(stdout, "backend %s · %.2f GB read per decoded token · %.1f GFLOP per prompt token\n",
		rep.Backend, float64(rep.BytesPerToken)/1e9, rep.FlopsPerToken/1e9)
	fmt.Fprintf(stdout, "machine: streaming read %.1f GB/s · kernel peak %.1f GFLOP/s\n", rep.MemReadGBs, rep.PeakGFLOPs)
	fmt.Fprintf(stdout, "%10s %14s %14s %18s\n", "prompt", "prefill tok/s", "decode tok/s", "resident−weights")
	for _, r := range rep.Results {
		fmt.Fprintf(stdout, "%10d %14.2f %14.3f", r.PromptTokens, r.PrefillTokS, r.DecodeTokS)
		if r.ResidentBytes > 0 {
			fmt.Fprintf(stdout, " %15.2f GB", float64(r.ResidentBytes-rep.WeightsBytes)/1e9)
		} else {
			fmt.Fprintf(stdout, " %18s", "unknown")
		}
		if rep.DeviceCopyGBs > 0 {
			fmt.Fprintf(stdout, "   of model: prefill %.0f%% decode %.0f%%", 100*r.PrefillOfModelFrac, 100*r.DecodeOfModelFrac)
		}
		fmt.Fprintln(stdout)
	}
	if rep.DeviceCopyGBs > 0 {
		fmt.Fprintf(stdout, "device copy bandwidth %.1f GB/s; model fractions use it and %.0f TFLOP/s\n", rep.DeviceCopyGBs, *gpuPeak)
	}
	fmt.Fprintf(stdout, "decode at %d tokens: %.1f%% of the bandwidth roofline; prefill near 1K: %.1f%% of the compute peak\n",
		rep.Results[0].PromptTokens, 100*rep.DecodeRooflineFrac, 100*rep.PrefillComputeFrac)
	return 0
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad length %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
