package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lily-engine/lily/fixtures"
)

// modelWithFIFO copies the tiny MLX fixture into a temporary directory with name replaced by a
// named pipe that no one writes.
func modelWithFIFO(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", "..", "fixtures", "models", "tiny-a", "mlx")
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == name {
			continue
		}
		// Symbolic links: the shards are megabytes, and links are followed as a user's would be.
		if err := os.Symlink(filepath.Join(must(filepath.Abs(src)), e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	return dir
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// exitsWithin runs lily with args and fails the test if it hangs; it returns exit code and stderr.
func exitsWithin(t *testing.T, d time.Duration, args ...string) (int, string) {
	t.Helper()
	type res struct {
		code   int
		stderr string
	}
	done := make(chan res, 1)
	go func() {
		code, _, stderr := runLily(args...)
		done <- res{code, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stderr
	case <-time.After(d):
		t.Fatalf("lily %v hung", args)
		return 0, ""
	}
}

// TestFIFOsAndDevicesRefused: a named pipe as config.json, a shard or tokenizer.json, and a device
// as a --chat FILE end in a clear error, not a hang or an endless read.
func TestFIFOsAndDevicesRefused(t *testing.T) {
	for _, c := range []struct {
		file string
		args func(dir string) []string
	}{
		{"config.json", func(dir string) []string { return []string{"inspect", "--model", dir} }},
		{"model-00001-of-00002.safetensors", func(dir string) []string { return []string{"inspect", "--model", dir} }},
		{"tokenizer.json", func(dir string) []string { return []string{"tokenize", "--model", dir, "--text", "hi"} }},
		{"tokenizer.json", func(dir string) []string {
			return []string{"run", "--model", dir, "--prompt", "hi", "--max-tokens", "1"}
		}},
	} {
		dir := modelWithFIFO(t, c.file)
		code, stderr := exitsWithin(t, 20*time.Second, c.args(dir)...)
		if code == 0 || !strings.Contains(stderr, "named pipe") || !strings.Contains(stderr, c.file) {
			t.Errorf("%s as a FIFO, %v: exit %d, %q", c.file, c.args(dir)[0], code, stderr)
		}
	}
	dir := modelWithFIFO(t, "unused")
	code, stderr := exitsWithin(t, 20*time.Second, "tokenize", "--model", dir, "--chat", "/dev/zero")
	if code == 0 || !strings.Contains(stderr, "device") {
		t.Errorf("--chat /dev/zero: exit %d, %q", code, stderr)
	}
}

// TestTokenizerWithoutAddedTokensRefused: a tokenizer.json stripped of its added tokens is refused
// by tokenize, run and serve, naming the missing special tokens.
func TestTokenizerWithoutAddedTokensRefused(t *testing.T) {
	dir := modelWithFIFO(t, "tokenizer.json")
	p := filepath.Join(dir, "tokenizer.json")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(fixtures.TinyTokenizerJSON, &f); err != nil {
		t.Fatal(err)
	}
	f["added_tokens"] = []any{}
	b, _ := json.Marshal(f)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"tokenize", "--model", dir, "--text", "hi"},
		{"run", "--model", dir, "--prompt", "hi", "--max-tokens", "1"},
		{"serve", "--model", dir, "--port", "0"},
	} {
		code, stderr := exitsWithin(t, 60*time.Second, args...)
		if code == 0 || !strings.Contains(stderr, "<|im_end|>") || !strings.Contains(stderr, "tokenizer.json") {
			t.Errorf("%s: exit %d, %q", args[0], code, stderr)
		}
	}
}

// TestChatFileValidatedLikeRequests: lily tokenize --chat applies the server's validation.
func TestChatFileValidatedLikeRequests(t *testing.T) {
	dir := modelWithFIFO(t, "unused")
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"enable_thinking":"yes"}}`: "enable_thinking: must be a boolean",
		`{"messages":[{"role":"user","content":"x"}],"tools":[1,null,"s"]}`:                             "tools[0]",
		`{"messages":[{"content":"x"}]}`:                                                                "messages[0].role",
	} {
		p := filepath.Join(t.TempDir(), "chat.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runLily("tokenize", "--model", dir, "--chat", p)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q", body, code, stderr)
		}
	}
}

// TestPromptIDsStrict: an empty id in --prompt-ids is an error, not silently dropped.
func TestPromptIDsStrict(t *testing.T) {
	for _, s := range []string{"1,,2", "1,2,", ",1", ""} {
		if ids, err := parseIDs(s); err == nil {
			t.Errorf("%q: %v", s, ids)
		}
	}
	if ids, err := parseIDs(" 1, 2 "); err != nil || len(ids) != 2 {
		t.Fatalf("%v %v", ids, err)
	}
}
