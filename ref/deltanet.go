package ref

import (
	"fmt"
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// ChunkSize is the chunk length of the chunked delta rule (transformers' chunk_size = 64).
const ChunkSize = 64

// l2NormEps is the epsilon inside the sum of the q/k L2 normalisation (model.md §4.3 step 5).
const l2NormEps = 1e-6

// DeltaNetState is the sequence state of one Gated DeltaNet layer.
type DeltaNetState struct {
	Conv [][]float32 // [K−1][C] the last K−1 pre-conv qkv rows, oldest first (zeros at start)
	S    [][]float32 // [Hv][Dk·Dv] recurrent state per value head, S[h][dk·Dv+dv], float32
}

// NewDeltaNetState returns the zero state of a DeltaNet layer of cfg's dimensions.
func NewDeltaNetState(cfg *checkpoint.Config) *DeltaNetState {
	st := &DeltaNetState{
		Conv: make([][]float32, cfg.LinearConvKernel-1),
		S:    make([][]float32, cfg.LinearNumValueHeads),
	}
	for i := range st.Conv {
		st.Conv[i] = make([]float32, cfg.ConvDim())
	}
	for h := range st.S {
		st.S[h] = make([]float32, cfg.LinearKeyHeadDim*cfg.LinearValueHeadDim)
	}
	return st
}

func (st *DeltaNetState) clone() *DeltaNetState {
	return &DeltaNetState{Conv: cloneRows(st.Conv), S: cloneRows(st.S)}
}

// GatedDeltaNet is the token mixer of a linear-attention layer (model.md §4.3), continuing the
// sequence held in st (which it updates):
//
//	qkv = W_qkv a; z = W_z a; b = W_b a; α = W_a a
//	u = silu(conv(qkv)) split into q [Hk,Dk], k [Hk,Dk], v [Hv,Dv]
//	β = sigmoid(b);  g = −exp(A_log)·softplus(α + dt_bias)
//	q = l2norm(q)·Dk^−½;  k = l2norm(k);  value head h reads key head h/(Hv/Hk)
//	o = delta rule (chunked when chunked is true, else recurrent) from the state in st
//	y_h = GatedRMSNorm(o_h, z_h);  out = W_out y
//
// a: [T][H] (input-normed hidden) → [T][H].
func GatedDeltaNet(cfg *checkpoint.Config, w *checkpoint.DeltaNet, a [][]float32, st *DeltaNetState, chunked bool) ([][]float32, error) {
	hk, hv, dk, dv := cfg.LinearNumKeyHeads, cfg.LinearNumValueHeads, cfg.LinearKeyHeadDim, cfg.LinearValueHeadDim
	qkv, err := Linear(&w.QKV, 0, a) // [T][C]
	if err != nil {
		return nil, err
	}
	z, err := Linear(&w.Z, 0, a) // [T][Hv·Dv]
	if err != nil {
		return nil, err
	}
	b, err := Linear(&w.B, 0, a) // [T][Hv]
	if err != nil {
		return nil, err
	}
	alpha, err := Linear(&w.A, 0, a) // [T][Hv]
	if err != nil {
		return nil, err
	}
	if len(st.Conv) != cfg.LinearConvKernel-1 || len(st.S) != hv {
		return nil, fmt.Errorf("deltanet %s: state does not match the config", w.QKV.Name)
	}
	u := CausalConv1D(qkv, st.Conv, w.Conv, cfg.LinearConvKernel) // [T][C]

	T := len(a)
	// transformers scales q by Dk^−½ in the chunked form and divides by √Dk in the recurrent one;
	// the two differ in the last bit, so each form follows its own.
	scale, root := float32(1/math.Sqrt(float64(dk))), float32(math.Sqrt(float64(dk)))
	q := make([][][]float32, T)  // [T][Hk][Dk]
	k := make([][][]float32, T)  // [T][Hk][Dk]
	g := make([][]float32, T)    // [T][Hv]
	beta := make([][]float32, T) // [T][Hv]
	for t := 0; t < T; t++ {
		q[t] = make([][]float32, hk)
		k[t] = make([][]float32, hk)
		for h := 0; h < hk; h++ {
			q[t][h] = L2Normalize(u[t][h*dk:(h+1)*dk], l2NormEps)
			for i := range q[t][h] {
				if chunked {
					q[t][h][i] *= scale
				} else {
					q[t][h][i] /= root
				}
			}
			k[t][h] = L2Normalize(u[t][hk*dk+h*dk:hk*dk+(h+1)*dk], l2NormEps)
		}
		g[t] = make([]float32, hv)
		beta[t] = make([]float32, hv)
		for h := 0; h < hv; h++ {
			beta[t][h] = Sigmoid(b[t][h])
			g[t][h] = -float32(math.Exp(float64(w.ALog[h]))) * Softplus(alpha[t][h]+w.DtBias[h])
		}
	}

	y := make([][]float32, T) // [T][Hv·Dv]
	for t := range y {
		y[t] = make([]float32, hv*dv)
	}
	for h := 0; h < hv; h++ {
		kh := h / (hv / hk) // repeat_interleave: value heads 2i, 2i+1 read key head i
		qs, ks, vs := make([][]float32, T), make([][]float32, T), make([][]float32, T)
		gs, bs := make([]float32, T), make([]float32, T)
		for t := 0; t < T; t++ {
			qs[t], ks[t] = q[t][kh], k[t][kh]
			vs[t] = u[t][2*hk*dk+h*dv : 2*hk*dk+(h+1)*dv]
			gs[t], bs[t] = g[t][h], beta[t][h]
		}
		var o [][]float32 // [T][Dv]
		if chunked {
			o = DeltaRuleChunked(st.S[h], qs, ks, vs, gs, bs, ChunkSize)
		} else {
			o = DeltaRuleRecurrent(st.S[h], qs, ks, vs, gs, bs)
		}
		for t := 0; t < T; t++ {
			GatedRMSNorm(y[t][h*dv:(h+1)*dv], o[t], z[t][h*dv:(h+1)*dv], w.Norm, cfg.RMSNormEps)
		}
	}
	return Linear(&w.Out, 0, y)
}

// L2Normalize returns x·rsqrt(Σx² + eps) as a new slice (eps inside the sum, as transformers' l2norm).
// x: [N] → [N].
func L2Normalize(x []float32, eps float64) []float32 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	inv := float32(1 / math.Sqrt(float64(float32(s))+eps))
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v * inv
	}
	return out
}

// DeltaRuleRecurrent runs the gated delta rule token by token for one value head (model.md §4.3
// step 7), updating S in place:
//
//	S = S·exp(g_t);  δ = β_t·(v_t − Sᵀk_t);  S = S + k_t ⊗ δ;  o_t = Sᵀq_t
//
// S: [Dk·Dv] (S[dk·Dv+dv]); q, k: [T][Dk] (normalised, q scaled); v: [T][Dv]; g, beta: [T]
// → o: [T][Dv]. Inputs are not modified.
func DeltaRuleRecurrent(S []float32, q, k, v [][]float32, g, beta []float32) [][]float32 {
	dv := len(S) / max(len(q[0]), 1)
	o := make([][]float32, len(q))
	kv := make([]float64, dv)
	for t := range q {
		decay := float32(math.Exp(float64(g[t])))
		for i := range S {
			S[i] *= decay
		}
		clear(kv)
		for d, kd := range k[t] {
			for j := 0; j < dv; j++ {
				kv[j] += float64(S[d*dv+j]) * float64(kd)
			}
		}
		delta := make([]float32, dv)
		for j := range delta {
			delta[j] = (v[t][j] - float32(kv[j])) * beta[t]
		}
		for d, kd := range k[t] {
			for j := 0; j < dv; j++ {
				S[d*dv+j] += float32(kd * delta[j])
			}
		}
		o[t] = vecMat(q[t], S, dv)
	}
	return o
}

// vecMat is xᵀS for S: [len(x)·dv] row-major → [dv], accumulated in float64.
func vecMat(x, S []float32, dv int) []float32 {
	acc := make([]float64, dv)
	for d, xd := range x {
		for j := 0; j < dv; j++ {
			acc[j] += float64(xd) * float64(S[d*dv+j])
		}
	}
	out := make([]float32, dv)
	for j := range out {
		out[j] = float32(acc[j])
	}
	return out
}
