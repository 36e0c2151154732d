package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// promptFlags are --prompt and --prompt-ids, which lily run and lily diff take alike: exactly one
// of them, the text encoded with the checkpoint's tokenizer once it is open, the ids as given.
type promptFlags struct {
	fs   *pflag.FlagSet
	text *string
	ids  *string
	ok   []int32 // the parsed --prompt-ids (after check)
}

// addPromptFlags defines --prompt and --prompt-ids on fs.
func addPromptFlags(fs *pflag.FlagSet) *promptFlags {
	return &promptFlags{fs: fs,
		text: fs.String("prompt", "", "prompt text"),
		ids:  fs.String("prompt-ids", "", "prompt as comma-separated token ids"),
	}
}

// check is the flags' usage error after parsing, if any: not exactly one given, or ids that do
// not parse.
func (p *promptFlags) check() error {
	if p.fs.Changed("prompt") == p.fs.Changed("prompt-ids") {
		return errors.New("give exactly one of --prompt and --prompt-ids")
	}
	if p.fs.Changed("prompt-ids") {
		ids, err := parseIDs(*p.ids)
		if err != nil {
			return fmt.Errorf("--prompt-ids: %w", err)
		}
		p.ok = ids
	}
	return nil
}

// isText reports whether the prompt was given as text (--prompt).
func (p *promptFlags) isText() bool { return p.fs.Changed("prompt") }

// tokens is the prompt as ids: --prompt-ids as given, or --prompt encoded with the tokenizer of
// the checkpoint in dir (with asChat, rendered as one user turn of the chat template first).
func (p *promptFlags) tokens(dir string, asChat bool) ([]int32, error) {
	if !p.isText() {
		return p.ok, nil
	}
	return encodePrompt(dir, *p.text, asChat)
}

// parseIDs parses "1,2,3" (spaces allowed) into token ids.
func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("id %d is empty (\"1,,2\" or a trailing comma?)", i+1)
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q is not a token id", f)
		}
		ids = append(ids, int32(v))
	}
	if len(ids) == 0 {
		return nil, errors.New("no ids")
	}
	return ids, nil
}
