package fast

import (
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// deltanetNormEps is the epsilon of the q/k L2 normalisation (model.md §4.3 step 5).
const deltanetNormEps = 1e-6

// deltanetDecode: b.r = DeltaNet(b.a) for one token, updating the conv and recurrent state.
func (s *Session) deltanetDecode(li int, l *layer) {
	m, b, d := s.m, s.dec, &s.m.dims
	s.vecs(append(b.jobs[:0], vecJob{l.qkv, b.a, b.qkv}, vecJob{l.z, b.a, b.z}, vecJob{l.b, b.a, b.bb}, vecJob{l.a, b.a, b.aa}))
	s.cur = li
	m.run.Run(d.Hk, s.tasks.step)
	s.vecs(append(b.jobs[:0], vecJob{l.out, b.y, b.r}))
}

// deltanetPrefill: r = DeltaNet(a) for t tokens. a, r: [t, H].
func (s *Session) deltanetPrefill(li int, l *layer, a []float32, t int, r []float32) {
	m, d := s.m, &s.m.dims
	vd := d.Hv * d.Dv
	defer s.pf.release(s.pf.mark())
	qkv := s.pf.take(t * d.ConvDim())
	z := s.pf.take(t * vd)
	bb := s.pf.take(t * d.Hv)
	aa := s.pf.take(t * d.Hv)
	s.muls(mulJob{l.qkv, a, t, qkv, d.ConvDim()}, mulJob{l.z, a, t, z, vd}, mulJob{l.b, a, t, bb, d.Hv}, mulJob{l.a, a, t, aa, d.Hv})
	conv := s.conv[li]
	s.work.ready(m.run.Workers())
	m.run.RunTask(d.ConvDim(), workerTask(func(w, lo, hi int) {
		convSeq(m.ops, d, l.convT, conv, qkv, t, s.work.floats(w, d.K*(hi-lo)), lo, hi)
	}))
	g := s.pf.take(t * d.Hv)
	beta := s.pf.take(t * d.Hv)
	m.run.Run(t, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			normQK(m.ops, d, qkv[i*d.ConvDim():(i+1)*d.ConvDim()], m.qkScale(), 0, d.Hk)
			gates(l.aLog, l.dtBias, aa[i*d.Hv:(i+1)*d.Hv], bb[i*d.Hv:(i+1)*d.Hv], g[i*d.Hv:(i+1)*d.Hv], beta[i*d.Hv:(i+1)*d.Hv])
		}
	})
	o := s.pf.take(t * vd)
	y := s.pf.take(t * vd)
	ssm := s.ssm[li]
	m.run.RunTask(d.Hv, workerTask(func(w, lo, hi int) {
		deltanetChunked(m.ops, d, t, qkv, d.ConvDim(), qkv[2*d.Hk*d.Dk:], d.ConvDim(), g, beta, ssm, o, s.scr[w], lo, hi, s.pos == 0)
		for i := 0; i < t; i++ {
			for h := lo; h < hi; h++ {
				at := i*vd + h*d.Dv
				gatedNorm(m.ops, o[at:at+d.Dv], z[at:at+d.Dv], l.gn, y[at:at+d.Dv], m.eps())
			}
		}
	}))
	s.muls(mulJob{l.out, y, t, r, m.cfg.HiddenSize})
}

// deltanetDecodeTask returns the DeltaNet decode's parallel loop (decodeTasks) on layer s.cur,
// over key heads [lo, hi) and the value heads that read them: the conv of exactly their channels
// (q and k of the key heads, v of the value heads: every channel in one range, so its state shifts
// once), their q/k norms and gates, the delta rule and the gated norm. One dispatch, where the
// conv, the norms and gates and the heads were two and a serial step between.
func (s *Session) deltanetDecodeTask() func(lo, hi int) {
	return func(lo, hi int) {
		d, b, l, ops := &s.m.dims, s.dec, &s.m.layers[s.cur], s.m.ops
		rep, kw := d.Hv/d.Hk, d.Hk*d.Dk
		vlo, vhi := lo*rep, hi*rep
		st := s.conv[s.cur]
		for _, r := range [3][2]int{{lo * d.Dk, hi * d.Dk}, {kw + lo*d.Dk, kw + hi*d.Dk}, {2*kw + vlo*d.Dv, 2*kw + vhi*d.Dv}} {
			convStep(ops, d, l.convT, st, b.qkv, b.u, r[0], r[1])
		}
		normQK(ops, d, b.u, s.m.qkScale(), lo, hi)
		gates(l.aLog[vlo:vhi], l.dtBias[vlo:vhi], b.aa[vlo:vhi], b.bb[vlo:vhi], b.g[vlo:vhi], b.beta[vlo:vhi])
		deltanetStep(ops, d, b.u, b.u[2*kw:], b.g, b.beta, s.ssm[s.cur], b.o, b.acc, vlo, vhi)
		for h := vlo; h < vhi; h++ {
			gatedNorm(ops, b.o[h*d.Dv:(h+1)*d.Dv], b.z[h*d.Dv:(h+1)*d.Dv], l.gn, b.y[h*d.Dv:(h+1)*d.Dv], s.m.eps())
		}
	}
}

// normQK L2-normalises the q and k heads [lo, hi) of one token's conv output in place, scaling q by
// s: as l2normScale, on the vector kernels. u: [C] with q heads then k heads first.
func normQK(ops vecOps, d *checkpoint.Dims, u []float32, s float32, lo, hi int) {
	for _, h := range [2][2]int{{lo, hi}, {d.Hk + lo, d.Hk + hi}} {
		for i := h[0]; i < h[1]; i++ {
			sc := float32(1)
			if i < d.Hk {
				sc = s
			}
			x := u[i*d.Dk : (i+1)*d.Dk]
			r := sc / float32(math.Sqrt(float64(ops.dot(x, x)+deltanetNormEps)))
			ops.scaleAxpy(x, r, 0, x)
		}
	}
}

// convStep runs the causal depthwise conv for one token over channels [lo, hi) and applies SiLU,
// updating the state: the taps in convSeq's order (oldest state row first, the new token last), so
// a decoded token's conv is what a prefill of it computes. x: [C] pre-conv projection of the new
// token; state: [(K-1)*C] the previous K-1 rows, oldest first; wt: [K, C] the kernel transposed
// (convWeightsT), wt[(K-1)*C+c] multiplying the current token; out: [C].
func convStep(ops vecOps, d *checkpoint.Dims, wt, state, x, out []float32, lo, hi int) {
	k, c := d.K, d.ConvDim()
	o := out[lo:hi]
	if k == 4 { // the model's kernel: one fused pass (cpu.ConvSiLU4), the same bits
		ops.k.ConvSiLU4(o, convTaps4(wt, c, lo, hi), [4][]float32{state[lo:hi], state[c+lo : c+hi], state[2*c+lo : 2*c+hi], x[lo:hi]})
	} else {
		clear(o)
		for j := 0; j < k-1; j++ {
			ops.mulAdd(o, wt[j*c+lo:j*c+hi], state[j*c+lo:j*c+hi])
		}
		ops.mulAdd(o, wt[(k-1)*c+lo:(k-1)*c+hi], x[lo:hi])
		ops.silu(o)
	}
	for j := 0; j < k-2; j++ {
		copy(state[j*c+lo:j*c+hi], state[(j+1)*c+lo:(j+1)*c+hi])
	}
	copy(state[(k-2)*c+lo:(k-2)*c+hi], x[lo:hi])
}

// convTaps4 returns the 4 taps of the transposed conv kernel wt: [4, C] (c = C) over channels
// [lo, hi), as cpu.ConvSiLU4 takes them.
func convTaps4(wt []float32, c, lo, hi int) [4][]float32 {
	return [4][]float32{wt[lo:hi], wt[c+lo : c+hi], wt[2*c+lo : 2*c+hi], wt[3*c+lo : 3*c+hi]}
}

// convWeightsT returns the conv kernel w: [C, K] transposed to [K, C], the layout convStep reads
// a contiguous run of channels from.
func convWeightsT(w []float32, c, k int) []float32 {
	wt := make([]float32, len(w))
	for ch := 0; ch < c; ch++ {
		for j := 0; j < k; j++ {
			wt[j*c+ch] = w[ch*k+j]
		}
	}
	return wt
}

// convSeq runs the conv over T tokens of one channel range [lo, hi), token by token so that every
// access is a contiguous run of channels. x: [T, C] pre-conv rows (overwritten with the SiLU'd conv
// output); state: [(K-1)*C] updated to the last K-1 pre-conv rows; wt: [K, C] the kernel transposed
// (convWeightsT). tmp: at least K·(hi-lo) scratch, K row buffers holding the last K pre-conv rows
// (a ring; slot i mod K is token i's).
func convSeq(ops vecOps, d *checkpoint.Dims, wt, state, x []float32, t int, tmp []float32, lo, hi int) {
	k, c, n := d.K, d.ConvDim(), hi-lo
	ring := tmp[:k*n]
	// Ring slot of pre-conv row r, for r from -(K-1) (the oldest state row) up to t-1.
	slot := func(r int) []float32 { s := ((r % k) + k) % k; return ring[s*n : (s+1)*n] }
	for j := 0; j < k-1; j++ {
		copy(slot(j-(k-1)), state[j*c+lo:j*c+hi])
	}
	var w4 [4][]float32 // the taps' weights over the range, where K = 4 (the model's kernel)
	if k == 4 {
		w4 = convTaps4(wt, c, lo, hi)
	}
	for i := 0; i < t; i++ {
		row := x[i*c+lo : i*c+hi]
		copy(slot(i), row)
		if k == 4 { // one fused pass (cpu.ConvSiLU4), the same bits as the loop below
			ops.k.ConvSiLU4(row, w4, [4][]float32{slot(i - 3), slot(i - 2), slot(i - 1), slot(i)})
			continue
		}
		clear(row)
		for j := 0; j < k; j++ { // tap j reads pre-conv row i-(K-1)+j
			ops.mulAdd(row, wt[j*c+lo:j*c+hi], slot(i-(k-1)+j))
		}
		ops.silu(row)
	}
	for j := 0; j < k-1; j++ {
		copy(state[j*c+lo:j*c+hi], slot(t-(k-1)+j))
	}
}

// gates computes, per value head, the log-decay g = -exp(A_log)*softplus(a+dt_bias) and
// beta = sigmoid(b). a, b: [Hv] projections; g, beta: [Hv].
func gates(aLog, dtBias, a, b, g, beta []float32) {
	for h := range g {
		g[h] = -float32(math.Exp(float64(aLog[h]))) * softplus(a[h]+dtBias[h])
		beta[h] = sigmoid(b[h])
	}
}

// l2normScale normalises x in place to unit L2 norm (eps inside the sum) and multiplies by s.
func l2normScale(x []float32, eps, s float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	r := s / float32(math.Sqrt(float64(ss+eps)))
	for i := range x {
		x[i] *= r
	}
}

// deltanetStep is one token of the gated delta rule for value heads [lo, hi), fused: q/k L2 norm
// (done once per key head by the caller), decay, delta update and output with the updated state.
// qk: [2*Hk*Dk] normalised q (scaled by Dk^-1/2) then k; v: [Hv*Dv]; g, beta: [Hv];
// state: [Hv, Dk, Dv] fp32; out: [Hv*Dv]; scr: [Hv*(Dk+Dv)] scratch.
func deltanetStep(ops vecOps, d *checkpoint.Dims, qk, v, g, beta, state, out, scr []float32, lo, hi int) {
	dk, dv := d.Dk, d.Dv
	rep := d.Hv / d.Hk
	kOff := d.Hk * dk
	for h := lo; h < hi; h++ {
		kh := h / rep
		q := qk[kh*dk : kh*dk+dk]
		k := qk[kOff+kh*dk : kOff+kh*dk+dk]
		s := state[h*dk*dv : (h+1)*dk*dv]
		decay := float32(math.Exp(float64(g[h])))
		o := out[h*dv : h*dv+dv]
		vh := v[h*dv : h*dv+dv]
		// kv = Sᵀk after decay, so delta = beta*(v - decay*Sᵀk): one pass reading S.
		kd, delta := scr[h*(dk+dv):h*(dk+dv)+dk], scr[h*(dk+dv)+dk:(h+1)*(dk+dv)]
		for i, e := range k {
			kd[i] = e * decay
		}
		clear(delta)
		ops.axpyRows(delta, kd, s, dv)
		bh := beta[h]
		for j := range delta {
			delta[j] = bh * (vh[j] - delta[j])
		}
		// S = decay*S + k ⊗ delta; out = Sᵀq, accumulated in the same pass.
		ops.deltaUpdate(s, decay, k, q, delta, o)
	}
}
