package kernelcheck

import (
	"fmt"
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal"
	"github.com/lily-engine/lily/metal/budget"
	"github.com/lily-engine/lily/ref"
)

// The doctor table's checks of the multi-kernel steps (MoE, attention, DeltaNet) at the real
// model's sizes, each against ref's layer or an exact Go composition of ref's functions.

// moeStoredExperts is how many experts the MoE checks store: each expert's shapes are the real
// ones (I×H), and the top-k routing picks among these; storing all 256 would only add Go
// quantization time.
const moeStoredExperts = 16

// moeSetup is a MoE block of the real sizes with moeStoredExperts experts, and cfg saying so.
func (c *checker) moeSetup(bits int) (*checkpoint.Config, *checkpoint.MoE, error) {
	cfg := *c.cfg
	cfg.NumExperts = moeStoredExperts
	h, e, in, is := cfg.HiddenSize, cfg.NumExperts, cfg.MoEIntermediate, cfg.SharedIntermediate
	m := &checkpoint.MoE{}
	for _, q := range []struct {
		dst               *checkpoint.Matrix
		name              string
		experts, out, inw int
		bits              int
	}{{&m.Router, "router", 0, e, h, 8}, {&m.Gate, "gate", e, in, h, bits}, {&m.Up, "up", e, in, h, bits},
		{&m.Down, "down", e, h, in, bits}, {&m.SharedGate, "shared_gate", 0, is, h, bits}, {&m.SharedUp, "shared_up", 0, is, h, bits},
		{&m.SharedDown, "shared_down", 0, h, is, bits}, {&m.SharedEG, "shared_expert_gate", 0, 1, h, 8}} {
		var err error
		if *q.dst, err = c.qmat(q.name, q.experts, q.out, q.inw, q.bits); err != nil {
			return nil, nil, err
		}
	}
	return &cfg, m, nil
}

// moeWant is h0 + ref.MoEBlock(x) per token, flat.
func moeWant(cfg *checkpoint.Config, m *checkpoint.MoE, x, h0 [][]float32) ([]float32, error) {
	var out []float32
	for i := range x {
		y, err := ref.MoEBlock(cfg, m, x[i])
		if err != nil {
			return nil, err
		}
		for j := range y {
			y[j] += h0[i][j]
		}
		out = append(out, y...)
	}
	return out, nil
}

// moeInputs draws T router-tie-free tokens and residuals and routes them with ref; with a norm
// weight nw the tokens are a fused kernel's inputs, routed (and to be computed on) normed.
func (c *checker) moeInputs(m *checkpoint.MoE, T, k, h int, nw []float32) (x, h0 [][]float32, ids []int32, wts, sgate []float32, err error) {
	for range T {
		xi, err := c.routedInput(&m.Router, k, nw)
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		id, w, g, err := route(m, c.normed(xi, nw), k)
		if err != nil {
			return nil, nil, nil, nil, nil, err
		}
		x, ids, wts, sgate = append(x, xi), append(ids, id...), append(wts, w...), append(sgate, g)
	}
	return x, c.rows(T, h, 1), ids, wts, sgate, nil
}

// checkMoEDecode returns the check of one decode step's routed and shared experts
// (moe_gate_up_<bits> — norm: moe_gate_up_norm_<bits>, which norms the residual itself — and
// moe_down_<bits> with the residual) from ref's routing, every operand at its own byte shift.
func checkMoEDecode(bits int, norm bool) func(*checker) (string, error) {
	return func(c *checker) (string, error) {
		cfg, m, err := c.moeSetup(bits)
		if err != nil {
			return "", err
		}
		h, in, is, k := cfg.HiddenSize, cfg.MoEIntermediate, cfg.SharedIntermediate, cfg.NumExpertsPerTok
		var nw []float32
		if norm {
			nw = c.normWeight(h)
		}
		x, h0, ids, wts, sgate, err := c.moeInputs(m, 1, k, h, nw)
		if err != nil {
			return "", err
		}
		stride := max(in, is)
		act, hb := zeroF32((k+1)*stride), flatRows(h0)
		up := map[int][]byte{12: i32s(ids), 13: flatRows(x)}
		ai, kernel := 14, fmt.Sprintf("moe_gate_up_%d", bits)
		if norm {
			up[14], ai, kernel = f32s(nw), 15, fmt.Sprintf("moe_gate_up_norm_%d", bits)
		}
		up[ai] = act
		down := map[int][]byte{6: i32s(ids), 7: f32s(wts), 8: f32s(sgate), 9: act, 10: hb}
		sh := [][3]int{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}, {2, 1, 3}, {3, 2, 1}}
		md := metal.PackDims(h, in, is, k, bits, stride, bindShifted(up, 0, &m.Gate, sh[0]), bindShifted(up, 3, &m.Up, sh[1]),
			bindShifted(up, 6, &m.SharedGate, sh[2]), bindShifted(up, 9, &m.SharedUp, sh[3]),
			bindShifted(down, 0, &m.Down, sh[4]), bindShifted(down, 3, &m.SharedDown, sh[5]))
		up[ai+1], down[11] = md, md
		if norm {
			up[ai+2] = metal.PackDims(h, float32(cfg.RMSNormEps))
		}
		if err := c.run(kernel, [3]int{cdiv(stride, qmvRows), k + 1, 1}, [3]int{qmvThreads, 1, 1}, up); err != nil {
			return "", err
		}
		down[9] = up[ai]
		if err := c.run(fmt.Sprintf("moe_down_%d", bits), [3]int{cdiv(h, qmvRows), 1, 1}, [3]int{qmvThreads, 1, 1}, down); err != nil {
			return "", err
		}
		xn := make([][]float32, len(x))
		for i := range x {
			xn[i] = c.normed(x[i], nw)
		}
		want, err := moeWant(cfg, m, xn, h0)
		if err != nil {
			return "", err
		}
		c.near("moe decode", unf32s(down[10]), want, budget.MoE)
		return fmt.Sprintf("H=%d, I=%d, Is=%d, top %d of %d stored experts, %d-bit, fused norm %v, all operands shifted",
			h, in, is, k, cfg.NumExperts, bits, norm), nil
	}
}

// checkMoEPrefill: a 9-token chunk's tile32 expert GEMMs (moe_gemm_t32_gate_up, _down) over
// ref's routing and Go's grouping and work list, then moe_combine with ref's shared expert and the residual.
func checkMoEPrefill(c *checker) (string, error) {
	const T = 9
	cfg, m, err := c.moeSetup(4)
	if err != nil {
		return "", err
	}
	h, in, is, k, e := cfg.HiddenSize, cfg.MoEIntermediate, cfg.SharedIntermediate, cfg.NumExpertsPerTok, cfg.NumExperts
	x, h0, ids, wts, sgate, err := c.moeInputs(m, T, k, h, nil)
	if err != nil {
		return "", err
	}
	offsets, order := groupSlots(ids, e)
	tiles := tilesOf(offsets)
	n := T * k
	gu := map[int][]byte{6: flatRows(x), 7: i32s(order), 8: i32s(offsets), 9: i32s(tiles), 10: zeroF32(n * in)}
	dn := map[int][]byte{4: i32s(order), 5: i32s(offsets), 6: i32s(tiles), 7: zeroF32(n * h)}
	gd := metal.PackDims(k, h, in, 4, e, bindShifted(gu, 0, &m.Gate, [3]int{1, 2, 3}),
		bindShifted(gu, 3, &m.Up, [3]int{2, 3, 1}), bindShifted(dn, 0, &m.Down, [3]int{3, 1, 2}))
	gu[11], dn[8] = gd, gd
	tileBound := cdiv(n, gemmTile) + min(e, n) // a bound on the work list's tiles
	if err := c.run("moe_gemm_t32_gate_up", [3]int{cdiv(in, gemmTile), tileBound, 1}, [3]int{gemmThreads, 1, 1}, gu); err != nil {
		return "", err
	}
	dn[3] = gu[10]
	if err := c.run("moe_gemm_t32_down", [3]int{cdiv(h, gemmTile), tileBound, 1}, [3]int{gemmThreads, 1, 1}, dn); err != nil {
		return "", err
	}
	sg, err := ref.Linear(&m.SharedGate, 0, x)
	if err != nil {
		return "", err
	}
	su, err := ref.Linear(&m.SharedUp, 0, x)
	if err != nil {
		return "", err
	}
	for t := range sg {
		for j := range sg[t] {
			sg[t][j] = ref.SiLU(sg[t][j]) * su[t][j]
		}
	}
	shared, err := ref.Linear(&m.SharedDown, 0, sg)
	if err != nil {
		return "", err
	}
	y := flatRows(h0)
	bufs := map[int][]byte{0: dn[7], 1: f32s(wts), 2: f32s(sgate), 3: flatRows(shared), 4: y,
		5: metal.PackDims(h, in, is, k, 4, max(in, is), 0, 0, 0, 0, 0, 0)}
	if err := c.run("moe_combine", [3]int{cdiv(h, 256), T, 1}, [3]int{256, 1, 1}, bufs); err != nil {
		return "", err
	}
	want, err := moeWant(cfg, m, x, h0)
	if err != nil {
		return "", err
	}
	c.near("moe prefill", unf32s(bufs[4]), want, budget.MoE)
	return fmt.Sprintf("T=%d, H=%d, I=%d, top %d of %d stored experts, 4-bit, shifted", T, h, in, k, e), nil
}

// attnGeom is the real attention geometry.
type attnGeom struct{ hq, hkv, d, rot int }

func (c *checker) attnGeom() attnGeom {
	return attnGeom{c.cfg.NumHeads, c.cfg.NumKVHeads, c.cfg.HeadDim, c.cfg.RotaryDim()}
}

// attnDims packs the kernels' AttnDims.
func (c *checker) attnDims(s attnGeom, pos0, T, n, split int) []byte {
	return metal.PackDims(s.hq, s.hkv, s.d, s.rot, pos0, T, n, split, float32(c.cfg.RMSNormEps), float32(1/math.Sqrt(float64(s.d))))
}

// refAttend is Σ softmax(q·K)·V times sigmoid(gate) for every query head of one token over the
// first n cache rows. q, gate: [Hq·D]; kc, vc: [≥n, Hkv·D] → [Hq·D].
func refAttend(s attnGeom, q, gate, kc, vc []float32, n int) []float32 {
	var out []float32
	for h := 0; h < s.hq; h++ {
		g := h / (s.hq / s.hkv)
		keys, vals := make([][]float32, n), make([][]float32, n)
		for j := range keys {
			at := (j*s.hkv + g) * s.d
			keys[j], vals[j] = kc[at:at+s.d], vc[at:at+s.d]
		}
		o := ref.AttendHead(q[h*s.d:(h+1)*s.d], keys, vals, float32(1/math.Sqrt(float64(s.d))))
		for i := range o {
			o[i] *= ref.Sigmoid(gate[h*s.d+i])
		}
		out = append(out, o...)
	}
	return out
}

// checkAttnPrep: q/k RMSNorm and RoPE, the gate split, and the fp16 cache write of a 2-token chunk
// at position 7.
func checkAttnPrep(c *checker) (string, error) {
	const pos0, T = 7, 2
	s, eps, theta := c.attnGeom(), c.cfg.RMSNormEps, c.cfg.RopeTheta
	rows := pos0 + T + 2
	q2, kk, v := c.rows(T, 2*s.hq*s.d, 1), c.rows(T, s.hkv*s.d, 1), c.rows(T, s.hkv*s.d, 1)
	qn, kn := c.normWeight(s.d), c.normWeight(s.d)
	kc, vc := c.vec(rows*s.hkv*s.d, 1), c.vec(rows*s.hkv*s.d, 1)
	var cs []float32
	for t := range T {
		co, si := ref.RopeCosSin(pos0+t, s.rot, theta)
		cs = append(append(cs, co...), si...)
	}
	bufs := map[int][]byte{0: flatRows(q2), 1: flatRows(kk), 2: flatRows(v), 3: f32s(qn), 4: f32s(kn),
		5: f32s(cs), 6: zeroF32(T * s.hq * s.d), 7: zeroF32(T * s.hq * s.d), 8: f16s(kc), 9: f16s(vc),
		10: c.attnDims(s, pos0, T, pos0+T, 1)}
	if err := c.run("attn_prep", [3]int{s.hq + s.hkv, T, 1}, [3]int{32, 1, 1}, bufs); err != nil {
		return "", err
	}
	normRope := func(x, w []float32, pos int) []float32 {
		out := make([]float32, len(x))
		ref.RMSNorm(out, x, w, eps)
		co, si := ref.RopeCosSin(pos, s.rot, theta)
		ref.ApplyRoPE(out, co, si)
		return out
	}
	var wantQ, wantG []float32
	for tok := range T {
		for h := range s.hq {
			head := q2[tok][2*h*s.d : (2*h+2)*s.d]
			wantQ = append(wantQ, normRope(head[:s.d], qn, pos0+tok)...)
			wantG = append(wantG, head[s.d:]...)
		}
		row := (pos0 + tok) * s.hkv * s.d
		for h := range s.hkv {
			copy(kc[row+h*s.d:], normRope(kk[tok][h*s.d:(h+1)*s.d], kn, pos0+tok))
		}
		copy(vc[row:], v[tok])
	}
	c.near("attn_prep q", unf32s(bufs[6]), wantQ, budget.Attn)
	c.near("attn_prep gate", unf32s(bufs[7]), wantG, 0)
	c.near("attn_prep k cache", unf16s(bufs[8]), roundF16(kc), budget.Attn+budget.KVF16Ulp)
	c.near("attn_prep v cache", unf16s(bufs[9]), roundF16(vc), 0)
	return fmt.Sprintf("T=%d at position %d, Hq=%d, Hkv=%d, D=%d, rot %d", T, pos0, s.hq, s.hkv, s.d, s.rot), nil
}

// checkAttnDecode: one query token over 1,037 cached keys in splits of 64 (a partial last split).
func checkAttnDecode(c *checker) (string, error) {
	const n, split = 1037, 64
	s := c.attnGeom()
	q, gate := c.vec(s.hq*s.d, 0.5), c.vec(s.hq*s.d, 1)
	kc, vc := roundF16(c.vec(n*s.hkv*s.d, 1)), roundF16(c.vec(n*s.hkv*s.d, 1))
	splits := cdiv(n, split)
	d := c.attnDims(s, n-1, 1, n, split)
	part, out := zeroF32(s.hq*splits*(s.d+2)), zeroF32(s.hq*s.d)
	if err := c.run("attn_decode_split", [3]int{s.hkv, splits, 1}, [3]int{32 * (s.hq / s.hkv), 1, 1},
		map[int][]byte{0: f32s(q), 1: f16s(kc), 2: f16s(vc), 3: part, 4: d}); err != nil {
		return "", err
	}
	if err := c.run("attn_decode_combine", [3]int{s.hq, 1, 1}, [3]int{32, 1, 1},
		map[int][]byte{0: part, 1: f32s(gate), 2: out, 3: d}); err != nil {
		return "", err
	}
	c.near("attn_decode", unf32s(out), refAttend(s, q, gate, kc, vc, n), budget.Attn)
	return fmt.Sprintf("%d keys in splits of %d, Hq=%d, Hkv=%d, D=%d", n, split, s.hq, s.hkv, s.d), nil
}

// checkAttnPrefill: a 37-token chunk after 13 cached positions (neither a multiple of the tiles).
func checkAttnPrefill(c *checker) (string, error) {
	const pos0, T = 13, 37
	s, n := c.attnGeom(), pos0+T
	q, gate := c.vec(T*s.hq*s.d, 0.5), c.vec(T*s.hq*s.d, 1)
	kc, vc := roundF16(c.vec(n*s.hkv*s.d, 1)), roundF16(c.vec(n*s.hkv*s.d, 1))
	out := zeroF32(T * s.hq * s.d)
	if err := c.run("attn_prefill", [3]int{cdiv(T, 32), s.hq, 1}, [3]int{128, 1, 1}, map[int][]byte{0: f32s(q),
		1: f16s(kc), 2: f16s(vc), 3: f32s(gate), 4: out, 5: c.attnDims(s, pos0, T, n, 1)}); err != nil {
		return "", err
	}
	var want []float32
	w := s.hq * s.d
	for tok := range T {
		want = append(want, refAttend(s, q[tok*w:(tok+1)*w], gate[tok*w:(tok+1)*w], kc, vc, pos0+tok+1)...)
	}
	c.near("attn_prefill", unf32s(out), want, budget.Attn)
	return fmt.Sprintf("T=%d after %d cached, Hq=%d, Hkv=%d, D=%d", T, pos0, s.hq, s.hkv, s.d), nil
}

// checkDeltaNet: a real-width DeltaNet layer on a 5-token chunk from the state 3 tokens of ref
// left: projections and out_proj by qmm_t32 (checked above), the conv and the recurrent scan by
// deltanet_conv and deltanet_scan, against ref.GatedDeltaNet's output and both states.
func checkDeltaNet(c *checker) (string, error) {
	const prefix, T = 3, 5
	cfg := c.cfg
	h, hk, hv, dk, dv, kc, cd := cfg.HiddenSize, cfg.LinearNumKeyHeads, cfg.LinearNumValueHeads,
		cfg.LinearKeyHeadDim, cfg.LinearValueHeadDim, cfg.LinearConvKernel, cfg.ConvDim()
	w := &checkpoint.DeltaNet{Conv: c.vec(cd*kc, 0.5), ALog: c.vec(hv, 1), DtBias: c.vec(hv, 1), Norm: c.normWeight(dv)}
	for _, q := range []struct {
		dst     *checkpoint.Matrix
		name    string
		out, in int
	}{{&w.QKV, "in_proj_qkv", cd, h}, {&w.Z, "in_proj_z", cfg.ValueDim(), h}, {&w.B, "in_proj_b", hv, h},
		{&w.A, "in_proj_a", hv, h}, {&w.Out, "out_proj", h, cfg.ValueDim()}} {
		var err error
		if *q.dst, err = c.qmat(q.name, 0, q.out, q.in, 4); err != nil {
			return "", err
		}
	}
	st := ref.NewDeltaNetState(cfg)
	if _, err := ref.GatedDeltaNet(cfg, w, c.rows(prefix, h, 1), st, true); err != nil {
		return "", err
	}
	cst, state := flatRows(st.Conv), flatRows(st.S)
	x, h0 := c.rows(T, h, 1), c.rows(T, h, 1)
	qmm := func(m *checkpoint.Matrix, in []byte, y []byte, add int) error {
		bufs := map[int][]byte{3: in, 4: y}
		bufs[5] = metal.PackDims(T, m.Out, m.In, m.Bits, add, bindShifted(bufs, 0, m, [3]int{}))
		err := c.run("qmm_t32", [3]int{cdiv(m.Out, gemmTile), cdiv(T, gemmTile), 1}, [3]int{gemmThreads, 1, 1}, bufs)
		copy(y, bufs[4])
		return err
	}
	qkv, z, a, b := zeroF32(T*cd), zeroF32(T*cfg.ValueDim()), zeroF32(T*hv), zeroF32(T*hv)
	for i, m := range []*checkpoint.Matrix{&w.QKV, &w.Z, &w.A, &w.B} {
		if err := qmm(m, flatRows(x), [][]byte{qkv, z, a, b}[i], 0); err != nil {
			return "", err
		}
	}
	y := zeroF32(T * hv * dv)
	d := metal.PackDims(hk, hv, dk, dv, kc, cd, T, float32(1e-6), float32(cfg.RMSNormEps))
	conv := map[int][]byte{0: qkv, 1: f32s(w.Conv), 2: cst, 3: d}
	if err := c.run("deltanet_conv", [3]int{cdiv(cd, 256), 1, 1}, [3]int{256, 1, 1}, conv); err != nil {
		return "", err
	}
	scan := map[int][]byte{0: conv[0], 1: z, 2: a, 3: b, 4: f32s(w.ALog), 5: f32s(w.DtBias), 6: f32s(w.Norm),
		7: state, 8: y, 9: d}
	if err := c.run("deltanet_scan", [3]int{hv, 1, 1}, [3]int{32 * cdiv(dv, 8), 1, 1}, scan); err != nil {
		return "", err
	}
	out := flatRows(h0)
	if err := qmm(&w.Out, scan[8], out, 1); err != nil {
		return "", err
	}
	want, err := ref.GatedDeltaNet(cfg, w, x, st, true)
	if err != nil {
		return "", err
	}
	for i := range want {
		for j := range want[i] {
			want[i][j] += h0[i][j]
		}
	}
	c.near("deltanet layer", unf32s(out), unf32s(flatRows(want)), budget.DeltaNet)
	c.near("deltanet recurrent state", unf32s(scan[7]), unf32s(flatRows(st.S)), budget.DeltaNet)
	c.near("deltanet conv state", unf32s(conv[2]), unf32s(flatRows(st.Conv)), budget.MatVec)
	return fmt.Sprintf("T=%d after %d tokens, H=%d, Hk=%d, Hv=%d, Dk=%d, Dv=%d, conv %d", T, prefix, h, hk, hv, dk, dv, kc), nil
}
