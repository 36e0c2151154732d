package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestModelFlagsHelp: every command that builds a backend lists --model, --backend (default fast),
// --device and --int16-activations in its --help, both in the usage line and in the flag list,
// and inspect lists --model with the same help text.
func TestModelFlagsHelp(t *testing.T) {
	var modelLine string
	for _, cmd := range []string{"bench", "eval", "run", "diff", "serve", "inspect"} {
		code, stdout, stderr := runLily(cmd, "--help")
		if code != 0 {
			t.Fatalf("lily %s --help: exit %d\n%s", cmd, code, stderr)
		}
		m := regexp.MustCompile(`(?m)^\s+--model string\s+(.*)$`).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("lily %s --help: no --model:\n%s", cmd, stdout)
		}
		if modelLine == "" {
			modelLine = m[1]
		} else if m[1] != modelLine {
			t.Errorf("lily %s --help: --model says %q, bench says %q", cmd, m[1], modelLine)
		}
		if cmd == "inspect" {
			continue
		}
		usage, _, _ := strings.Cut(stdout, "\n")
		for _, f := range []string{"--model DIR", "--backend ", "--device D", "--int16-activations"} {
			if !strings.Contains(usage, f) {
				t.Errorf("lily %s --help: the usage line lacks %s: %q", cmd, f, usage)
			}
		}
		for _, re := range []string{`--backend string[^\n]*\(default "fast"\)`, `--device string`, `--int16-activations`} {
			if !regexp.MustCompile(re).MatchString(stdout) {
				t.Errorf("lily %s --help: no flag matching %s:\n%s", cmd, re, stdout)
			}
		}
	}
}

// TestModelFlagsCheckedFirst: an unknown --backend or --device is a usage error (exit 2) in every
// command that builds a backend, found before the checkpoint is looked for.
func TestModelFlagsCheckedFirst(t *testing.T) {
	t.Setenv("HF_HUB_CACHE", t.TempDir()) // an empty cache: no real checkpoint to find
	for _, cmd := range []string{"bench", "eval", "run", "diff", "serve"} {
		extra := []string{}
		if cmd == "run" || cmd == "diff" {
			extra = []string{"--prompt-ids", "1"}
		}
		for _, bad := range [][]string{{"--backend", "gpu"}, {"--device", "tpu"}} {
			args := append(append([]string{cmd, "--model", "/nonexistent/lily"}, extra...), bad...)
			code, _, stderr := runLily(args...)
			if code != 2 || !strings.Contains(stderr, bad[1]) {
				t.Errorf("lily %v: exit %d, stderr %q; want 2 naming %s", args, code, stderr, bad[1])
			}
		}
	}
}
