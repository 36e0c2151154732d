package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lily-engine/lily/internal/bench"
)

// benchFixture is the smaller bundled fixture model: a bench run on it takes well under a second.
var benchFixture = filepath.Join("..", "..", "fixtures", "models", "tiny-b", "mlx")

// TestBenchBackendList measures ref and then fast in one run: the JSON holds both reports in the
// order given, over the same prompt lengths and one machine measurement, and each ratio is the
// quotient of the figures the two reports give for its length.
func TestBenchBackendList(t *testing.T) {
	code, stdout, stderr := runLily("bench", "--model", benchFixture, "--backend", "ref,fast", "--device", "cpu",
		"--prompt-lengths", "8,16", "--decode-tokens", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Backends []bench.Report `json:"backends"`
		Ratios   []bench.Ratio  `json:"ratios"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(got.Backends) != 2 || got.Backends[0].Backend != "ref" || got.Backends[1].Backend != "fast" {
		t.Fatalf("backends %+v, want ref then fast", got.Backends)
	}
	ref, fast := got.Backends[0], got.Backends[1]
	lengths := func(r bench.Report) []int {
		var ns []int
		for _, x := range r.Results {
			ns = append(ns, x.PromptTokens)
		}
		return ns
	}
	if !slices.Equal(lengths(ref), []int{8, 16}) || !slices.Equal(lengths(fast), []int{8, 16}) {
		t.Fatalf("prompt lengths: ref %v, fast %v; want [8 16] for both", lengths(ref), lengths(fast))
	}
	if ref.MemReadGBs <= 0 || ref.MemReadGBs != fast.MemReadGBs || ref.PeakGFLOPs != fast.PeakGFLOPs {
		t.Errorf("machine: ref %v GB/s %v GFLOP/s, fast %v GB/s %v GFLOP/s; want one positive measurement shared",
			ref.MemReadGBs, ref.PeakGFLOPs, fast.MemReadGBs, fast.PeakGFLOPs)
	}
	if len(got.Ratios) != 2 {
		t.Fatalf("ratios %+v, want one per prompt length", got.Ratios)
	}
	for i, r := range got.Ratios {
		rr, fr := ref.Results[i], fast.Results[i]
		if r.Backend != "fast" || r.Baseline != "ref" || r.PromptTokens != rr.PromptTokens {
			t.Errorf("ratio %d: %+v, want fast over ref at %d tokens", i, r, rr.PromptTokens)
		}
		if !near(r.Prefill, fr.PrefillTokS/rr.PrefillTokS) || !near(r.Decode, fr.DecodeTokS/rr.DecodeTokS) {
			t.Errorf("ratio %d: prefill %v decode %v; the reports give %v and %v", i, r.Prefill, r.Decode,
				fr.PrefillTokS/rr.PrefillTokS, fr.DecodeTokS/rr.DecodeTokS)
		}
	}
	// Each backend runs all its lengths before the next one starts.
	if i, j := strings.Index(stderr, "ref, 16-token"), strings.Index(stderr, "fast, 8-token"); i < 0 || j < 0 || i > j {
		t.Errorf("progress out of order:\n%s", stderr)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }

// TestBenchBackendListText: the text report prints each backend's table in the order given, then
// one fast/ref row per prompt length; a single backend prints no ratio table.
func TestBenchBackendListText(t *testing.T) {
	code, stdout, stderr := runLily("bench", "--model", benchFixture, "--backend", "fast,ref", "--device", "cpu",
		"--prompt-lengths", "8", "--decode-tokens", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, r, s := strings.Index(stdout, "backend fast ·"), strings.Index(stdout, "backend ref ·"), strings.Index(stdout, "speed against fast")
	if f < 0 || r < f || s < r {
		t.Fatalf("want the fast table, the ref table, then the ratios:\n%s", stdout)
	}
	var rows []string
	for _, line := range strings.Split(stdout[s:], "\n") {
		if fields := strings.Fields(line); len(fields) == 4 && fields[0] == "ref/fast" {
			rows = append(rows, fields[1])
		}
	}
	if !slices.Equal(rows, []string{"8"}) {
		t.Errorf("ratio rows for prompt lengths %v, want [8]:\n%s", rows, stdout)
	}
	code, stdout, stderr = runLily("bench", "--model", benchFixture, "--backend", "ref", "--prompt-lengths", "8", "--decode-tokens", "2")
	if code != 0 || strings.Contains(stdout, "speed against") || strings.Count(stdout, "backend ") != 1 {
		t.Errorf("single backend: exit %d, %s\n%s", code, stderr, stdout)
	}
}

// TestBenchSingleBackendJSON: with one backend the JSON is still the report itself, results at the
// top level and nothing the report type does not hold.
func TestBenchSingleBackendJSON(t *testing.T) {
	code, stdout, stderr := runLily("bench", "--model", benchFixture, "--backend", "fast", "--device", "cpu",
		"--prompt-lengths", "16", "--decode-tokens", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep bench.Report
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if rep.Backend != "fast" || len(rep.Results) != 1 || rep.Results[0].PromptTokens != 16 || rep.Results[0].DecodeTokens != 4 ||
		rep.Results[0].PrefillTokS <= 0 || rep.Results[0].DecodeTokS <= 0 || rep.BytesPerToken <= 0 || rep.MemReadGBs <= 0 {
		t.Errorf("report %+v", rep)
	}
}

// TestBenchRepetitionsAndNames: --repetitions and the warm-up reach the report (JSON and text), the
// results carry llama-bench's names, and a bad count is a usage error.
func TestBenchRepetitionsAndNames(t *testing.T) {
	code, stdout, stderr := runLily("bench", "--model", benchFixture, "--backend", "fast", "--device", "cpu",
		"--prompt-lengths", "16,8", "--decode-tokens", "4", "--repetitions", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if !rep.WarmUp || rep.Repetitions != 3 || len(rep.Results) != 2 || rep.Results[0].Repetitions != 3 ||
		rep.Results[0].PrefillTest != "pp16" || rep.Results[1].DecodeTest != "tg4@d8" {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stderr, "warmed up (one uncounted 8-token prompt") {
		t.Errorf("no warm-up on stderr:\n%s", stderr)
	}
	code, stdout, stderr = runLily("bench", "--model", benchFixture, "--backend", "fast", "--device", "cpu",
		"--prompt-lengths", "8", "--decode-tokens", "2", "--warmup=false")
	if code != 0 || !strings.Contains(stdout, "no warm-up") || !strings.Contains(stdout, "tg2@d8") ||
		!strings.Contains(stdout, "pp8") || strings.Contains(stderr, "warmed up") {
		t.Errorf("exit %d, %s\n%s", code, stderr, stdout)
	}
	var out, errb bytes.Buffer
	if code := cmdBench([]string{"--repetitions", "0"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "repetitions 0") {
		t.Errorf("--repetitions 0: exit %d, %s", code, errb.String())
	}
}

// TestBenchBackendListErrors: a bad --backend list is a usage error naming the culprit, found
// before any checkpoint is read (the model directory here does not exist).
func TestBenchBackendListErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--backend", "ref,fast,ref"}, `backend "ref" listed twice`},
		{[]string{"--backend", "ref,gpu"}, `unknown backend "gpu"`},
		{[]string{"--backend", "ref,,fast"}, "empty backend name"},
		{[]string{"--backend", "ref", "--int16-activations"}, "--int16-activations applies to the fast backend"},
		{[]string{"--backend", "ref", "--device", "metal"}, "backend ref runs on the cpu only"},
		{[]string{"--backend", "ref,fast", "--device", "tpu"}, `unknown --device "tpu"`},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"--model", filepath.Join(t.TempDir(), "absent")}, c.args...)
		if code := cmdBench(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.msg) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and %q", c.args, code, errb.String(), out.String(), c.msg)
		}
	}
}

// TestBenchSpecsFastFlags: beside fast, ref gets neither --device nor --int16-activations, and
// fast keeps both.
func TestBenchSpecsFastFlags(t *testing.T) {
	specs, err := benchSpecs("ref, fast", backendSpec{device: "cpu", int16: true, ctxSize: 40})
	if err != nil {
		t.Fatal(err)
	}
	want := []backendSpec{{name: "ref", ctxSize: 40}, {name: "fast", device: "cpu", int16: true, ctxSize: 40}}
	if !slices.Equal(specs, want) {
		t.Errorf("specs %+v, want %+v", specs, want)
	}
}

// TestBenchPhases: --phases profiles a decode step after the shortest prompt and reports each phase
// (JSON and text), with the mixers', MoE's and lm_head's traffic from the checkpoint's parts.
func TestBenchPhases(t *testing.T) {
	code, stdout, stderr := runLily("bench", "--model", benchFixture, "--backend", "fast", "--device", "cpu",
		"--prompt-lengths", "16,8", "--decode-tokens", "4", "--phases", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if rep.PhasesTest != "tg4@d8" || rep.PhasesReadGBs <= 0 || len(rep.Phases) != 6 {
		t.Fatalf("profile %q at %v GB/s, %d phases: %+v", rep.PhasesTest, rep.PhasesReadGBs, len(rep.Phases), rep.Phases)
	}
	var share float64
	for _, p := range rep.Phases {
		share += p.Share
		streams := p.Phase == "deltanet" || p.Phase == "attention" || p.Phase == "moe" || p.Phase == "lm_head"
		if p.MsPerStep <= 0 && p.Phase != "between" || streams != (p.Bytes > 0) || streams && (p.GBs <= 0 || p.OfRead <= 0) {
			t.Errorf("phase %+v", p)
		}
	}
	if share < 0.999 || share > 1.001 {
		t.Errorf("shares sum to %v", share)
	}
	code, stdout, stderr = runLily("bench", "--model", benchFixture, "--backend", "fast", "--device", "cpu",
		"--prompt-lengths", "8", "--decode-tokens", "2", "--phases")
	if code != 0 || !strings.Contains(stdout, "decode step by phase (tg2@d8") || !strings.Contains(stdout, "lm_head") {
		t.Errorf("exit %d, %s\n%s", code, stderr, stdout)
	}
	code, stdout, stderr = runLily("bench", "--model", benchFixture, "--backend", "fast", "--device", "cpu",
		"--prompt-lengths", "8", "--decode-tokens", "2")
	if code != 0 || strings.Contains(stdout, "by phase") {
		t.Errorf("a profile without --phases: exit %d, %s\n%s", code, stderr, stdout)
	}
}
