package fast

import (
	"math"

	"github.com/lily-engine/lily/internal/checkpoint"
)

// chunk is the DeltaNet prefill chunk length (model.md §4.3 step 8).
const chunk = 64

// deltanetScratch is one value head's working memory for the chunked delta rule.
type deltanetScratch struct {
	gam    [chunk]float32 // Γ_i: cumulative log-decay inside the chunk
	c      [chunk]float32 // one row of coefficients −A_ij
	u, w   []float32      // U: [chunk, Dv], W: [chunk, Dk]
	qg, kg []float32      // the chunk's q and k rows, gathered: [chunk, Dk]
	nw     []float32      // [chunk, Dk]: −W, then e^{Γ_i} q_i
	cc     []float32      // [chunk, chunk]: k_i·k_j, then the causal (q_i·k_j) e^{Γ_i-Γ_j}
	ob     []float32      // [chunk, Dv] the chunk's outputs
	kt     []float32      // [Dk, n] e^{Γ_last-Γ_j} k_j, transposed
}

func newDeltaNetScratch(dk, dv int) *deltanetScratch {
	return &deltanetScratch{u: make([]float32, chunk*dv), w: make([]float32, chunk*dk),
		qg: make([]float32, chunk*dk), kg: make([]float32, chunk*dk), nw: make([]float32, chunk*dk),
		cc: make([]float32, chunk*chunk), ob: make([]float32, chunk*dv), kt: make([]float32, dk*chunk)}
}

// deltanetChunked runs the gated delta rule over T tokens for value heads [lo, hi) in the chunked
// form (mathematically equal to deltanetStep applied T times, see model.md §4.3 step 8).
// qk: [T, 2*Hk*Dk] normalised q then k per token (row stride qkStride); v: [T, *] value rows with
// head h at v[t*vStride + h*Dv]; g, beta: [T, Hv]; state: [Hv, Dk, Dv]; out: [T, Hv*Dv].
//
// Everything but the forward substitution is a small matrix product on the attention tiles
// (scoreTile: K·Kᵀ and Q·Kᵀ; accumTile: W·S, Q·S, the causal scores times Vn, and the state
// update); the substitution is row by row, as it must be.
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
			var run float32
			for i := 0; i < n; i++ {
				run += g[(c0+i)*hv+h]
				sc.gam[i] = run
				row := qk[(c0+i)*qkStride:]
				copy(sc.qg[i*dk:(i+1)*dk], row[kh*dk:kh*dk+dk])
				copy(sc.kg[i*dk:(i+1)*dk], row[kOff+kh*dk:kOff+kh*dk+dk])
			}
			qg, kg, cc := sc.qg[:n*dk], sc.kg[:n*dk], sc.cc[:n*n]
			// A_ij = β_i (k_i·k_j) e^{Γ_i-Γ_j}, j < i; U = (I+A)^{-1} diag(β)V; W = (I+A)^{-1} diag(β e^Γ) K,
			// by forward substitution: row i of U and W minus Σ_{j<i} A_ij times rows j.
			ops.scoreTile(cc, kg, n, dk, kg, dk, n)
			for i := 0; i < n; i++ {
				ki := kg[i*dk : (i+1)*dk]
				bi := beta[(c0+i)*hv+h]
				ui := sc.u[i*dv : i*dv+dv]
				wi := sc.w[i*dk : i*dk+dk]
				vi := v[(c0+i)*vStride+h*dv : (c0+i)*vStride+h*dv+dv]
				eg := float32(math.Exp(float64(sc.gam[i])))
				for x := range ui {
					ui[x] = bi * vi[x]
				}
				for x := range wi {
					wi[x] = flushTiny(bi * eg * ki[x])
				}
				if i == 0 {
					continue
				}
				c := sc.c[:i]
				for j := range c {
					c[j] = flushTiny(cc[i*n+j] * (-bi * float32(math.Exp(float64(sc.gam[i]-sc.gam[j])))))
				}
				ops.axpyRows(ui, c, sc.u, dv)
				ops.axpyRows(wi, c, sc.w, dk)
			}
			u, nw, ob := sc.u[:n*dv], sc.nw[:n*dk], sc.ob[:n*dv]
			// Vn = U − W S (stored over U).
			for x, e := range sc.w[:n*dk] {
				nw[x] = -e
			}
			ops.accumTile(u, n, dv, nw, dk, s, dv)
			// O = diag(e^Γ) Q S + (causal mask ∘ Q Kᵀ ∘ e^{Γ_i-Γ_j}) Vn.
			for i := 0; i < n; i++ {
				eg := float32(math.Exp(float64(sc.gam[i])))
				for x, e := range qg[i*dk : (i+1)*dk] {
					nw[i*dk+x] = flushTiny(eg * e)
				}
			}
			clear(ob)
			ops.accumTile(ob, n, dv, nw, dk, s, dv)
			ops.scoreTile(cc, qg, n, dk, kg, dk, n)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if j <= i {
						cc[i*n+j] = flushTiny(cc[i*n+j] * float32(math.Exp(float64(sc.gam[i]-sc.gam[j]))))
					} else {
						cc[i*n+j] = 0
					}
				}
			}
			ops.accumTile(ob, n, dv, cc, n, u, dv)
			for i := 0; i < n; i++ {
				copy(out[(c0+i)*hv*dv+h*dv:(c0+i)*hv*dv+h*dv+dv], ob[i*dv:(i+1)*dv])
			}
			// S = e^{Γ_last} S + Σ_j e^{Γ_last-Γ_j} k_j ⊗ Vn_j: row x of S gains Σ_j kt[x][j] Vn_j.
			last := sc.gam[n-1]
			el := float32(math.Exp(float64(last)))
			for x := range s {
				s[x] *= el
			}
			kt := sc.kt[:dk*n]
			for j := 0; j < n; j++ {
				f := float32(math.Exp(float64(last - sc.gam[j])))
				for x, e := range kg[j*dk : (j+1)*dk] {
					kt[x*n+j] = flushTiny(f * e)
				}
			}
			ops.accumTile(s, dk, dv, kt, n, u, dv)
		}
	}
}

// tinyCoef is the magnitude under which flushTiny zeroes a coefficient of the chunked delta rule.
// Decays e^{Γ} over a chunk reach e^{-100} and below, and their products with q and k land in
// float32's subnormal range, where every FMA that reads one takes a microcode assist on x86 (on a
// 4-layer synth 5% of the e^{Γ}-weighted q and k rows were subnormal, and the chunked rule ran at
// a tenth of the tiles' speed). A term that small is 1e-30 of the O(1) terms it is summed with
// (the j = i term of each output row has decay 1), far below float32's resolution.
const tinyCoef = 1e-30

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
