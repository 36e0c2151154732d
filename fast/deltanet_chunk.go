package fast

import (
	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
)

// chunk is the DeltaNet prefill chunk length (model.md §4.3 step 8).
const chunk = 64

// deltanetScratch is one value head's working memory for the chunked delta rule.
type deltanetScratch struct {
	gam    [chunk]float32 // Γ_i: cumulative log-decay inside the chunk
	eg     [chunk]float32 // e^{Γ_i}
	el     [chunk]float32 // e^{Γ_last−Γ_j}
	bt, nb [chunk]float32 // β_i and −β_i
	fw     [chunk]float32 // −β_i e^{Γ_i}
	u      []float32      // [chunk, Dv]: diag(β)V, then U, then Vn
	qg, kg []float32      // the chunk's q and k rows, gathered: [chunk, Dk]
	nw     []float32      // [chunk, Dk]: −W, then e^{Γ_i} q_i, then e^{Γ_last−Γ_j} k_j
	cc     []float32      // [chunk, chunk]: k_i·k_j, then −A; then q_i·k_j, then its causal decayed form
	ob     []float32      // [chunk, Dv] the chunk's outputs
}

func newDeltaNetScratch(dk, dv int) *deltanetScratch {
	return &deltanetScratch{u: make([]float32, chunk*dv),
		qg: make([]float32, chunk*dk), kg: make([]float32, chunk*dk), nw: make([]float32, chunk*dk),
		cc: make([]float32, chunk*chunk), ob: make([]float32, chunk*dv)}
}

// deltanetChunked runs the gated delta rule over T tokens for value heads [lo, hi) in the chunked
// form (mathematically equal to deltanetStep applied T times, see model.md §4.3 step 8).
// qk: [T, 2*Hk*Dk] normalised q then k per token (row stride qkStride); v: [T, *] value rows with
// head h at v[t*vStride + h*Dv]; g, beta: [T, Hv]; state: [Hv, Dk, Dv]; out: [T, Hv*Dv].
//
// Everything but the forward substitution is a small matrix product on the attention tiles
// (scoreTile: K·Kᵀ and Q·Kᵀ; accumTile: W·S, Q·S, the causal scores times Vn; accumTileT: the
// state update, reading the decayed keys as they lie); the substitution is row by row, as it must
// be. The decay factors and their products are the vector decay kernels (cpu.CausalDecay,
// ScaleRows, ExpTiny), which zero every term under cpu.DecayTiny, so that no subnormal reaches
// the tiles' FMAs (on x86 each one that reads a subnormal takes a microcode assist: with strong
// decays, e^{Γ} reaches e^{−100} and below inside a chunk).
func deltanetChunked(ops vecOps, d *checkpoint.Dims, t int, qk []float32, qkStride int, v []float32, vStride int, g, beta, state, out []float32,
	scr []*deltanetScratch, lo, hi int) {
	dk, dv, hv := d.Dk, d.Dv, d.Hv
	rep := hv / d.Hk
	kOff := d.Hk * dk
	for h := lo; h < hi; h++ {
		kh := h / rep
		s := state[h*dk*dv : (h+1)*dk*dv]
		sc := scr[h]
		for c0 := 0; c0 < t; c0 += chunk {
			n := min(chunk, t-c0)
			gam, eg, el := sc.gam[:n], sc.eg[:n], sc.el[:n]
			var run float32
			for i := 0; i < n; i++ {
				run += g[(c0+i)*hv+h]
				gam[i] = run
				b := beta[(c0+i)*hv+h]
				sc.bt[i], sc.nb[i] = b, -b
				row := qk[(c0+i)*qkStride:]
				copy(sc.qg[i*dk:(i+1)*dk], row[kh*dk:kh*dk+dk])
				copy(sc.kg[i*dk:(i+1)*dk], row[kOff+kh*dk:kOff+kh*dk+dk])
			}
			last := gam[n-1]
			copy(eg, gam)
			for j, e := range gam {
				el[j] = last - e
			}
			ops.expTiny(eg)
			ops.expTiny(el)
			for i, e := range eg {
				sc.fw[i] = flushTiny(sc.nb[i] * e)
			}
			qg, kg, cc := sc.qg[:n*dk], sc.kg[:n*dk], sc.cc[:n*n]
			u, nw, ob := sc.u[:n*dv], sc.nw[:n*dk], sc.ob[:n*dv]
			// A_ij = β_i (k_i·k_j) e^{Γ_i-Γ_j}, j < i; U = (I+A)^{-1} diag(β)V; W = (I+A)^{-1} diag(β e^Γ) K,
			// by forward substitution: row i of U and W minus Σ_{j<i} A_ij times rows j (cc holds −A).
			ops.scoreTile(cc, kg, n, dk, kg, dk, n)
			ops.causalDecay(cc, n, gam, sc.nb[:n], true)
			ops.scaleRows(u, dv, v[c0*vStride+h*dv:], vStride, sc.bt[:n])
			ops.scaleRows(nw, dk, kg, dk, sc.fw[:n])
			for i := 1; i < n; i++ {
				c := cc[i*n : i*n+i]
				ops.axpyRows(u[i*dv:(i+1)*dv], c, u, dv)
				ops.axpyRows(nw[i*dk:(i+1)*dk], c, nw, dk)
			}
			// Vn = U − W S (stored over U).
			ops.accumTile(u, n, dv, nw, dk, s, dv)
			// O = diag(e^Γ) Q S + (causal mask ∘ Q Kᵀ ∘ e^{Γ_i-Γ_j}) Vn.
			ops.scaleRows(nw, dk, qg, dk, eg)
			clear(ob)
			ops.accumTile(ob, n, dv, nw, dk, s, dv)
			ops.scoreTile(cc, qg, n, dk, kg, dk, n)
			ops.causalDecay(cc, n, gam, nil, false)
			ops.accumTile(ob, n, dv, cc, n, u, dv)
			for i := 0; i < n; i++ {
				copy(out[(c0+i)*hv*dv+h*dv:(c0+i)*hv*dv+h*dv+dv], ob[i*dv:(i+1)*dv])
			}
			// S = e^{Γ_last} S + Σ_j e^{Γ_last-Γ_j} k_j ⊗ Vn_j: row x of S gains Σ_j nw[j][x] Vn_j.
			ops.scaleAxpy(s, eg[n-1], 0, s)
			ops.scaleRows(nw, dk, kg, dk, el)
			ops.accumTileT(s, dk, dv, nw, dk, n, u, dv)
		}
	}
}

// tinyCoef is the magnitude under which flushTiny zeroes a coefficient of the chunked delta rule.
// Decays e^{Γ} over a chunk reach e^{-100} and below, and their products with q and k land in
// float32's subnormal range, where every FMA that reads one takes a microcode assist on x86 (on a
// 4-layer synth 5% of the e^{Γ}-weighted q and k rows were subnormal, and the chunked rule ran at
// a tenth of the tiles' speed). A term that small is 1e-30 of the O(1) terms it is summed with
// (the j = i term of each output row has decay 1), far below float32's resolution. The decay
// kernels of fast/cpu zero under the same threshold.
const tinyCoef = cpu.DecayTiny

// flushTiny returns x, or 0 when |x| < tinyCoef.
func flushTiny(x float32) float32 {
	if x < tinyCoef && x > -tinyCoef {
		return 0
	}
	return x
}

func dot(a, b []float32) float32 {
	var s float32
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// axpy: y += a*x.
func axpy(a float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += a * v
	}
}
