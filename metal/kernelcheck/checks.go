package kernelcheck

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/metal/budget"
	"github.com/lily-engine/lily/metal/device"
	"github.com/lily-engine/lily/ref"
)

// The single-kernel checks of the doctor table, at the real model's sizes. Quantized operands
// are bound at odd byte shifts, as the tensors of an unpadded MLX shard are.

func checkABIProbe(c *checker) (string, error) {
	return "3×5 threadgroups of 7×3 threads, a window at byte 256", device.ABIProbe(c.dev)
}

// checkQMVFast returns the check of qmv_<bits> (add: qmv_add_<bits>, with the residual) on a
// random [out, in] matrix bound at byte shifts sh.
func checkQMVFast(bits int, add bool, what string, out, in func(*checkpoint.Config) int, sh [3]int) func(*checker) (string, error) {
	return func(c *checker) (string, error) {
		kernel := fmt.Sprintf("qmv_%d", bits)
		if add {
			kernel = fmt.Sprintf("qmv_add_%d", bits)
		}
		o, n := out(c.cfg), in(c.cfg)
		m, err := c.qmat(what, 0, o, n, bits)
		if err != nil {
			return "", err
		}
		x, y0 := c.vec(n, 1), c.vec(o, 1)
		want := make([]float32, o)
		if err := ref.MatVec(&m, 0, x, want); err != nil {
			return "", err
		}
		y := zeroF32(o)
		if add {
			y = f32s(y0)
			for i := range want {
				want[i] += y0[i]
			}
		}
		bufs := map[int][]byte{3: f32s(x), 4: y}
		bufs[5] = metal.PackDims(o, n, bits, bindShifted(bufs, 0, &m, sh))
		if err := c.run(kernel, [3]int{cdiv(o, qmvRows), 1, 1}, [3]int{qmvThreads, 1, 1}, bufs); err != nil {
			return "", err
		}
		c.near(kernel, unf32s(bufs[4]), want, budget.MatVec)
		return fmt.Sprintf("%s [%d, %d] %d-bit, shifts %d/%d/%d", what, o, n, bits, sh[0], sh[1], sh[2]), nil
	}
}

// checkQMVNorm returns the check of qmv_norm_<bits>: y = W · (x / rms(x) ⊙ nw) for the residual x,
// against ref's RMSNorm and mat-vec.
func checkQMVNorm(bits int, what string, out, in func(*checkpoint.Config) int, sh [3]int) func(*checker) (string, error) {
	return func(c *checker) (string, error) {
		kernel := fmt.Sprintf("qmv_norm_%d", bits)
		o, n := out(c.cfg), in(c.cfg)
		m, err := c.qmat(what, 0, o, n, bits)
		if err != nil {
			return "", err
		}
		x, nw := c.vec(n, 2), c.normWeight(n)
		want := make([]float32, o)
		if err := ref.MatVec(&m, 0, c.normed(x, nw), want); err != nil {
			return "", err
		}
		bufs := map[int][]byte{3: f32s(x), 4: f32s(nw), 5: zeroF32(o)}
		bufs[6] = metal.PackDims(o, n, bindShifted(bufs, 0, &m, sh), float32(c.cfg.RMSNormEps))
		if err := c.run(kernel, [3]int{cdiv(o, qmvRows), 1, 1}, [3]int{qmvThreads, 1, 1}, bufs); err != nil {
			return "", err
		}
		c.near(kernel, unf32s(bufs[5]), want, budget.MatVec)
		return fmt.Sprintf("%s [%d, %d] %d-bit, fused norm, shifts %d/%d/%d", what, o, n, bits, sh[0], sh[1], sh[2]), nil
	}
}

// checkQMM: qmm_t32 as the attention q_proj over a 7-token chunk with the fused residual add, [2·Hq·D, H].
func checkQMM(c *checker) (string, error) {
	const T = 7
	out, in := 2*c.cfg.NumHeads*c.cfg.HeadDim, c.cfg.HiddenSize
	m, err := c.qmat("q_proj", 0, out, in, 4)
	if err != nil {
		return "", err
	}
	x, y0 := c.rows(T, in, 1), c.rows(T, out, 1)
	want, err := ref.Linear(&m, 0, x)
	if err != nil {
		return "", err
	}
	for r := range want {
		for j := range want[r] {
			want[r][j] += y0[r][j]
		}
	}
	bufs := map[int][]byte{3: flatRows(x), 4: flatRows(y0)}
	bufs[5] = metal.PackDims(T, out, in, 4, 1, bindShifted(bufs, 0, &m, [3]int{3, 1, 2}))
	if err := c.run("qmm_t32", [3]int{cdiv(out, gemmTile), cdiv(T, gemmTile), 1}, [3]int{gemmThreads, 1, 1}, bufs); err != nil {
		return "", err
	}
	c.near("qmm_t32", unf32s(bufs[4]), unf32s(flatRows(want)), budget.Gemm)
	return fmt.Sprintf("T=%d × [%d, %d] 4-bit, fused add, shifts 3/1/2", T, out, in), nil
}

func checkRMSNorm(c *checker) (string, error) {
	const T = 3
	n := c.cfg.HiddenSize
	x, w := c.rows(T, n, 2), c.vec(n, 0.3)
	var want []float32
	for _, r := range x {
		o := make([]float32, n)
		ref.RMSNorm(o, r, w, c.cfg.RMSNormEps)
		want = append(want, o...)
	}
	bufs := map[int][]byte{0: flatRows(x), 1: f32s(w), 2: zeroF32(T * n), 3: metal.PackDims(n, float32(c.cfg.RMSNormEps))}
	if err := c.run("rms_norm", [3]int{T, 1, 1}, [3]int{256, 1, 1}, bufs); err != nil {
		return "", err
	}
	c.near("rms_norm", unf32s(bufs[2]), want, budget.Norm)
	return fmt.Sprintf("T=%d × H=%d", T, n), nil
}

// checkEmbed looks up rows of width H; the table has 1,031 rows rather than the vocabulary's
// 248,320 (a row's address is all the vocabulary changes, and quantizing the whole table in Go
// would take most of the check's time).
func checkEmbed(c *checker) (string, error) {
	const vocab = 1031
	h := c.cfg.HiddenSize
	m, err := c.qmat("embed", 0, vocab, h, 4)
	if err != nil {
		return "", err
	}
	ids := []int32{7, 0, vocab - 1, 7, 512}
	var want []float32
	for _, id := range ids {
		r, err := ref.Embed(&m, id)
		if err != nil {
			return "", err
		}
		want = append(want, r...)
	}
	bufs := map[int][]byte{3: i32s(ids), 4: zeroF32(len(ids) * h)}
	bufs[5] = metal.PackDims(vocab, h, 4, bindShifted(bufs, 0, &m, [3]int{1, 3, 2}))
	if err := c.run("embed", [3]int{cdiv(h, 256), len(ids), 1}, [3]int{256, 1, 1}, bufs); err != nil {
		return "", err
	}
	// Exact: both compute float32(scale·q) + bias from the same bf16 scale and bias.
	c.near("embed", unf32s(bufs[4]), want, 0)
	return fmt.Sprintf("%d ids × H=%d from a [%d, %d] 4-bit table, shifts 1/3/2", len(ids), h, vocab, h), nil
}

// checkSwiGLU: the routed experts' activations of one decode step, (TopK+1)·I values.
func checkSwiGLU(c *checker) (string, error) {
	n := (c.cfg.NumExpertsPerTok + 1) * c.cfg.MoEIntermediate
	g, u := c.vec(n, 3), c.vec(n, 1)
	want := make([]float32, n)
	for i := range want {
		want[i] = ref.SiLU(g[i]) * u[i]
	}
	bufs := map[int][]byte{0: f32s(g), 1: f32s(u), 2: metal.PackDims(n)}
	if err := c.run("swiglu", [3]int{cdiv(n, 256), 1, 1}, [3]int{256, 1, 1}, bufs); err != nil {
		return "", err
	}
	c.near("swiglu", unf32s(bufs[0]), want, budget.Elt)
	return fmt.Sprintf("%d values", n), nil
}

// checkLogitsTopK: the top 8 and the log-sum-exp of a vocabulary of logits, with a tie for first
// place in different parts (the lower id must come first), split as the engine splits it:
// logits_topk_part over parts of 16 logits per thread, logits_topk_merge in one threadgroup, each
// on the threadgroup size its pipeline allows.
func checkLogitsTopK(c *checker) (string, error) {
	const k, perThread = 8, 16
	n := c.cfg.VocabSize
	x := c.vec(n, 4)
	top := float32(math.Inf(-1))
	for _, v := range x {
		top = max(top, v)
	}
	x[n-1], x[3] = top+1, top+1
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return x[order[a]] > x[order[b]] })
	var z float64
	for _, v := range x {
		z += math.Exp(float64(v - x[order[0]]))
	}
	lse := float32(float64(x[order[0]]) + math.Log(z))
	partThreads, err := c.threads("logits_topk_part", 256)
	if err != nil {
		return "", err
	}
	chunk := perThread * partThreads
	parts := cdiv(n, chunk)
	mergeThreads, err := c.threads("logits_topk_merge", lanes(parts, 1024))
	if err != nil {
		return "", err
	}
	d := metal.PackDims(n, k, chunk, parts)
	pids, pvals, pstat := zeroF32(parts*k), zeroF32(parts*k), zeroF32(2*parts)
	if err := c.run("logits_topk_part", [3]int{parts, 1, 1}, [3]int{partThreads, 1, 1},
		map[int][]byte{0: f32s(x), 1: pids, 2: pvals, 3: pstat, 4: d}); err != nil {
		return "", err
	}
	bufs := map[int][]byte{0: pids, 1: pvals, 2: pstat, 3: zeroF32(k), 4: zeroF32(k), 5: zeroF32(1), 6: d}
	if err := c.run("logits_topk_merge", [3]int{1, 1, 1}, [3]int{mergeThreads, 1, 1}, bufs); err != nil {
		return "", err
	}
	wantIDs, wantVals := make([]int32, k), make([]float32, k)
	for j := range k {
		wantIDs[j], wantVals[j] = int32(order[j]), x[order[j]]
	}
	c.exact("logits_topk ids", uni32s(bufs[3]), wantIDs)
	c.near("logits_topk values", unf32s(bufs[4]), wantVals, 0)
	c.near("logits_topk lse", unf32s(bufs[5]), []float32{lse}, budget.LSE)
	return fmt.Sprintf("vocabulary %d, top %d, %d parts of %d threads, merge %d threads", n, k, parts, partThreads, mergeThreads), nil
}

// routeMargin is the smallest gap between consecutive router logits among a token's top k+1 that
// the router checks accept: the kernel's float32 logits differ from ref's by ~1e-6, so a larger
// gap makes the selected ids and their order a property of the data, not of rounding.
const routeMargin = 1e-3

// normed is ref's RMSNorm of x with weight nw, or x itself when nw is nil (an unfused kernel).
func (c *checker) normed(x, nw []float32) []float32 {
	if nw == nil {
		return x
	}
	o := make([]float32, len(x))
	ref.RMSNorm(o, x, nw, c.cfg.RMSNormEps)
	return o
}

// routedInput draws an input x whose router logits (of normed(x, nw)) have no near-tie among
// their top k+1.
func (c *checker) routedInput(router *checkpoint.Matrix, k int, nw []float32) ([]float32, error) {
	logits := make([]float32, router.Out)
	for range 100 {
		x := c.vec(router.In, 1)
		if err := ref.MatVec(router, 0, c.normed(x, nw), logits); err != nil {
			return nil, err
		}
		s := slices.Clone(logits)
		slices.Sort(s)
		slices.Reverse(s)
		clear := true
		for i := 0; i < k && i+1 < len(s); i++ {
			clear = clear && s[i]-s[i+1] >= routeMargin
		}
		if clear {
			return x, nil
		}
	}
	return nil, fmt.Errorf("no input without router near-ties in 100 draws")
}

// route is ref's routing of x: expert ids and weights, and the shared expert's gate logit.
func route(m *checkpoint.MoE, x []float32, k int) (ids []int32, wts []float32, sgate float32, err error) {
	logits, sg := make([]float32, m.Router.Out), make([]float32, 1)
	if err := ref.MatVec(&m.Router, 0, x, logits); err != nil {
		return nil, nil, 0, err
	}
	if err := ref.MatVec(&m.SharedEG, 0, x, sg); err != nil {
		return nil, nil, 0, err
	}
	idx, w, err := ref.Route(logits, k)
	if err != nil {
		return nil, nil, 0, err
	}
	for _, i := range idx {
		ids = append(ids, int32(i))
	}
	return ids, w, sg[0], nil
}

// checkRouter returns the check of router_qmv_<bits> (norm: router_qmv_norm_<bits>, which norms
// the residual itself) and router_softmax_topk: the real router (E experts × H; 8-bit in the MLX
// checkpoint) and shared expert gate for 3 tokens, misaligned two ways, then the softmax top-k on
// the threadgroup size its pipeline allows.
func checkRouter(bits int, norm bool) func(*checker) (string, error) {
	return func(c *checker) (string, error) {
		const T = 3
		e, h, k := c.cfg.NumExperts, c.cfg.HiddenSize, c.cfg.NumExpertsPerTok
		router, err := c.qmat("router", 0, e, h, bits)
		if err != nil {
			return "", err
		}
		seg, err := c.qmat("shared_expert_gate", 0, 1, h, bits)
		if err != nil {
			return "", err
		}
		m := &checkpoint.MoE{Router: router, SharedEG: seg}
		var nw []float32
		if norm {
			nw = c.normWeight(h)
		}
		var x [][]float32
		var wantIDs []int32
		var wantW, wantG []float32
		for range T {
			xi, err := c.routedInput(&m.Router, k, nw)
			if err != nil {
				return "", err
			}
			ids, w, g, err := route(m, c.normed(xi, nw), k)
			if err != nil {
				return "", err
			}
			x, wantIDs, wantW, wantG = append(x, xi), append(wantIDs, ids...), append(wantW, w...), append(wantG, g)
		}
		// Buffers after the weights: x, [nw,] logits, sgate, dims.
		at := 6
		bufs := map[int][]byte{at: flatRows(x)}
		if norm {
			at++
			bufs[at] = f32s(nw)
		}
		lg, sgb := at+1, at+2
		bufs[lg], bufs[sgb] = zeroF32(T*e), zeroF32(T)
		rsh := bindShifted(bufs, 0, &m.Router, [3]int{1, 2, 3})
		gsh := bindShifted(bufs, 3, &m.SharedEG, [3]int{3, 1, 2})
		kernel := fmt.Sprintf("router_qmv_%d", bits)
		bufs[at+3] = metal.PackDims(e, h, rsh, gsh)
		if norm {
			kernel = fmt.Sprintf("router_qmv_norm_%d", bits)
			bufs[at+3] = metal.PackDims(e, h, rsh, gsh, float32(c.cfg.RMSNormEps))
		}
		if err := c.run(kernel, [3]int{cdiv(e+1, qmvRows), T, 1}, [3]int{qmvThreads, 1, 1}, bufs); err != nil {
			return "", err
		}
		threads, err := c.threads("router_softmax_topk", 1024)
		if err != nil {
			return "", err
		}
		per := max(1, min(T, threads/32)) // one SIMD group per token
		top := map[int][]byte{0: bufs[lg], 1: zeroF32(T * k), 2: zeroF32(T * k), 3: metal.PackDims(e, k, T)}
		if err := c.run("router_softmax_topk", [3]int{cdiv(T, per), 1, 1}, [3]int{32 * per, 1, 1}, top); err != nil {
			return "", err
		}
		c.exact("router ids", uni32s(top[1]), wantIDs)
		c.near("router weights", unf32s(top[2]), wantW, budget.Route)
		c.near("shared gate logit", unf32s(bufs[sgb]), wantG, budget.Route)
		return fmt.Sprintf("T=%d, E=%d × H=%d %d-bit, top %d, fused norm %v", T, e, h, bits, k, norm), nil
	}
}

// checkMoEGrouping: a prefill chunk's T·k expert slots grouped by expert on the GPU (count,
// prefix sum, scatter), against the grouping computed in Go; the order within an expert is the
// atomics' and is compared sorted.
func checkMoEGrouping(c *checker) (string, error) {
	e, n := c.cfg.NumExperts, 37*c.cfg.NumExpertsPerTok
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(c.rng.IntN(e))
	}
	gd := metal.PackDims(n, e)
	counts, offs, cursor, ord := zeroF32(e), zeroF32(e+1), zeroF32(e), zeroF32(n)
	if err := c.run("moe_count", [3]int{cdiv(n, 256), 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: i32s(ids), 1: counts, 2: gd}); err != nil {
		return "", err
	}
	if err := c.run("moe_scan", [3]int{1, 1, 1}, [3]int{lanes(e, 1024), 1, 1}, map[int][]byte{0: counts, 1: offs, 2: cursor, 3: gd}); err != nil {
		return "", err
	}
	if err := c.run("moe_scatter", [3]int{cdiv(n, 256), 1, 1}, [3]int{256, 1, 1}, map[int][]byte{0: i32s(ids), 1: cursor, 2: ord, 3: gd}); err != nil {
		return "", err
	}
	tl := zeroF32(e + 1)
	if err := c.run("moe_tiles", [3]int{1, 1, 1}, [3]int{lanes(e, 1024), 1, 1}, map[int][]byte{0: offs, 1: tl, 2: gd}); err != nil {
		return "", err
	}
	wantOff, wantOrd := groupSlots(ids, e)
	offsets, order := uni32s(offs), uni32s(ord)
	c.exact("moe_scan offsets", offsets, wantOff)
	c.exact("moe_tiles", uni32s(tl), tilesOf(wantOff))
	if len(c.fails) == 0 {
		for x := range e {
			slices.Sort(order[offsets[x]:offsets[x+1]])
		}
		c.exact("moe_scatter order", order, wantOrd)
	}
	return fmt.Sprintf("%d slots over E=%d", n, e), nil
}

// groupSlots is the expert grouping of slots: offsets [E+1] and the slots of each expert in
// ascending order.
func groupSlots(ids []int32, experts int) (offsets, order []int32) {
	offsets = make([]int32, experts+1)
	for x := range experts {
		offsets[x] = int32(len(order))
		for i, id := range ids {
			if int(id) == x {
				order = append(order, int32(i))
			}
		}
	}
	offsets[experts] = int32(len(order))
	return offsets, order
}

// tilesOf is the tile32 work list's prefix: tiles[e] = Σ_{e'<e} ⌈slots of e' / 32⌉, tiles[E] the total.
func tilesOf(offsets []int32) []int32 {
	t := make([]int32, len(offsets))
	for e := 1; e < len(offsets); e++ {
		t[e] = t[e-1] + int32(cdiv(int(offsets[e]-offsets[e-1]), gemmTile))
	}
	return t
}
