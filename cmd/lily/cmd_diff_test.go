package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/diff"
	"github.com/lily-engine/lily/internal/engine"
	"github.com/lily-engine/lily/internal/trace"
	"github.com/lily-engine/lily/internal/trace/tracetest"
)

var diffModel = filepath.Join("..", "..", "fixtures", "models", "tiny-a", "mlx")

// TestDiffFastPasses runs lily diff on fast (prefill and three decode steps): every point within
// budget, exit 0, the table and the JSON report, and the dump of both backends.
func TestDiffFastPasses(t *testing.T) {
	dump := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"--model", diffModel, "--backend", "fast", "--against", "ref", "--prompt-ids", "9,1000,42,7,3000,15", "--decode", "3"}
	if rc := runDiff(args, &out, &errb, nil); rc != 0 {
		t.Fatalf("rc %d\n%s%s", rc, out.String(), errb.String())
	}
	for _, want := range []string{"L3.attention.out", "L0.deltanet.out", "L7.router", "logits", "every point within its budget"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if rc := runDiff(append(args, "--json", "--dump", dump), &out, &errb, nil); rc != 0 {
		t.Fatalf("--json rc %d: %s", rc, errb.String())
	}
	var rep diff.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	// 6 prompt + 3 decode positions: every per-position point at all 9.
	n := 0
	for _, r := range rep.Rows {
		if r.Point == "L5.moe.resid" {
			n++
		}
	}
	if !rep.Pass || n != 9 || len(rep.Decoded) != 3 {
		t.Errorf("pass %v, %d rows of L5.moe.resid (want 9), %d decoded", rep.Pass, n, len(rep.Decoded))
	}
	for _, f := range []string{"ref.safetensors", "fast.safetensors"} {
		if st, err := os.Stat(filepath.Join(dump, f)); err != nil || st.Size() == 0 {
			t.Errorf("dump %s: %v", f, err)
		}
	}
}

// TestDiffNamesInjectedError injects 1e-3 of the row's scale into L4's DeltaNet output at the
// second decode step: lily diff exits 1 and names that point and position first.
func TestDiffNamesInjectedError(t *testing.T) {
	fault := tracetest.Fault{P: trace.At(4, trace.DeltaNetOut), Pos: 7, Rel: 1e-3}
	wrap := func(b engine.Backend) engine.Backend { return tracetest.Inject(b, fault) }
	var out, errb bytes.Buffer
	args := []string{"--model", diffModel, "--prompt-ids", "9,1000,42,7,3000,15", "--decode", "3"}
	if rc := runDiff(args, &out, &errb, wrap); rc != 1 {
		t.Fatalf("rc %d, want 1\n%s%s", rc, out.String(), errb.String())
	}
	if want := "first divergence: L4.deltanet.out at position 7 (decode 2)"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
	t.Log(out.String())
}

func TestDiffUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", diffModel}, "exactly one of --prompt and --prompt-ids"},
		{[]string{"--model", diffModel, "--prompt-ids", "1", "--against", "fast"}, "--against must be ref"},
		{[]string{"--model", diffModel, "--prompt-ids", "1", "--backend", "cuda"}, "unknown --backend"},
		{[]string{"--model", diffModel, "--prompt-ids", "1", "--backend", "metal", "--device", "cpu"}, "runs on device metal"},
		{[]string{"--model", diffModel, "--prompt-ids", "1,,2"}, "--prompt-ids"},
		{[]string{"--model", diffModel, "--prompt-ids", "1", "--decode", "-1"}, "--decode must be ≥ 0"},
	} {
		var out, errb bytes.Buffer
		rc := runDiff(c.args, &out, &errb, nil)
		if rc != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: rc %d, stderr %q, want 2 and %q", c.args, rc, errb.String(), c.want)
		}
	}
	var out, errb bytes.Buffer
	if rc := runDiff([]string{"--model", diffModel, "--prompt-ids", "999999"}, &out, &errb, nil); rc != 1 || !strings.Contains(errb.String(), "999999") {
		t.Errorf("out-of-vocabulary id: rc %d, stderr %q", rc, errb.String())
	}
}

// TestDiffMetalEmuPasses runs lily diff --backend metal-emu (the Metal engine on the CPU emulator):
// every point within budget, prefill and a decode step.
func TestDiffMetalEmuPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels for the CPU emulator with g++ (~15 s); skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the Metal kernel emulator needs g++, which is not installed")
	}
	var out, errb bytes.Buffer
	args := []string{"--model", diffModel, "--backend", "metal-emu", "--prompt-ids", "9,1000,42,7,3000,15", "--decode", "2"}
	if rc := runDiff(args, &out, &errb, nil); rc != 0 {
		t.Fatalf("rc %d\n%s%s", rc, out.String(), errb.String())
	}
	if want := "metal-emu against ref"; !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "every point within its budget") {
		t.Errorf("report:\n%s", out.String())
	}
}
