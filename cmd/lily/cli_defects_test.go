package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lily-engine/lily/fixtures"
	"github.com/lily-engine/lily/internal/checkpoint"
)

// The CLI defects of issue 18, one regression test each.

func TestServeAndRunDefaultToFast(t *testing.T) {
	for _, cmd := range []string{"serve", "run"} {
		_, stdout, stderr := runLily(cmd, "--help")
		out := stdout + stderr
		if !regexp.MustCompile(`--backend string[^\n]*\(default "fast"\)`).MatchString(out) {
			t.Errorf("lily %s --help: the backend default is not fast:\n%s", cmd, out)
		}
	}
}

// TestTokenizeFindsTheCachedModel: --model may be omitted, as everywhere.
func TestTokenizeFindsTheCachedModel(t *testing.T) {
	hub := t.TempDir()
	t.Setenv("HF_HUB_CACHE", hub)
	if code, _, e := runLily("tokenize", "--text", "x"); code != 1 || !strings.Contains(e, "hf download") {
		t.Fatalf("empty cache: exit %d, %q", code, e)
	}
	snap := filepath.Join(hub, "models--"+strings.ReplaceAll(checkpoint.DefaultRepo, "/", "--"), "snapshots", "abc")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"config.json": []byte("{}"), "tokenizer.json": fixtures.TinyTokenizerJSON} {
		if err := os.WriteFile(filepath.Join(snap, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, e := runLily("tokenize", "--text", "hello"); code != 0 || !strings.Contains(out, `"ids":[`) {
		t.Fatalf("cached model: exit %d, %q %q", code, out, e)
	}
}

func TestInspectSmallParamCounts(t *testing.T) {
	code, out, e := runLily("inspect", "--model", benchFixture)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if strings.Contains(out, "(0.00 B") || !regexp.MustCompile(`params_total\s+\d+ \(\d+\.\d\d [KM]\)`).MatchString(out) {
		t.Fatalf("params of a small model:\n%s", out)
	}
}

// TestBenchNamesThePrefillLength: the prefill fraction names a length that ran.
func TestBenchNamesThePrefillLength(t *testing.T) {
	code, out, e := runLily("bench", "--model", benchFixture, "--backend", "ref", "--prompt-lengths", "8,16", "--decode-tokens", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if strings.Contains(out, "near 1K") {
		t.Fatalf("reports a 1K prefill that did not run:\n%s", out)
	}
	m := regexp.MustCompile(`prefill at (\d+) tokens`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no prefill length in:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n != 16 {
		t.Fatalf("prefill at %d tokens; the nearest length to 1K that ran is 16", n)
	}
}

func TestSynthRefusesNoAttentionLayer(t *testing.T) {
	code, _, e := runLily("synth", "--preset", "tiny", "--layout", "mlx", "--layers", "2", "--out", t.TempDir())
	if code != 2 || !strings.Contains(e, "no gated-attention layer") {
		t.Fatalf("--layers 2: exit %d, %q", code, e)
	}
}

func TestEvalText(t *testing.T) {
	text := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, e := runLily("eval", "--model", benchFixture, "--backend", "fast", "--against", "ref", "--positions", "8", "--text", text, "--json")
	if code != 0 || !strings.Contains(out, `"positions":8`) {
		t.Fatalf("eval --text: exit %d, %q %q", code, out, e)
	}
	code, _, e = runLily("eval", "--model", benchFixture, "--positions", "5000", "--text", text)
	if code != 1 || !strings.Contains(e, "tokens; --positions needs") {
		t.Fatalf("short text: exit %d, %q", code, e)
	}
}

// TestEvalPlan: --plan picks how the backend under test runs the sequence, the report names it, and
// an unknown plan is refused before anything is loaded.
func TestEvalPlan(t *testing.T) {
	for _, plan := range []string{"prefill", "decode"} {
		code, out, e := runLily("eval", "--model", benchFixture, "--backend", "fast", "--against", "ref", "--positions", "12", "--plan", plan, "--json")
		var rep struct {
			Plan string  `json:"plan"`
			Top1 float64 `json:"top1_agreement"`
			N    int     `json:"positions"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Plan != plan || rep.N != 12 || rep.Top1 < 0.99 {
			t.Fatalf("--plan %s: exit %d, %q %q", plan, code, out, e)
		}
	}
	code, out, _ := runLily("eval", "--model", benchFixture, "--positions", "4", "--plan", "decode")
	if code != 0 || !strings.Contains(out, "fast (decode plan) against ref") {
		t.Fatalf("--plan decode, text report: exit %d, %q", code, out)
	}
	code, _, e := runLily("eval", "--model", benchFixture, "--plan", "chunked")
	if code != 2 || !strings.Contains(e, `unknown plan "chunked"`) {
		t.Fatalf("--plan chunked: exit %d, %q", code, e)
	}
}
