package metal

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/internal/checkpoint/checkpointtest"
	"github.com/lily-engine/lily/ref"
)

// testDims is a tiny model the kernels accept: every input width a multiple of their group of 64.
func testDims() checkpointtest.Dims {
	return checkpointtest.Dims{H: 64, Layers: 4, Interval: 4, Vocab: 256, Hq: 4, Hkv: 2, D: 32,
		Hk: 2, Hv: 4, Dk: 16, Dv: 16, K: 4, E: 8, TopK: 2, I: 64, Is: 64, Bits: 4, GroupSize: 64, GateBits: 8}
}

func openTest(t *testing.T, layout string) *checkpoint.Checkpoint {
	t.Helper()
	d := testDims()
	dir := t.TempDir()
	if err := checkpointtest.Write(dir, d.ConfigJSON(layout), d.Specs(layout), 2, 7); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	return ck
}

func toks(n, vocab int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(vocab))
	}
	return out
}

func relDiff(a, b []float32) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	var d float64
	for i := range a {
		lo, hi = math.Min(lo, float64(a[i])), math.Max(hi, float64(a[i]))
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d / math.Max(hi-lo, 1e-30)
}

func TestEngineQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kernel emulator with g++ (slow)")
	}
	ck := openTest(t, "mlx")
	t0 := time.Now()
	dev, err := NewEmuDevice()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	t.Logf("emu build %v", time.Since(t0))
	e, err := NewEngine(ck.Weights, dev, 512)
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := ref.New(ck.Weights)
	rs := rm.NewSession()
	ms, _ := e.NewSession()
	ctx := context.Background()
	p := toks(10, 256, 3)
	t0 = time.Now()
	ml, err := ms.Prefill(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("prefill %v", time.Since(t0))
	rl, _ := rs.Prefill(ctx, p, nil)
	t.Logf("prefill rel diff %g", relDiff(rl, ml))
	for i, tok := range toks(3, 256, 4) {
		t0 = time.Now()
		ml, err = ms.Decode(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		rl, _ = rs.Decode(ctx, tok)
		t.Logf("decode %d %v rel diff %g", i, d, relDiff(rl, ml))
	}
}
