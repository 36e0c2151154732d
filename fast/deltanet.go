package fast

import (
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// deltanetNormEps is the epsilon of the q/k L2 normalisation (model.md §4.3 step 5).
const deltanetNormEps = 1e-6

// convStep runs the causal depthwise conv for one token and applies SiLU, updating the state.
// x: [C] pre-conv projection of the new token; state: [(K-1)*C] the previous K-1 rows, oldest
// first; w: [C, K] with w[c*K+K-1] multiplying the current token; out: [C].
func convStep(ops vecOps, d *checkpoint.Dims, w, state, x, out []float32, lo, hi int) {
	k, c := d.K, d.ConvDim()
	for ch := lo; ch < hi; ch++ {
		wc := w[ch*k : ch*k+k]
		acc := wc[k-1] * x[ch]
		for j := 0; j < k-1; j++ {
			acc += wc[j] * state[j*c+ch]
		}
		for j := 0; j < k-2; j++ {
			state[j*c+ch] = state[(j+1)*c+ch]
		}
		state[(k-2)*c+ch] = x[ch]
		out[ch] = acc
	}
	ops.silu(out[lo:hi])
}

// convSeq runs the conv over T tokens of one channel range [lo, hi), token by token so that every
// access is a contiguous run of channels. x: [T, C] pre-conv rows (overwritten with the SiLU'd conv
// output); state: [(K-1)*C] updated to the last K-1 pre-conv rows. tmp: at least 2K·(hi-lo)
// scratch: the kernel transposed to [K][hi-lo], then K row buffers holding the last K pre-conv rows
// (a ring; slot i mod K is token i's).
func convSeq(ops vecOps, d *checkpoint.Dims, w, state, x []float32, t int, tmp []float32, lo, hi int) {
	k, c, n := d.K, d.ConvDim(), hi-lo
	wt, ring := tmp[:k*n], tmp[k*n:(2*k)*n]
	for ch := lo; ch < hi; ch++ {
		for j := 0; j < k; j++ {
			wt[j*n+ch-lo] = w[ch*k+j]
		}
	}
	// Ring slot of pre-conv row r, for r from -(K-1) (the oldest state row) up to t-1.
	slot := func(r int) []float32 { s := ((r % k) + k) % k; return ring[s*n : (s+1)*n] }
	for j := 0; j < k-1; j++ {
		copy(slot(j-(k-1)), state[j*c+lo:j*c+hi])
	}
	for i := 0; i < t; i++ {
		row := x[i*c+lo : i*c+hi]
		copy(slot(i), row)
		clear(row)
		for j := 0; j < k; j++ { // tap j reads pre-conv row i-(K-1)+j
			src, wj := slot(i-(k-1)+j), wt[j*n:(j+1)*n]
			for e := range row {
				row[e] += wj[e] * src[e]
			}
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

func silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// softplus matches torch: x for x > 20, else log(1+exp(x)).
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}
