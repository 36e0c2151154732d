package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/diff"
	"github.com/lily-engine/lily/internal/engine"
)

// cmdDiff localises a numerical divergence: lily diff --model DIR --backend fast|metal|metal-emu
// [--device D] --against ref (--prompt TEXT | --prompt-ids …) [--decode N] [--json] [--dump DIR].
func cmdDiff(args []string, stdout, stderr io.Writer) int { return runDiff(args, stdout, stderr, nil) }

// runDiff is cmdDiff; wrap, when not nil, wraps the backend under test (the tests' error
// injection, internal/trace/tracetest).
func runDiff(args []string, stdout, stderr io.Writer, wrap func(engine.Backend) engine.Backend) int {
	fs := pflag.NewFlagSet("diff", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	mf := addModelFlags(fs, "backend under test: fast, metal or metal-emu (the fast backend on that device)", "cpu, or what --backend names")
	against := fs.String("against", "ref", "the oracle: ref")
	prompt := addPromptFlags(fs)
	decode := fs.Int("decode", 4, "teacher-forced decode steps after the prefill (the reference's greedy tokens)")
	asJSON := fs.Bool("json", false, "print the report as JSON (every point at every position)")
	dump := fs.String("dump", "", "write both backends' intermediates to DIR/<backend>.safetensors")
	printUsage := func() {
		fmt.Fprintln(fs.Output(), "usage: lily diff "+modelUsage("fast|metal|metal-emu")+" [--against ref] (--prompt TEXT | --prompt-ids 1,2,3) [--decode N] [--json] [--dump DIR]")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, "diff", printUsage, stdout, stderr); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "lily diff: "+format+"\n", a...)
		return 2
	}
	spec := mf.spec
	spec.name = "fast"
	backend := mf.backend
	switch *backend {
	case "fast":
		if spec.device == "" {
			spec.device = "cpu"
		}
	case "metal", "metal-emu":
		if spec.device != "" && spec.device != *backend {
			return usageErr("--backend %s runs on device %s (got --device %s)", *backend, *backend, spec.device)
		}
		spec.device = *backend
	default:
		return usageErr("unknown --backend %q (want fast, metal or metal-emu)", *backend)
	}
	promptErr := prompt.check()
	switch {
	case fs.NArg() > 0:
		return usageErr("unexpected arguments %q", fs.Args())
	case *against != "ref":
		return usageErr("--against must be ref, the oracle (got %q)", *against)
	case promptErr != nil:
		return usageErr("%v", promptErr)
	case *decode < 0:
		return usageErr("--decode must be ≥ 0")
	}
	if err := spec.check(); err != nil {
		return usageErr("%v", err)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "lily diff: %v\n", err)
		return 1
	}
	// The kernels are what diff checks: fast's fp16 KV cache rounds K and V by 2^-11, which the
	// DeltaNet layers after an attention layer amplify past the first-order budgets; its own
	// budget is conformance's whole-model one.
	spec.kvF32 = true
	l, err := openBackend(*mf.dir, spec)
	if err != nil {
		return fail(err)
	}
	defer l.close()
	oracle, err := buildBackend(l.ck, backendSpec{name: "ref"})
	if err != nil {
		return fail(err)
	}
	defer oracle.Close()
	ids, err := prompt.tokens(l.dir, false)
	if err != nil {
		return fail(err)
	}
	got := l.backend
	if wrap != nil {
		got = wrap(got)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, tg, tw, err := diff.Run(ctx, got, oracle, ids, *decode)
	if err != nil {
		return fail(err)
	}
	if *dump != "" {
		for _, tr := range []*diff.Trace{tw, tg} {
			path, err := diff.Dump(*dump, tr, rep.Prompt, rep.Decoded)
			if err != nil {
				return fail(err)
			}
			fmt.Fprintf(stderr, "lily diff: wrote %s\n", path)
		}
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return fail(err)
		}
	} else if err := printDiff(stdout, rep); err != nil {
		return fail(err)
	}
	if !rep.Pass {
		return 1
	}
	return 0
}

// printDiff prints the report's table (each point's worst position), the router flips and the
// verdict.
func printDiff(w io.Writer, r *diff.Report) error {
	fmt.Fprintf(w, "%s against %s: %d prompt tokens, %d decode steps teacher-forced on %s's greedy tokens\n",
		r.Backend, r.Against, len(r.Prompt), len(r.Decoded), r.Against)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "point\tstep\tposition\tmax |Δ|\tmax rel\tbudget\t")
	for _, row := range r.Worst() {
		verdict := "ok"
		if !row.Within {
			verdict = "OUT"
		}
		if row.Note != "" {
			verdict += "  " + row.Note
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3g\t%.3g\t%.3g\t%s\n", row.Point, diff.StepName(row.Step), row.Position, row.MaxAbs, row.MaxRel, row.Budget, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range r.Flips {
		kind := "flip"
		if f.NearTie {
			kind = "near tie"
		}
		fmt.Fprintf(w, "router L%d position %d: %s — %s chose %v, %s %v; margin between the 8th and 9th logits %.3g, max |Δ logit| %.3g\n",
			f.Layer, f.Position, kind, r.Backend, f.OnlyGot, r.Against, f.OnlyRef, f.Margin, f.MaxDelta)
	}
	for _, p := range r.Missing {
		fmt.Fprintf(w, "point %s: reported by only one backend\n", p)
	}
	if f := r.First; f != nil {
		_, err := fmt.Fprintf(w, "first divergence: %s at position %d (%s): max rel %.3g > budget %.3g\n",
			f.Point, f.Position, diff.StepName(f.Step), f.MaxRel, f.Budget)
		return err
	}
	if len(r.Missing) > 0 {
		_, err := fmt.Fprintln(w, "FAIL: the backends report different points")
		return err
	}
	_, err := fmt.Fprintln(w, "every point within its budget")
	return err
}
