package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lily-engine/lily/fixtures"
	"github.com/lily-engine/lily/internal/tokenizer"
)

func runLily(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTokenizeText(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), fixtures.TinyTokenizerJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.Parse(fixtures.TinyTokenizerJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"<|im_start|>user\nHello, wörld 123<|im_end|>", ""} {
		code, stdout, stderr := runLily("tokenize", "--model", dir, "--text", text)
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		var got struct{ IDs []int32 }
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.IDs == nil {
			t.Fatalf("stdout %q: %v", stdout, err)
		}
		if want := tk.Encode(text); !slices.Equal(got.IDs, want) {
			t.Errorf("ids %v; the tokenizer gives %v", got.IDs, want)
		}
	}
}

func TestTokenizeErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"--model", dir}, 2, "exactly one of --text and --chat"},
		{[]string{"--model", dir, "--text", "x", "--chat", "f.json"}, 2, "exactly one"},
		{[]string{"--model", dir, "--bogus"}, 2, "unknown flag"},
		{[]string{"--model", dir, "--text", "x", "extra"}, 2, "unexpected argument"},
		{[]string{"--model", dir, "--text", "x"}, 1, "tokenizer.json"},
		{[]string{"--model", dir, "--chat", "f.json"}, 1, "tokenizer.json"},
	}
	for _, c := range cases {
		code, stdout, stderr := runLily(append([]string{"tokenize"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, stdout, stderr, c.code, c.want)
		}
	}
}

func TestTokenizeHelp(t *testing.T) {
	code, stdout, _ := runLily("tokenize", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, flag := range []string{"--model", "--text", "--chat"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("--help does not document %s:\n%s", flag, stdout)
		}
	}
}
