package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal/budget"
	"github.com/lily-engine/lily/ref"
)

const routeTol = budget.Route // the budget and why: metal/budget

const moeTol = budget.MoE // the budget and why: metal/budget

// routerTopK runs the router for the rows of x: router_qmv_<bits> (logits [T, E] and the shared
// gate logits [T]), then router_softmax_topk: ids and weights [T·k].
func routerTopK(k kern, m *checkpoint.MoE, x [][]float32, topK int) (ids []int32, wts, sgate []float32) {
	return routerTopKThreads(k, m, x, topK, 1024)
}

// routerTopKThreads is routerTopK with router_softmax_topk on threadgroups of at most the given
// threads (a pipeline may allow fewer than 1,024), one SIMD group per token, as the engine sizes it.
func routerTopKThreads(k kern, m *checkpoint.MoE, x [][]float32, topK, threads int) (ids []int32, wts, sgate []float32) {
	T, e := len(x), m.Router.Out
	logits, sg := zeros(T*e), zeros(T)
	bufs := map[int][]byte{6: flat(x), 7: logits, 8: sg}
	// The router misaligned one way, the shared expert's gate another (as in an unpadded shard).
	rsh := bindQShifted(bufs, 0, &m.Router, shiftCases[1])
	gsh := bindQShifted(bufs, 3, &m.SharedEG, shiftCases[3])
	bufs[9] = dims(e, m.Router.In, rsh, gsh)
	k.run(fmt.Sprintf("router_qmv_%d", m.Router.Bits), [3]int{ceil(e+1, qfRows), T, 1}, [3]int{qfThreads, 1, 1}, bufs)
	per := max(1, min(T, threads/32))
	top := map[int][]byte{0: bufs[7], 1: zeros(T * topK), 2: zeros(T * topK), 3: dims(e, topK, T)}
	k.run("router_softmax_topk", [3]int{ceil(T, per), 1, 1}, [3]int{32 * per, 1, 1}, top)
	return uni32(top[1]), unf32(top[2]), unf32(bufs[8])
}

func testRouterTopK(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(11, 1))
	// First the real router (8-bit as in the MLX checkpoint); then E+1 rows not a multiple of 8 nor
	// E of 32, K not of the step, 4-bit; then the largest E and k the kernel takes.
	for _, c := range []struct{ e, topK, T, h, bits int }{{256, 8, 2, 2048, 8}, {20, 3, 3, 128, 4}, {37, 5, 11, 320, 8},
		{1024, 32, 2, 64, 8}} {
		// Only the router and the shared-expert gate take part.
		m := &checkpoint.MoE{Router: qmat(t, rng, "router", 0, c.e, c.h, c.bits), SharedEG: qmat(t, rng, "seg", 0, 1, c.h, c.bits)}
		x := routedInputs(t, rng, &m.Router, c.T, c.topK)
		for _, threads := range []int{1024, 256, 64, 32} { // 1,024 and pipelines that allow fewer
			ids, wts, sgate := routerTopKThreads(k, m, x, c.topK, threads)
			checkRoutes(t, m, x, c.e, c.topK, ids, wts, sgate)
		}
	}
}

// checkRoutes compares the router's results for inputs x with ref's routing.
func checkRoutes(t *testing.T, m *checkpoint.MoE, x [][]float32, e, topK int, ids []int32, wts, sgate []float32) {
	t.Helper()
	for tok := range x {
		logits := make([]float32, e)
		sg := make([]float32, 1)
		if err := ref.MatVec(&m.Router, 0, x[tok], logits); err != nil {
			t.Fatal(err)
		}
		if err := ref.MatVec(&m.SharedEG, 0, x[tok], sg); err != nil {
			t.Fatal(err)
		}
		wantIDs, wantW, err := ref.Route(logits, topK)
		if err != nil {
			t.Fatal(err)
		}
		for j, id := range wantIDs {
			if int(ids[tok*topK+j]) != id {
				t.Fatalf("E=%d token %d: ids %v, want %v", e, tok, ids[tok*topK:(tok+1)*topK], wantIDs)
			}
		}
		near(t, "router weights", wts[tok*topK:(tok+1)*topK], wantW, routeTol)
		// The gate logit is one dot product like a router logit: its error is measured against the
		// logits' scale (a single logit near 0 has no meaningful error relative to itself).
		scale := 0.0
		for _, v := range logits {
			scale = max(scale, math.Abs(float64(v)))
		}
		if d := math.Abs(float64(sgate[tok]) - float64(sg[0])); d > routeTol*scale {
			t.Fatalf("E=%d token %d: shared gate logit %g, want %g: error %.3g of the logits' scale > %.3g",
				e, tok, sgate[tok], sg[0], d/scale, routeTol)
		}
	}
}

// testRouterNaN checks that NaN router logits never give an expert id outside [0, E) or a repeated
// one: an all-NaN input (every logit NaN), and one expert whose scales are NaN, which must rank last.
func testRouterNaN(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(13, 1))
	const e, topK, h = 40, 8, 128
	m := &checkpoint.MoE{Router: qmat(t, rng, "router", 0, e, h, 8), SharedEG: qmat(t, rng, "seg", 0, 1, h, 8)}
	nan := make([]float32, h)
	for i := range nan {
		nan[i] = float32(math.NaN())
	}
	x := [][]float32{nan, randVec(rng, h, 1)}
	// Expert 5 gets NaN scales (bf16 0x7fc0): its logit is NaN for every input.
	sc := m.Router.Scales.Data
	row := 2 * (h / groupSize)
	for i := 5 * row; i < 6*row; i += 2 {
		sc[i], sc[i+1] = 0xc0, 0x7f
	}
	for _, threads := range []int{1024, 64} {
		ids, _, _ := routerTopKThreads(k, m, x, topK, threads)
		for tok := range x {
			seen := map[int32]bool{}
			for _, id := range ids[tok*topK : (tok+1)*topK] {
				if id < 0 || id >= e || seen[id] {
					t.Fatalf("threads %d token %d: ids %v: not %d distinct experts in [0, %d)", threads, tok, ids[tok*topK:(tok+1)*topK], topK, e)
				}
				seen[id] = true
			}
			if tok == 1 && seen[5] {
				t.Fatalf("threads %d: the expert with a NaN logit was chosen: %v", threads, ids[topK:])
			}
		}
	}
}

// group runs moe_count, moe_scan, moe_scatter and moe_tiles on ids: offsets [E+1], order
// [len(ids)] and the tile32 work list's prefix tiles [E+1].
func group(k kern, ids []int32, experts int) (offsets, order, tiles []int32) {
	n := len(ids)
	gd := dims(n, experts)
	counts, offs, cursor, ord, tl := zeros(experts), zeros(experts+1), zeros(experts), zeros(n), zeros(experts+1)
	k.run("moe_count", [3]int{ceil(n, 256), 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: i32(ids), 1: counts, 2: gd})
	k.run("moe_scan", [3]int{1, 1, 1}, [3]int{1024, 1, 1}, map[int][]byte{0: counts, 1: offs, 2: cursor, 3: gd})
	// The order within an expert is whatever the atomics give: compared sorted per expert.
	offsets = uni32(offs)
	k.runCanon("moe_scatter", [3]int{ceil(n, 256), 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: i32(ids), 1: cursor, 2: ord, 3: gd},
		func(b map[int][]byte) {
			o := uni32(b[2])
			for e := 0; e < experts; e++ {
				slices.Sort(o[offsets[e]:offsets[e+1]])
			}
			copy(b[2], i32(o))
		})
	k.run("moe_tiles", [3]int{1, 1, 1}, [3]int{1024, 1, 1}, map[int][]byte{0: offs, 1: tl, 2: gd})
	return offsets, uni32(ord), uni32(tl)
}

// gemmTile is the tile32 design's tile edge (T32_BM in kernels/gemm_tile32.metal).
const gemmTile = 32

// tileBound is the host's bound on the work list's length (metal.moeTileBound): the expert GEMMs'
// grid y.
func tileBound(n, e int) int { return ceil(n, gemmTile) + min(e, n) }

func testMoEGrouping(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(12, 1))
	for _, c := range []struct{ n, e int }{{24, 256}, {700, 5}, {1, 1}, {333, 1000}} {
		ids := make([]int32, c.n)
		for i := range ids {
			ids[i] = int32(rng.IntN(c.e))
		}
		offsets, order, tiles := group(k, ids, c.e)
		at, tl := 0, 0
		for e := 0; e < c.e; e++ {
			var want []int32
			for i, id := range ids {
				if int(id) == e {
					want = append(want, int32(i))
				}
			}
			if int(offsets[e]) != at {
				t.Fatalf("n=%d E=%d: offsets[%d] = %d, want %d", c.n, c.e, e, offsets[e], at)
			}
			got := slices.Clone(order[at : at+len(want)])
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d E=%d: expert %d holds slots %v, want %v", c.n, c.e, e, got, want)
			}
			if int(tiles[e]) != tl {
				t.Fatalf("n=%d E=%d: tiles[%d] = %d, want %d", c.n, c.e, e, tiles[e], tl)
			}
			at, tl = at+len(want), tl+ceil(len(want), gemmTile)
		}
		if int(tiles[c.e]) != tl || tl > tileBound(c.n, c.e) {
			t.Fatalf("n=%d E=%d: tiles[E] = %d, want %d (bound %d)", c.n, c.e, tiles[c.e], tl, tileBound(c.n, c.e))
		}
		if int(offsets[c.e]) != c.n {
			t.Fatalf("n=%d E=%d: offsets[E] = %d", c.n, c.e, offsets[c.e])
		}
	}
}

// refMoE is h0 + MoEBlock(x) per token.
func refMoE(t *testing.T, cfg *checkpoint.Config, m *checkpoint.MoE, x, h0 [][]float32) [][]float32 {
	out := make([][]float32, len(x))
	for i := range x {
		y, err := ref.MoEBlock(cfg, m, x[i])
		if err != nil {
			t.Fatal(err)
		}
		for j := range y {
			y[j] += h0[i][j]
		}
		out[i] = y
	}
	return out
}

// testMoEDecodeLayer: the router, moe_gate_up_<bits> + moe_down_<bits> (with the residual) vs
// ref.MoEBlock: a small model at 4 and 8 bits, then the real widths (H 2,048, I = Is = 512, top-8)
// over 12 experts, and widths with tails (I, Is, H not multiples of 8 rows nor of the column step).
func testMoEDecodeLayer(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(13, 1))
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
		for step := 0; step < 2; step++ {
			x := routedInputs(t, rng, &m.Router, 1, topK)
			h0 := randRows(rng, 1, h, 1)
			ids, wts, sgate := routerTopK(k, m, x, topK)
			stride := max(in, is)
			// Every operand shifted (odd cases) or none (even), each matrix its own way.
			sh := func(i int) [3]int { return shiftCases[(ci%2)*(1+i%3)] }
			act := zeros((topK + 1) * stride)
			up := map[int][]byte{12: i32(ids), 13: flat(x), 14: act}
			hb := flat(h0)
			down := map[int][]byte{6: i32(ids), 7: f32(wts), 8: f32(sgate), 9: act, 10: hb}
			md := dims(h, in, is, topK, bits, stride, bindQShifted(up, 0, &m.Gate, sh(0)), bindQShifted(up, 3, &m.Up, sh(1)),
				bindQShifted(up, 6, &m.SharedGate, sh(2)), bindQShifted(up, 9, &m.SharedUp, sh(3)),
				bindQShifted(down, 0, &m.Down, sh(4)), bindQShifted(down, 3, &m.SharedDown, sh(5)))
			up[15], down[11] = md, md
			k.run(fmt.Sprintf("moe_gate_up_%d", bits), [3]int{ceil(stride, qfRows), topK + 1, 1}, [3]int{qfThreads, 1, 1}, up)
			down[9] = up[14]
			k.run(fmt.Sprintf("moe_down_%d", bits), [3]int{ceil(h, qfRows), 1, 1}, [3]int{qfThreads, 1, 1}, down)
			nearRows(t, fmt.Sprintf("moe decode H=%d I=%d Is=%d %d-bit", h, in, is, bits), rowsOf(down[10], h),
				refMoE(t, cfg, m, x, h0), moeTol)
		}
	}
}

// testMoEPrefillLayer: the router per token, GPU grouping, the tile32 expert GEMMs over the work
// list, the shared expert through qmm_t32 + swiglu, and moe_combine vs ref.MoEBlock per token.
// Cases: most experts empty and some with one slot (E = 64 ≫ T·k = 12); ~10 slots per expert at
// 8 bits; 40 slots per expert (more than one 32-slot tile, the second partial) at 4 bits; 70 slots
// on each of 2 experts (three tiles, the third partial) at 8 bits; the real widths (H 2,048, I 512)
// with tails of slots per expert.
func testMoEPrefillLayer(t *testing.T, k kern) {
	rng := rand.New(rand.NewPCG(14, 1))
	real := smallConfig(6, 2)
	real.HiddenSize, real.MoEIntermediate, real.SharedIntermediate = 2048, 512, 512
	var zero, one bool // some case had an expert with no slot, and one with a single slot
	for _, c := range []struct {
		cfg     *checkpoint.Config
		T, bits int
	}{{smallConfig(64, 4), 3, 4}, {smallConfig(8, 4), 21, 8}, {smallConfig(3, 2), 60, 4}, {smallConfig(2, 2), 70, 8}, {real, 37, 4}} {
		cfg := c.cfg
		m := smallMoE(t, rng, cfg, c.bits)
		h, in, is, T, topK, ne := cfg.HiddenSize, cfg.MoEIntermediate, cfg.SharedIntermediate, c.T, cfg.NumExpertsPerTok, cfg.NumExperts
		x := routedInputs(t, rng, &m.Router, T, topK)
		h0 := randRows(rng, T, h, 1)
		ids, wts, sgate := routerTopK(k, m, x, topK)
		offsets, order, tiles := group(k, ids, ne)
		for e := 0; e < ne; e++ {
			zero = zero || offsets[e+1] == offsets[e]
			one = one || offsets[e+1]-offsets[e] == 1
		}
		n := T * topK
		act, out := zeros(n*in), zeros(n*h)
		gu := map[int][]byte{6: flat(x), 7: i32(order), 8: i32(offsets), 9: i32(tiles), 10: act}
		bufs := map[int][]byte{3: act, 4: i32(order), 5: i32(offsets), 6: i32(tiles), 7: out}
		gd := dims(topK, h, in, c.bits, ne, bindQShifted(gu, 0, &m.Gate, shiftCases[1]),
			bindQShifted(gu, 3, &m.Up, shiftCases[2]), bindQShifted(bufs, 0, &m.Down, shiftCases[3]))
		gu[11], bufs[8] = gd, gd
		y := tileBound(n, ne)
		k.run("moe_gemm_t32_gate_up", [3]int{ceil(in, gemmTile), y, 1}, [3]int{128, 1, 1}, gu)
		k.run("moe_gemm_t32_down", [3]int{ceil(h, gemmTile), y, 1}, [3]int{128, 1, 1}, bufs)

		sg, su, shared := qmm(k, &m.SharedGate, x), qmm(k, &m.SharedUp, x), zeros(T*h)
		k.run("swiglu", [3]int{ceil(T*is, 256), 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: sg, 1: su, 2: dims(T * is)})
		bufs = map[int][]byte{3: sg, 4: shared, 5: dims(T, h, is, c.bits, 0, 0)}
		bindQ(bufs, 0, &m.SharedDown)
		k.run("qmm_t32", [3]int{ceil(h, gemmTile), ceil(T, gemmTile), 1}, [3]int{128, 1, 1}, bufs)

		yb := flat(h0)
		bufs = map[int][]byte{0: out, 1: f32(wts), 2: f32(sgate), 3: shared, 4: yb,
			5: dims(h, in, is, topK, c.bits, max(in, is), 0, 0, 0, 0, 0, 0)}
		k.run("moe_combine", [3]int{ceil(h, 256), T, 1}, [3]int{256, 1, 1}, bufs)
		nearRows(t, fmt.Sprintf("moe prefill E=%d T=%d H=%d", ne, T, h), rowsOf(yb, h), refMoE(t, cfg, m, x, h0), moeTol)
	}
	if !zero || !one {
		t.Errorf("the cases cover an expert with no slot: %v, with one slot: %v; both are needed", zero, one)
	}
}

// qmm runs qmm_t32: X [T, In] → Y [T, Out] (flat bytes).
func qmm(k kern, m *checkpoint.Matrix, x [][]float32) []byte {
	T := len(x)
	y := zeros(T * m.Out)
	bufs := map[int][]byte{3: flat(x), 4: y, 5: dims(T, m.Out, m.In, m.Bits, 0, 0)}
	bindQ(bufs, 0, m)
	k.run("qmm_t32", [3]int{ceil(m.Out, gemmTile), ceil(T, gemmTile), 1}, [3]int{128, 1, 1}, bufs)
	return y
}
