package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lily-engine/lily/internal/engine"
)

// runResult is the --json output of lily run.
type runResult struct {
	PromptIDs   []int32          `json:"prompt_ids"`
	TokenIDs    []int32          `json:"token_ids"`
	Text        string           `json:"text"`
	Logprobs    []float64        `json:"logprobs"`
	TopLogprobs [][]tokenLogprob `json:"top_logprobs"`
}

type tokenLogprob struct {
	ID      int32   `json:"id"`
	Logprob float64 `json:"logprob"`
}

// cmdRun generates greedily from a prompt: lily run --model DIR --backend ref (--prompt TEXT [--chat]
// | --prompt-ids 1,2,3) [--max-tokens N] [--logprobs K] [--json].
func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	mf := addModelFlags(fs, "backend: fast or ref (the slow oracle)", defaultDeviceHelp)
	prompt := addPromptFlags(fs)
	chat := fs.Bool("chat", false, "render --prompt as one user turn of the chat template")
	maxTokens := fs.Int("max-tokens", 64, "most tokens to generate")
	topK := fs.Int("logprobs", 0, "also report the K most likely tokens at every step")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	printUsage := func() {
		fmt.Fprintln(fs.Output(), "usage: lily run "+modelUsage("fast|ref")+" (--prompt TEXT [--chat] | --prompt-ids 1,2,3) [--max-tokens N] [--logprobs K] [--json]")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, "run", printUsage, stdout, stderr); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "lily run: "+format+"\n", a...)
		return 2
	}
	promptErr := prompt.check()
	spec, specErr := mf.single()
	switch {
	case fs.NArg() > 0:
		return usageErr("unexpected arguments %q", fs.Args())
	case promptErr != nil:
		return usageErr("%v", promptErr)
	case *chat && !prompt.isText():
		return usageErr("--chat needs --prompt")
	case *maxTokens < 0 || *topK < 0:
		return usageErr("--max-tokens and --logprobs must be ≥ 0")
	case specErr != nil:
		return usageErr("%v", specErr)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "lily run: %v\n", err)
		return 1
	}
	l, err := openBackend(*mf.dir, spec)
	if err != nil {
		return fail(err)
	}
	defer l.close()
	ids, err := prompt.tokens(l.dir, *chat)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := generate(ctx, l.backend, ids, *maxTokens, *topK, l.ck.Config.EOSTokenIDs)
	if err != nil {
		return fail(err)
	}
	if res.Text, err = detokenize(l.dir, res.TokenIDs); err != nil {
		fmt.Fprintf(stderr, "lily run: text left empty: %v\n", err)
	}
	if finiteLogprobs(res) {
		fmt.Fprintf(stderr, "lily run: warning: the model produced non-finite log-probabilities, shown as %g\n", engine.LogprobFloor)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(res); err != nil {
			return fail(err)
		}
		return 0
	}
	if res.Text != "" {
		fmt.Fprintln(stdout, res.Text)
	} else {
		fmt.Fprintln(stdout, joinIDs(res.TokenIDs))
	}
	return 0
}

// generate runs a greedy engine.Generate on ids: up to maxTokens tokens (fewer where the backend's
// context ends first), stopping after a token in eos (which is kept in the result). For every
// generated token it records its log-probability and, when topK > 0, the topK most likely tokens.
func generate(ctx context.Context, b engine.Backend, ids []int32, maxTokens, topK int, eos []int) (*runResult, error) {
	res := &runResult{PromptIDs: ids, TokenIDs: []int32{}, Logprobs: []float64{}, TopLogprobs: [][]tokenLogprob{}}
	if len(ids) == 0 {
		return nil, errors.New("empty prompt")
	}
	r := &engine.Request{Prompt: ids, MaxTokens: min(maxTokens, max(b.MaxContext()-len(ids), 0)),
		Logprobs: true, TopLogprobs: topK}
	for _, id := range eos {
		r.StopIDs = append(r.StopIDs, int32(id))
	}
	e := engine.New(b)
	defer e.Close()
	if err := e.Check(r, 0); err != nil {
		return nil, err
	}
	_, err := e.Generate(ctx, r, func(st engine.Step) error {
		if st.Token == nil {
			return nil
		}
		res.TokenIDs = append(res.TokenIDs, st.Token.ID)
		res.Logprobs = append(res.Logprobs, st.Token.Logprob)
		if topK > 0 {
			top := make([]tokenLogprob, len(st.Token.Top))
			for i, t := range st.Token.Top {
				top[i] = tokenLogprob{ID: t.ID, Logprob: t.Logprob}
			}
			res.TopLogprobs = append(res.TopLogprobs, top)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func joinIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, " ")
}
