package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/fidelity"
)

// cmdEval is the published quality check: lily eval --model DIR --backend B --against B2
// [--plan prefill|decode] [--positions N] [--seed S] [--json]. Both backends are teacher-forced on
// the same tokens, the one under test through the plan asked for (the sequence as one prompt, or
// one decoded token at a time), the other as one prompt; it reports top-1 agreement and the
// perplexity of each.
func cmdEval(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("eval", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	mf := addModelFlags(fs, "backend under test: ref or fast", defaultDeviceHelp)
	against := fs.String("against", "ref", "backend to compare with: ref or fast")
	planName := fs.String("plan", "prefill", "how the backend under test runs the sequence: prefill (one prompt) or decode (one token at a time, as generation)")
	positions := fs.Int("positions", 192, "next-token predictions to compare (the sequence has positions+1 tokens)")
	textFile := fs.String("text", "", "file whose text is tokenized as the sequence (default: seeded random token ids)")
	seed := fs.Uint64("seed", 1, "seed of the random token sequence")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	printUsage := func() {
		fmt.Fprintln(fs.Output(), "usage: lily eval "+modelUsage("fast|ref")+" [--against ref|fast] [--plan prefill|decode] [--positions N] [--seed S] [--text FILE] [--json]")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, "eval", printUsage, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 || *positions < 1 {
		fmt.Fprintln(stderr, "lily eval: --positions must be ≥ 1 and no arguments are taken")
		return 2
	}
	plan, err := fidelity.ParsePlan(*planName)
	if err != nil {
		fmt.Fprintf(stderr, "lily eval: --plan: %v\n", err)
		return 2
	}
	spec, err := mf.single()
	if err != nil {
		fmt.Fprintf(stderr, "lily eval: %v\n", err)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "lily eval: %v\n", err)
		return 1
	}
	l, err := openBackend(*mf.dir, spec)
	if err != nil {
		return fail(err)
	}
	defer l.close()
	other, err := buildBackend(l.ck, backendSpec{name: *against})
	if err != nil {
		return fail(err)
	}
	tokens, err := evalTokens(l.dir, *textFile, *positions+1, l.backend.VocabSize(), *seed)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ref, err := fidelity.Score(ctx, other, tokens)
	if err != nil {
		return fail(err)
	}
	got, err := fidelity.ScoreBy(ctx, l.backend, tokens, plan)
	if err != nil {
		return fail(err)
	}
	rep := fidelity.Diff(ref, got)
	if *asJSON {
		out := struct {
			Backend string `json:"backend"`
			Plan    string `json:"plan"`
			Against string `json:"against"`
			*fidelity.Report
		}{spec.name, plan.String(), *against, rep}
		if err := json.NewEncoder(stdout).Encode(out); err != nil {
			return fail(err)
		}
		return 0
	}
	fmt.Fprintf(stdout, "%s (%s plan) against %s, teacher-forced on %d positions\n", spec.name, plan, *against, rep.Positions)
	fmt.Fprintf(stdout, "  top-1 agreement   %.4f (%d near-tie disagreements)\n", rep.Top1Agreement, rep.NearTieDisagreements)
	fmt.Fprintf(stdout, "  perplexity        %s %.4f   %s %.4f   Δ %+.4f%%\n", *against, rep.PPLA, spec.name, rep.PPLB, 100*rep.DeltaPPLRel)
	fmt.Fprintf(stdout, "  |Δ logprob|       mean %.2e   max %.2e\n", rep.MeanAbsDLogp, rep.MaxAbsDLogp)
	return 0
}

// evalTokens is the sequence both backends score: the first n tokens of textFile's text when given,
// else n seeded random ids below vocab.
func evalTokens(dir, textFile string, n, vocab int, seed uint64) ([]int32, error) {
	if textFile != "" {
		text, err := os.ReadFile(textFile)
		if err != nil {
			return nil, err
		}
		tk, err := loadTokenizer(dir)
		if err != nil {
			return nil, err
		}
		ids := tk.Encode(string(text))
		if len(ids) < n {
			return nil, fmt.Errorf("--text %s has %d tokens; --positions needs %d", textFile, len(ids), n)
		}
		return ids[:n], nil
	}
	r := rand.New(rand.NewPCG(seed, 0x65766174))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(vocab))
	}
	return out, nil
}
