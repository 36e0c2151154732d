package conformance

import (
	"github.com/lily-engine/lily/metal/budget"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/ref"
)

const deltanetTol = budget.DeltaNet // the budget and why: metal/budget

// testDeltaNetScan checks deltanet_conv + deltanet_scan's sequence state handling: a decode step
// (T = 1, projections by qmv), T = 2 < K−1 (the new conv state keeps one row of the old one), a
// start from the zero state, head dims that fill neither a lane's rows nor a SIMD group's columns,
// and the real head sizes (Hk 16, Hv 32, Dk = Dv = 128: four state rows per lane, 16 SIMD groups)
// for a decode step and a 9-token chunk.
func testDeltaNetScan(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(31, 1))
	small := smallConfig(8, 2)
	runDeltaNet(t, k, rng, small, 4, 7, 1)
	runDeltaNet(t, k, rng, small, 8, 5, 2)
	runDeltaNet(t, k, rng, small, 4, 0, 3)
	odd := smallConfig(8, 2)
	odd.LinearNumKeyHeads, odd.LinearNumValueHeads, odd.LinearKeyHeadDim, odd.LinearValueHeadDim = 2, 8, 48, 40
	runDeltaNet(t, k, rng, odd, 4, 3, 5)
	real := smallConfig(8, 2)
	real.LinearNumKeyHeads, real.LinearNumValueHeads, real.LinearKeyHeadDim, real.LinearValueHeadDim = 16, 32, 128, 128
	runDeltaNet(t, k, rng, real, 4, 2, 1)
	runDeltaNet(t, k, rng, real, 4, 0, 9)
}

// testDeltaNetLayer: qmm projections + deltanet_scan + qmm out_proj (fused add) vs ref.GatedDeltaNet in its
// chunked (64) form, across the chunk boundary, from a non-zero state.
func testDeltaNetLayer(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(32, 1))
	cfg := smallConfig(8, 2)
	runDeltaNet(t, k, rng, cfg, 4, 9, 63)
	runDeltaNet(t, k, rng, cfg, 8, 9, 64)
	runDeltaNet(t, k, rng, cfg, 4, 9, 65)
}

// runDeltaNet builds a DeltaNet layer of cfg's dimensions, runs prefix tokens through ref to get a non-zero
// state, then T new tokens through the kernels and through ref, and compares the outputs (with
// the residual) and both states.
func runDeltaNet(t *testing.T, k kern, rng *rand.Rand, cfg *checkpoint.Config, bits, prefix, T int) {
	t.Helper()
	w := smallDeltaNet(t, rng, cfg, bits)
	h, hk, hv, dk, dv, kc, c := cfg.HiddenSize, cfg.LinearNumKeyHeads, cfg.LinearNumValueHeads,
		cfg.LinearKeyHeadDim, cfg.LinearValueHeadDim, cfg.LinearConvKernel, cfg.ConvDim()
	st := ref.NewDeltaNetState(cfg)
	if prefix > 0 {
		if _, err := ref.GatedDeltaNet(cfg, w, randRows(rng, prefix, h, 1), st, true); err != nil {
			t.Fatal(err)
		}
	}
	cst, state := flat(st.Conv), flat(st.S)
	x, h0 := randRows(rng, T, h, 1), randRows(rng, T, h, 1)

	project := func(i int) []byte {
		m := [...]*checkpoint.Matrix{&w.QKV, &w.Z, &w.A, &w.B}[i]
		if T == 1 {
			return qmvRun(k, m, x[0])
		}
		return qmm(k, m, x)
	}
	qkv, z, a, b := project(0), project(1), project(2), project(3)
	y := zeros(T * hv * dv)
	d := dims(hk, hv, dk, dv, kc, c, T, float32(1e-6), float32(cfg.RMSNormEps))
	k.run("deltanet_conv", [3]int{ceil(c, 256), 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: qkv, 1: f32(w.Conv), 2: cst, 3: d})
	k.run("deltanet_scan", [3]int{hv, 1, 1}, [3]int{32 * ceil(dv, 8), 1, 1}, map[int][]byte{0: qkv, 1: z, 2: a, 3: b,
		4: f32(w.ALog), 5: f32(w.DtBias), 6: f32(w.Norm), 7: state, 8: y, 9: d})
	out := flat(h0)
	if T == 1 {
		runQMV(k, &w.Out, unf32(y), out, true, shiftCases[0])
	} else {
		bufs := map[int][]byte{3: y, 4: out, 5: dims(T, h, hv*dv, bits, 1, 0)}
		bindQ(bufs, 0, &w.Out)
		k.run("qmm_t32", [3]int{ceil(h, gemmTile), ceil(T, gemmTile), 1}, [3]int{128, 1, 1}, bufs)
	}

	want, err := ref.GatedDeltaNet(cfg, w, x, st, T > 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		for j := range want[i] {
			want[i][j] += h0[i][j]
		}
	}
	nearRows(t, "deltanet layer", rowsOf(out, h), want, deltanetTol)
	nearRows(t, "deltanet recurrent state", rowsOf(state, dk*dv), st.S, deltanetTol)
	nearRows(t, "deltanet conv state", rowsOf(cst, c), st.Conv, matvecTol)
}
