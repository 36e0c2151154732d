package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lily-engine/lily/internal/engine"
)

type fake struct{ ctx int }

type fakeSession struct{ n, prefills, decodes int }

func (f *fake) Name() string                        { return "fake" }
func (f *fake) VocabSize() int                      { return 16 }
func (f *fake) MaxContext() int                     { return f.ctx }
func (f *fake) NewSession() (engine.Session, error) { return &fakeSession{}, nil }
func (f *fake) Close() error                        { return nil }

func (s *fakeSession) Len() int                           { return s.n }
func (s *fakeSession) Snapshot() (engine.Snapshot, error) { return nil, nil }
func (s *fakeSession) Restore(engine.Snapshot) error      { return nil }
func (s *fakeSession) Close() error                       { return nil }
func (s *fakeSession) Prefill(_ context.Context, t []int32, o engine.StepOptions, _ func(int, []float32) error) (engine.StepResult, error) {
	s.n += len(t)
	s.prefills++
	return engine.NewStepResult(make([]float32, 16), o), nil
}
func (s *fakeSession) Decode(_ context.Context, _ int32, o engine.StepOptions) (engine.StepResult, error) {
	s.n++
	s.decodes++
	return engine.NewStepResult(make([]float32, 16), o), nil
}

func TestRunSkipsLengthsBeyondContext(t *testing.T) {
	rs, err := Run(context.Background(), &fake{ctx: 600}, Options{PromptLengths: []int{256, 512, 1024}, DecodeTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].PromptTokens != 256 || rs[1].PromptTokens != 512 {
		t.Fatalf("results %+v", rs)
	}
	for _, r := range rs {
		if r.DecodeTokens != 8 || r.PrefillTokS <= 0 || r.DecodeTokS <= 0 {
			t.Fatalf("bad result %+v", r)
		}
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	if _, err := Run(context.Background(), &fake{ctx: 1 << 20}, Options{PromptLengths: []int{8}, DecodeTokens: 0}); err == nil {
		t.Fatal("zero decode tokens accepted")
	}
	if _, err := Run(context.Background(), &fake{ctx: 1 << 20}, Options{PromptLengths: []int{-1}, DecodeTokens: 1}); err == nil {
		t.Fatal("negative length accepted")
	}
}

func TestSummarizeFractions(t *testing.T) {
	rs := []Result{{PromptTokens: 2048, PrefillTokS: 50, DecodeTokS: 3}, {PromptTokens: 256, PrefillTokS: 100, DecodeTokS: 4},
		{PromptTokens: 1024, PrefillTokS: 80, DecodeTokS: 3.5}}
	r := Summarize("x", rs, 1e9, 6e9, 10, 1000)
	// decode at 256 tokens: 4 tok/s * 1 GB/token over 10 GB/s.
	if math.Abs(r.DecodeRooflineFrac-0.4) > 1e-12 {
		t.Fatalf("decode frac %v", r.DecodeRooflineFrac)
	}
	// prefill at 1K: 80 tok/s * 6 GFLOP/token over 1000 GFLOP/s.
	if math.Abs(r.PrefillComputeFrac-0.48) > 1e-12 {
		t.Fatalf("prefill frac %v", r.PrefillComputeFrac)
	}
	// A second machine measurement (bench keeps the better one) recomputes both fractions.
	r.SetMachine(20, 2000)
	if math.Abs(r.DecodeRooflineFrac-0.2) > 1e-12 || math.Abs(r.PrefillComputeFrac-0.24) > 1e-12 || r.MemReadGBs != 20 || r.PeakGFLOPs != 2000 {
		t.Fatalf("after SetMachine: %+v", r)
	}
	if r.DecodeTrafficFrac != 0 {
		t.Fatalf("traffic fraction %v before SetTraffic", r.DecodeTrafficFrac)
	}
}

func TestSetTraffic(t *testing.T) {
	rs := []Result{{PromptTokens: 256, DecodeTokS: 4, DecodeTokens: 63}, {PromptTokens: 8192, DecodeTokS: 2, DecodeTokens: 63}}
	r := Summarize("x", rs, 1e9, 6e9, 10, 1000)
	r.SetTraffic(1e8, 1e4)
	// 256 tokens: weights 1 GB + state 0.1 GB + 1e4 B × (256 + 32) positions on average.
	want := int64(1e9 + 1e8 + 1e4*288)
	if got := r.Results[0].TrafficBytesPerToken; got != want {
		t.Fatalf("traffic at 256: %d, want %d", got, want)
	}
	if f := r.Results[0].DecodeTrafficFrac; math.Abs(f-4*float64(want)/10e9) > 1e-12 || r.DecodeTrafficFrac != f {
		t.Fatalf("traffic fraction %v (report %v)", f, r.DecodeTrafficFrac)
	}
	if got := r.Results[1].TrafficBytesPerToken; got != int64(1e9+1e8+1e4*(8192+32)) {
		t.Fatalf("traffic at 8K: %d", got)
	}
	// The weights-only fraction is unchanged, and a later machine measurement rescales both.
	if math.Abs(r.DecodeRooflineFrac-0.4) > 1e-12 {
		t.Fatalf("decode frac %v", r.DecodeRooflineFrac)
	}
	r.SetMachine(20, 1000)
	if f := r.Results[0].DecodeTrafficFrac; math.Abs(f-4*float64(want)/20e9) > 1e-12 {
		t.Fatalf("traffic fraction %v after SetMachine", f)
	}
}

func TestAgainstModel(t *testing.T) {
	r := Summarize("x", []Result{{PromptTokens: 256, PrefillTokS: 100, DecodeTokS: 5}}, 1, 1, 1, 1)
	if err := r.AgainstModel(400, func(n int) (float64, float64, error) { return 10, 400, nil }); err != nil {
		t.Fatal(err)
	}
	x := r.Results[0]
	if r.DeviceCopyGBs != 400 || x.ModelDecodeTokS != 10 || x.DecodeOfModelFrac != 0.5 || x.PrefillOfModelFrac != 0.25 {
		t.Fatalf("%+v %+v", r, x)
	}
}

// countingBackend counts the sessions opened and the tokens prefilled and decoded in them.
type countingBackend struct {
	fake
	sessions []*fakeSession
}

func (c *countingBackend) NewSession() (engine.Session, error) {
	s := &fakeSession{}
	c.sessions = append(c.sessions, s)
	return s, nil
}

// TestRunWarmsUpAndRepeats checks the protocol: for every length that fits, in the order given, one
// uncounted warm-up run of that length, then Repetitions runs, merged into one result each with
// llama-bench names.
func TestRunWarmsUpAndRepeats(t *testing.T) {
	b := &countingBackend{fake: fake{ctx: 600}}
	var warmed []int
	rs, err := Run(context.Background(), b, Options{PromptLengths: []int{512, 256, 1024}, DecodeTokens: 8,
		Repetitions: 3, WarmUp: true, WarmedUp: func(n int) { warmed = append(warmed, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(warmed, []int{512, 256}) {
		t.Fatalf("warm-ups at %v, want one at 512 then one at 256", warmed)
	}
	if len(b.sessions) != 2*(1+3) {
		t.Fatalf("%d sessions, want 2 lengths × (1 warm-up + 3 repetitions)", len(b.sessions))
	}
	for i, want := range []int{512, 512, 512, 512, 256, 256, 256, 256} {
		if s := b.sessions[i]; s.n != want+8 {
			t.Fatalf("session %d ran %d tokens, want %d (each length's warm-up first)", i, s.n, want+8)
		}
	}
	if len(rs) != 2 || rs[0].PromptTokens != 512 || rs[1].PromptTokens != 256 {
		t.Fatalf("results %+v", rs)
	}
	for _, r := range rs {
		if r.Repetitions != 3 || r.PrefillTest != fmt.Sprintf("pp%d", r.PromptTokens) ||
			r.DecodeTest != fmt.Sprintf("tg8@d%d", r.PromptTokens) || r.PrefillTokS <= 0 || r.PrefillSD < 0 {
			t.Fatalf("bad result %+v", r)
		}
	}
	if _, err := Run(context.Background(), b, Options{PromptLengths: []int{8}, DecodeTokens: 1, Repetitions: -1}); err == nil {
		t.Fatal("negative repetitions accepted")
	}
}

func TestMergeMeanSD(t *testing.T) {
	runs := []Result{{PrefillTokS: 10, DecodeTokS: 1, PrefillSec: 2, DecodeSec: 4, ResidentBytes: 5},
		{PrefillTokS: 20, DecodeTokS: 3, PrefillSec: 1, DecodeSec: 2, ResidentBytes: 7}}
	r := merge(runs)
	if r.PrefillTokS != 15 || r.DecodeTokS != 2 || r.PrefillSec != 1.5 || r.DecodeSec != 3 || r.ResidentBytes != 7 || r.Repetitions != 2 {
		t.Fatalf("merged %+v", r)
	}
	if math.Abs(r.PrefillSD-math.Sqrt(50)) > 1e-12 || math.Abs(r.DecodeSD-math.Sqrt(2)) > 1e-12 {
		t.Fatalf("sd %g %g, want √50 and √2", r.PrefillSD, r.DecodeSD)
	}
	if _, sd := meanSD([]float64{3}); sd != 0 {
		t.Fatalf("sd of one value %g", sd)
	}
}

// TestRunMeasuresBandwidthAroundDecodes checks that Options.Bandwidth runs right before and right
// after every measured decode (not the warm-up's), that a length records the mean and spread of
// its measurements, that the decode's fraction of that read is its weight traffic over it, and
// that a length with a failed (zero) measurement records none.
func TestRunMeasuresBandwidthAroundDecodes(t *testing.T) {
	var calls int
	reads := []float64{10, 20, 30, 40, 50, 60, 0, 80}
	bw := func() float64 {
		calls++
		return reads[calls-1]
	}
	rs, err := Run(context.Background(), &fake{ctx: 1 << 20}, Options{PromptLengths: []int{8, 16}, DecodeTokens: 4,
		Repetitions: 2, WarmUp: true, Bandwidth: bw})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 8 {
		t.Fatalf("Bandwidth called %d times for 2 lengths × 2 repetitions (and their warm-ups), want 8", calls)
	}
	mean, sd := meanSD(reads[:4])
	if rs[0].DecodeReadGBs != mean || rs[0].DecodeReadSD != sd {
		t.Fatalf("length 8: read %v ± %v, want %v ± %v", rs[0].DecodeReadGBs, rs[0].DecodeReadSD, mean, sd)
	}
	if rs[1].DecodeReadGBs != 0 {
		t.Fatalf("length 16 had a failed measurement but records %v GB/s", rs[1].DecodeReadGBs)
	}
	r := Summarize("fake", rs, 1e9, 1, 100, 100)
	if want := rs[0].DecodeTokS / mean; math.Abs(r.DecodeOfReadFrac-want) > 1e-12*want {
		t.Fatalf("DecodeOfReadFrac %v, want %v", r.DecodeOfReadFrac, want)
	}
	if r.Results[1].DecodeOfReadFrac != 0 {
		t.Fatalf("length 16's fraction %v without a measurement", r.Results[1].DecodeOfReadFrac)
	}
}
