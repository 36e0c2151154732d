package fast

import (
	"math"

	"github.com/lily-engine/lily/fast/cpu"
)

// rmsNorm: out = x / sqrt(mean(x²) + eps) * w. x, w, out: [n]. Sum of squares in float64.
func (o vecOps) rmsNorm(x, w, out []float32, eps float64) { o.k.RMSNorm64(out, x, w, eps) }

// addInto adds r to x (the residual stream), as Axpy with a = 1: a fused 1·r+x rounds as x+r does.
func (o vecOps) addInto(x, r []float32) { o.k.Axpy(x[:len(r)], 1, r) }

// gatedNorm is the DeltaNet output norm per value head (model.md §4.2b): y = rmsnorm(o)*w * silu(z)
// (cpu.GatedRMSNorm: one vector pass, the sum of squares in float32). o, z, y: [Dv]; w: [Dv].
func gatedNorm(ops vecOps, o, z, w, y []float32, eps float64) {
	ops.k.GatedRMSNorm(y, o, z, w, float32(eps))
}

// ropeTable writes cos and sin of pos·inv[i] to cs[2i] and cs[2i+1] (cs: at least 2·len(inv)) and
// returns them: one position's rotation, computed once for all the heads it turns.
func ropeTable(pos int, inv, cs []float64) []float64 {
	cs = cs[:2*len(inv)]
	for i, f := range inv {
		cs[2*i+1], cs[2*i] = math.Sincos(float64(pos) * f)
	}
	return cs
}

// ropeAt rotates the first len(cs) dims of x (rotate-half pairing: dim i with i+len(cs)/2) by the
// table cs (ropeTable). x: [D].
func ropeAt(x []float32, cs []float64) {
	half := len(cs) / 2
	for i := 0; i < half; i++ {
		c, s := cs[2*i], cs[2*i+1]
		x1, x2 := float64(x[i]), float64(x[i+half])
		x[i] = float32(x1*c - x2*s)
		x[i+half] = float32(x2*c + x1*s)
	}
}

// ropeInvFreq returns inv_freq[i] = 1/theta^(2i/rot) for i < rot/2.
func ropeInvFreq(rot int, theta float64) []float64 {
	inv := make([]float64, rot/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(theta, float64(2*i)/float64(rot))
	}
	return inv
}

// vecOps are the vector loops of the plans (dot, axpy and scaleAxpy in the delta rule and the MoE
// combine; the block helpers of attention and the chunked delta rule; SiLU in the DeltaNet conv and
// output gate and the SwiGLU) on the fast/cpu kernels.
type vecOps struct{ k *cpu.Kernels }

// silu replaces x by silu(x) (cpu.Kernels.SiLU: float32 exp on the SIMD kernels).
func (o vecOps) silu(x []float32) {
	o.k.SiLU(x, x)
}

// swiglu: g = silu(g)·u in place; g: [n], u: at least [n].
func (o vecOps) swiglu(g, u []float32) {
	o.k.SiLUMul(g, g, u)
}

// mulAdd: y += a ⊙ b elementwise.
func (o vecOps) mulAdd(y, a, b []float32) { o.k.MulAdd(y, a, b) }

// dot returns Σ a_i·b_i over len(a).
func (o vecOps) dot(a, b []float32) float32 {
	return o.k.Dot(a, b)
}

// scaleAxpy: y[:len(x)] = b·y + a·x.
func (o vecOps) scaleAxpy(y []float32, b, a float32, x []float32) {
	o.k.ScaleAxpy(y[:len(x)], b, a, x)
}

// foldScores folds one query row's scores for a block of keys into its running softmax: when the
// block holds a new maximum, the row's output acc and sum are rescaled to it; then the scores
// become e^{score−mx} in place (the weights of the block's values) and sum grows by their total.
// sc: [keys]; acc: [D].
func (o vecOps) foldScores(sc, acc []float32, mx *float32, sum *float64) {
	bm := o.k.MaxOf(sc)
	if bm > *mx {
		f := float32(math.Exp(float64(*mx - bm)))
		*sum *= float64(f)
		for i := range acc {
			acc[i] *= f
		}
		*mx = bm
	}
	*sum += o.expShift(sc, *mx)
}

// dots: out[t] = q·rows[t·stride : t·stride+len(q)] for t < len(out).
func (o vecOps) dots(out, q, rows []float32, stride int) {
	o.k.Dots(out, q, rows, stride)
}

// expShift replaces x by e^{x−m} and returns the sum.
func (o vecOps) expShift(x []float32, m float32) float64 {
	return o.k.ExpShift(x, m)
}

// axpyRows: acc += Σ_t p[t]·rows[t·stride : t·stride+len(acc)].
func (o vecOps) axpyRows(acc, p, rows []float32, stride int) {
	o.k.AxpyRows(acc, p, rows, stride)
}

// axpy: y[:len(x)] += a·x.
func (o vecOps) axpy(a float32, x, y []float32) {
	o.k.Axpy(y[:len(x)], a, x)
}

// scoreTile: s[i·n+j] = q[i·d : (i+1)·d] · keys[j·ks : j·ks+d] for i < m, j < n.
func (o vecOps) scoreTile(s, q []float32, m, d int, keys []float32, ks, n int) {
	o.k.ScoreTile(s, q, m, d, keys, ks, n)
}

// accumTile: out[i·d : (i+1)·d] += Σ_j p[i·n+j]·v[j·vs : j·vs+d] for i < m.
func (o vecOps) accumTile(out []float32, m, d int, p []float32, n int, v []float32, vs int) {
	o.k.AccumTile(out, m, d, p, n, v, vs)
}

// accumTileT: out[i·d : (i+1)·d] += Σ_j pt[j·ps+i]·v[j·vs : j·vs+d] for i < m (the weights transposed).
func (o vecOps) accumTileT(out []float32, m, d int, pt []float32, ps, n int, v []float32, vs int) {
	o.k.AccumTileT(out, m, d, pt, ps, n, v, vs)
}

// setTileT: out[i·d : (i+1)·d] = Σ_j pt[j·ps+i]·v[j·vs : j·vs+d] for i < m, out's old contents not
// read; with stream, stored past the caches (cpu.SetTileT).
func (o vecOps) setTileT(out []float32, m, d int, pt []float32, ps, n int, v []float32, vs int, stream bool) {
	o.k.SetTileT(out, m, d, pt, ps, n, v, vs, stream)
}

// unitLowerInverse: t = (I − L)⁻¹ for L the strictly lower triangle of l: [n, n] (cpu.UnitLowerInverse).
func (o vecOps) unitLowerInverse(t, l []float32, n int) { o.k.UnitLowerInverse(t, l, n) }

// scoreTileLower: s[i·m+j] = q_i·keys_j for j ≤ i < m (cpu.ScoreTileLower; the upper triangle unspecified).
func (o vecOps) scoreTileLower(s, q []float32, m, d int, keys []float32, ks int) {
	o.k.ScoreTileLower(s, q, m, d, keys, ks)
}

// accumTileLower: out[i·d : (i+1)·d] += Σ_{j≤i} p[i·m+j]·v[j·vs : j·vs+d] for i < m.
func (o vecOps) accumTileLower(out []float32, m, d int, p []float32, v []float32, vs int) {
	o.k.AccumTileLower(out, m, d, p, v, vs)
}

// expTiny: x[j] = e^{x[j]}, or 0 under cpu.DecayTiny.
func (o vecOps) expTiny(x []float32) { o.k.ExpTiny(x) }

// scaleRows: dst[i·d+x] = f[i]·src[i·ss+x], or 0 under cpu.DecayTiny, for i < len(f).
func (o vecOps) scaleRows(dst []float32, d int, src []float32, ss int, f []float32) {
	o.k.ScaleRows(dst, d, src, ss, f)
}

// causalDecay: c[i·n+j] = s[i]·c[i·n+j]·e^{gam[i]−gam[j]} for j < i (j ≤ i unless strict), or 0 under
// cpu.DecayTiny; 0 for the other j. s nil: ones.
func (o vecOps) causalDecay(c []float32, n int, gam, s []float32, strict bool) {
	o.k.CausalDecay(c, n, gam, s, strict)
}

// scoreTileF16 is scoreTile against fp16 keys (the KV cache); scratch: [n, d] float32 for the
// keys the kernels widen (all of them where they cannot read fp16 in their tiles).
func (o vecOps) scoreTileF16(s, q []float32, m, d int, keys []uint16, ks, n int, scratch []float32, vals []uint16) {
	o.k.ScoreTileF16(s, q, m, d, keys, ks, n, scratch, vals)
}

// accumTileF16 is accumTile with fp16 values (the KV cache); scratch: [n, d] float32 for the
// values the kernels widen.
func (o vecOps) accumTileF16(out []float32, m, d int, p []float32, n int, v []uint16, vs int, scratch []float32) {
	o.k.AccumTileF16(out, m, d, p, n, v, vs, scratch)
}

// deltaUpdate: S_i = decay·S_i + k_i·delta for every row of s: [len(k), len(out)], and
// out = Σ_i q_i·S_i from the new rows (delta and out must not overlap).
func (o vecOps) deltaUpdate(s []float32, decay float32, k, q, delta, out []float32) {
	o.k.DeltaUpdate(s, decay, k, q, delta, out)
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
