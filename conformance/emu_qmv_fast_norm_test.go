package conformance

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/ref"
)

// The fused-norm decode mat-vecs (kernels/qmv_fast_norm.metal): qmv_fast's grid (8 rows per
// threadgroup of 64) over norm(x) = x / rms(x) ⊙ nw, the norm recomputed from the residual x.

// normEps is the RMSNorm epsilon of the real model.
const normEps = 1e-6

// fusedNormTol: the fused kernels round x·nw per element and scale the float32 dot product by
// 1/rms(x) at the end; ref rounds x·r, then ·nw, and dots in float64. Each term differs by a few
// ulps, which a short row with cancelling terms and an outlier in x amplifies relative to the
// result's scale (seen: 7e-7 at K = 2,048, 5e-6 on a 3×64 8-bit case): twice matvecTol.
const fusedNormTol = 2 * matvecTol

// refNormed is ref's RMSNorm of x with weight w (the operand the unfused plan writes).
func refNormed(x, w []float32) []float32 {
	n := make([]float32, len(x))
	ref.RMSNorm(n, x, w, normEps)
	return n
}

// residual is a residual-stream-like input: scale std, a few large outliers (as real hidden
// states have), so the norm is far from 1.
func residual(rng *rand.Rand, n int, std float64) []float32 {
	x := randVec(rng, n, std)
	for i := 0; i < n; i += 97 {
		x[i] *= 20
	}
	return x
}

// fusedNormWeight is a norm weight around 1 (the loaded weight as rms_norm takes it).
func fusedNormWeight(rng *rand.Rand, n int) []float32 {
	w := randVec(rng, n, 0.3)
	for i := range w {
		w[i] += 1
	}
	return w
}

// testQMVNorm: qmv_norm_4/8 against ref.RMSNorm then ref.MatVec, at qmvFast's tiny and real
// shapes with row and column tails and at every operand byte shift (tolerance fusedNormTol).
func testQMVNorm(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(31, 1))
	cases := append([]shapeCase(nil), qmvFastShapes...)
	cases = append(cases, shapeCase{out: 4099, in: 2048, bits: 8}) // a real lm_head-like 8-bit slice with a tail
	for range 4 {
		cases = append(cases, shapeCase{out: 1 + rng.IntN(70), in: groupSize * (1 + rng.IntN(12)), bits: []int{4, 8}[rng.IntN(2)]})
	}
	for i, c := range cases {
		m := qmat(t, rng, "w", 0, c.out, c.in, c.bits)
		x, nw := residual(rng, c.in, 0.5+3*rng.Float64()), fusedNormWeight(rng, c.in)
		want := make([]float32, c.out)
		if err := ref.MatVec(&m, 0, refNormed(x, nw), want); err != nil {
			t.Fatal(err)
		}
		bufs := map[int][]byte{3: f32(x), 4: f32(nw), 5: zeros(c.out)}
		bufs[6] = dims(c.out, c.in, bindQShifted(bufs, 0, &m, shiftCases[i%len(shiftCases)]), float32(normEps))
		kn := fmt.Sprintf("qmv_norm_%d", c.bits)
		k.run(kn, [3]int{ceil(c.out, qfRows), 1, 1}, [3]int{qfThreads, 1, 1}, bufs)
		near(t, fmt.Sprintf("%s %d×%d", kn, c.out, c.in), unf32(bufs[5]), want, fusedNormTol)
	}
}

// testRouterNorm: router_qmv_norm_4/8 (logits and the shared gate over norm(x), T tokens) against
// ref: the real router (256 × 2,048, 8-bit), E+1 not a multiple of 8 and K not of the step, and
// the largest E the kernels take (tolerance fusedNormTol).
func testRouterNorm(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(32, 1))
	for ci, c := range []struct{ e, T, h, bits int }{{256, 2, 2048, 8}, {20, 3, 128, 4}, {37, 2, 320, 8}, {1024, 1, 64, 4}} {
		r, g := qmat(t, rng, "router", 0, c.e, c.h, c.bits), qmat(t, rng, "seg", 0, 1, c.h, c.bits)
		nw := fusedNormWeight(rng, c.h)
		x := make([][]float32, c.T)
		wantL, wantG := make([]float32, c.T*c.e), make([]float32, c.T)
		for i := range x {
			x[i] = residual(rng, c.h, 2)
			n := refNormed(x[i], nw)
			if err := ref.MatVec(&r, 0, n, wantL[i*c.e:(i+1)*c.e]); err != nil {
				t.Fatal(err)
			}
			if err := ref.MatVec(&g, 0, n, wantG[i:i+1]); err != nil {
				t.Fatal(err)
			}
		}
		bufs := map[int][]byte{6: flat(x), 7: f32(nw), 8: zeros(c.T * c.e), 9: zeros(c.T)}
		rsh := bindQShifted(bufs, 0, &r, shiftCases[ci%len(shiftCases)])
		gsh := bindQShifted(bufs, 3, &g, shiftCases[(ci+1)%len(shiftCases)])
		bufs[10] = dims(c.e, c.h, rsh, gsh, float32(normEps))
		kn := fmt.Sprintf("router_qmv_norm_%d", c.bits)
		k.run(kn, [3]int{ceil(c.e+1, qfRows), c.T, 1}, [3]int{qfThreads, 1, 1}, bufs)
		what := fmt.Sprintf("%s E=%d T=%d H=%d", kn, c.e, c.T, c.h)
		near(t, what+" logits", unf32(bufs[8]), wantL, fusedNormTol)
		near(t, what+" shared gate", unf32(bufs[9]), wantG, fusedNormTol)
	}
}

// testMoEGateUpNorm: moe_gate_up_norm_4/8 against ref: act[j] = silu(Wg[e_j] n)·(Wu[e_j] n) for the
// k routed slots and the shared expert, n = norm(x): a small model at 4 and 8 bits, the real widths
// (H 2,048, I = Is = 512, top-8) over 12 experts, and widths with tails (I, Is, H not multiples of
// 8 rows nor of the column step), operands shifted in odd cases (tolerance fusedNormTol).
func testMoEGateUpNorm(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(33, 1))
	real := smallConfig(12, 8)
	real.HiddenSize, real.MoEIntermediate, real.SharedIntermediate = 2048, 512, 512
	tails := smallConfig(9, 3)
	tails.HiddenSize, tails.MoEIntermediate, tails.SharedIntermediate = 320, 192, 128
	for ci, c := range []struct {
		cfg  *checkpoint.Config
		bits int
	}{{smallConfig(32, 4), 4}, {smallConfig(32, 4), 8}, {real, 4}, {tails, 4}, {tails, 8}} {
		cfg, bits := c.cfg, c.bits
		m := smallMoE(t, rng, cfg, bits)
		h, in, is, topK := cfg.HiddenSize, cfg.MoEIntermediate, cfg.SharedIntermediate, cfg.NumExpertsPerTok
		stride := max(in, is)
		x, nw := residual(rng, h, 1.5), fusedNormWeight(rng, h)
		ids := make([]int32, topK)
		for j, e := range rng.Perm(cfg.NumExperts)[:topK] {
			ids[j] = int32(e)
		}
		n := refNormed(x, nw)
		want := make([]float32, (topK+1)*stride)
		for j := 0; j <= topK; j++ {
			gm, um, e, width := &m.Gate, &m.Up, int(ids[min(j, topK-1)]), in
			if j == topK {
				gm, um, e, width = &m.SharedGate, &m.SharedUp, 0, is
			}
			g, u := make([]float32, width), make([]float32, width)
			if err := ref.MatVec(gm, e, n, g); err != nil {
				t.Fatal(err)
			}
			if err := ref.MatVec(um, e, n, u); err != nil {
				t.Fatal(err)
			}
			for r := range width {
				want[j*stride+r] = ref.SiLU(g[r]) * u[r]
			}
		}
		sh := func(i int) [3]int { return shiftCases[(ci%2)*(1+i%3)] }
		bufs := map[int][]byte{12: i32(ids), 13: f32(x), 14: f32(nw), 15: zeros((topK + 1) * stride)}
		bufs[16] = dims(h, in, is, topK, bits, stride, bindQShifted(bufs, 0, &m.Gate, sh(0)), bindQShifted(bufs, 3, &m.Up, sh(1)),
			bindQShifted(bufs, 6, &m.SharedGate, sh(2)), bindQShifted(bufs, 9, &m.SharedUp, sh(3)), 0, 0)
		bufs[17] = dims(h, float32(normEps))
		kn := fmt.Sprintf("moe_gate_up_norm_%d", bits)
		k.run(kn, [3]int{ceil(stride, qfRows), topK + 1, 1}, [3]int{qfThreads, 1, 1}, bufs)
		near(t, fmt.Sprintf("%s H=%d I=%d Is=%d", kn, h, in, is), unf32(bufs[15]), want, fusedNormTol)
	}
}
