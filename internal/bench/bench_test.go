package bench

import (
	"context"
	"math"
	"testing"

	"pgregory.net/rapid"

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
func (s *fakeSession) Prefill(_ context.Context, t []int32, _ func(int, []float32) error) ([]float32, error) {
	s.n += len(t)
	s.prefills++
	return make([]float32, 16), nil
}
func (s *fakeSession) Decode(context.Context, int32) ([]float32, error) {
	s.n++
	s.decodes++
	return make([]float32, 16), nil
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

// TestArgmax: the first index of the largest value, against a plain scan of every pair.
func TestArgmax(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ints := rapid.SliceOfN(rapid.IntRange(-3, 3), 1, 300).Draw(t, "x") // small ints: ties
		x := make([]float32, len(ints))
		for i, v := range ints {
			x[i] = float32(v)
		}
		want := 0
		for i := range x {
			if x[i] > x[want] {
				want = i
			}
		}
		if got := argmax(x); int(got) != want {
			t.Fatalf("argmax %d, want %d", got, want)
		}
	})
}
