package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/bench"
)

// TestBenchKernelsMetalEmu runs lily bench on the Metal engine over the emulator: the report
// profiles one decode step kernel by kernel (the code path a Mac runs with GPU timestamps) and
// prints each kernel's measured time next to the performance model's.
func TestBenchKernelsMetalEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels for the CPU emulator with g++ (~15 s); skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the Metal kernel emulator needs g++, which is not installed")
	}
	args := []string{"bench", "--model", benchFixture, "--backend", "fast", "--device", "metal-emu",
		"--prompt-lengths", "8", "--decode-tokens", "2", "--warmup=false", "--json"}
	var out, errb bytes.Buffer
	if rc := realMain(args, &out, &errb); rc != 0 {
		t.Fatalf("rc %d\n%s", rc, errb.String())
	}
	var rep bench.Report // one backend: one report object
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Kernels) == 0 {
		t.Fatalf("no kernel rows: %+v", rep)
	}
	seen := map[string]bool{}
	for _, k := range rep.Kernels {
		if k.Dispatches < 1 || k.MeasuredUS <= 0 || k.ModelledUS <= 0 {
			t.Errorf("kernel row %+v: want dispatches, a measured and a modelled time", k)
		}
		seen[k.Kernel] = true
	}
	for _, k := range []string{"qmv_norm_4", "qmv_add_4", "router_qmv_norm_8", "moe_gate_up_norm_4", "deltanet_scan", "logits_topk_part", "logits_topk_merge"} {
		if !seen[k] {
			t.Errorf("no row for %s", k)
		}
	}
	var txt bytes.Buffer
	printKernels(&txt, rep.Kernels)
	if s := txt.String(); !strings.Contains(s, "measured µs") || !strings.Contains(s, "modelled µs") ||
		strings.Count(s, "\n") != len(rep.Kernels)+3 {
		t.Errorf("kernel table:\n%s", s)
	}
}
