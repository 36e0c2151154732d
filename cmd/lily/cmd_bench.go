package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/bench"
	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal/perfmodel"
)

// cmdBench measures prefill and decode at batch 1 by the published protocol:
// lily bench --model DIR --backend ref|fast[,…] [--prompt-lengths L1,L2,…] [--decode-tokens N]
// [--repetitions N] [--warmup=false] [--json].
// Several backends are measured in turn, each closed before the next opens, and each later one is
// compared with the first; the machine is measured before and after them, the better figures kept.
func cmdBench(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	mf := addModelFlags(fs, "backends to measure in turn, comma-separated: ref, fast or both (ratios are against the first)", defaultDeviceHelp)
	lengths := fs.String("prompt-lengths", joinInts(bench.DefaultPromptLengths), "comma-separated prompt lengths")
	decode := fs.Int("decode-tokens", 16, "tokens decoded after each prompt")
	repetitions := fs.Int("repetitions", 1, "measurements of each prompt length (the report gives their mean and standard deviation)")
	warmUp := fs.Bool("warmup", true, "run each prompt length once, uncounted, before measuring it, as llama-bench does (--warmup=false: measure from a cold start)")
	ctxSize := fs.Int("ctx-size", 0, "session context limit (default: the longest prompt plus the decode tokens)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	phases := fs.Bool("phases", false, "after the measured runs, decode --decode-tokens more tokens after the shortest prompt with a timing observer attached and print where a decode step's time goes, phase by phase, with each phase's traffic against the read")
	profPath := fs.String("cpuprofile", "", "write a Go CPU profile of the measured runs to this file (for go tool pprof)")
	gpuPeak := fs.Float64("gpu-tflops", perfmodel.M5Max().Peak/1e12, "on a Metal device: the compute peak the performance model assumes (TFLOP/s)")
	printUsage := func() {
		fmt.Fprintln(fs.Output(), "usage: lily bench "+modelUsage("ref|fast|ref,fast")+" [--prompt-lengths 256,512,…] [--decode-tokens N] [--repetitions N] [--warmup=false] [--phases] [--ctx-size N] [--gpu-tflops T] [--cpuprofile FILE] [--json]")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, "bench", printUsage, stdout, stderr); done {
		return code
	}
	ls, err := parseInts(*lengths)
	if err != nil || fs.NArg() > 0 || *decode < 1 || *repetitions < 1 {
		fmt.Fprintf(stderr, "lily bench: bad flags (prompt lengths %q, decode tokens %d, repetitions %d)\n", *lengths, *decode, *repetitions)
		return 2
	}
	longest := 0
	for _, n := range ls {
		longest = max(longest, n)
	}
	if *ctxSize == 0 {
		*ctxSize = longest + *decode
	}
	spec := mf.spec
	spec.ctxSize = *ctxSize
	specs, err := benchSpecs(*mf.backend, spec)
	if err != nil {
		fmt.Fprintf(stderr, "lily bench: %v\n", err)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "lily bench: %v\n", err)
		return 1
	}
	dir, err := checkpoint.Locate(*mf.dir)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	run := benchRun{dir: dir, mach: measureMachine(), gpuPeak: *gpuPeak, progress: stderr, phases: *phases,
		opt: bench.Options{PromptLengths: ls, DecodeTokens: *decode, Seed: 1, Resident: residentBytes,
			Repetitions: *repetitions, WarmUp: *warmUp}}
	prof := &cpuProfile{path: *profPath}
	defer prof.stop()
	reps := make([]bench.Report, 0, len(specs))
	for _, s := range specs {
		// Hand what ran before back to the OS (the machine measurement's buffer, the
		// previous backend's heap), so that it neither adds to this backend's peak memory nor
		// counts in its resident figures.
		debug.FreeOSMemory()
		rep, err := run.measure(ctx, s, prof.start)
		if err != nil {
			return fail(err)
		}
		reps = append(reps, rep)
	}
	if err := prof.stop(); err != nil {
		return fail(err)
	}
	// Measure the machine again and hold every backend to the better figures: a measurement taken
	// while the OS was still busy (compacting huge pages after the checkpoint was read, say) reads
	// low, and a low bandwidth would flatter the roofline fraction.
	debug.FreeOSMemory()
	best := run.mach.best(measureMachine()).withReads(reps)
	for i := range reps {
		reps[i].SetMachine(best.memReadGBs, best.peakGFLOPs)
	}
	if *asJSON {
		if err := writeBenchJSON(stdout, reps); err != nil {
			return fail(err)
		}
		return 0
	}
	printBench(stdout, reps, *gpuPeak)
	return 0
}

// benchSpecs turns --backend's comma-separated list into one spec per backend, in the order given,
// from base (the other flags). The fast backend's own flags (--device, --int16-activations) go to
// fast alone when the list holds it, so that ref can be measured beside it; with ref alone they
// stay on ref, where check rejects what ref cannot use.
func benchSpecs(list string, base backendSpec) ([]backendSpec, error) {
	var names []string
	for _, f := range strings.Split(list, ",") {
		name := strings.TrimSpace(f)
		if name == "" {
			return nil, fmt.Errorf("--backend %q: empty backend name", list)
		}
		if err := (backendSpec{name: name}).check(); err != nil {
			return nil, fmt.Errorf("--backend: %w", err)
		}
		if slices.Contains(names, name) {
			return nil, fmt.Errorf("--backend: backend %q listed twice", name)
		}
		names = append(names, name)
	}
	withFast := slices.Contains(names, "fast")
	specs := make([]backendSpec, len(names))
	for i, name := range names {
		s := base
		s.name = name
		if name != "fast" && withFast {
			s.device, s.int16 = "", false
		}
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("backend %s: %w", name, err)
		}
		specs[i] = s
	}
	return specs, nil
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
