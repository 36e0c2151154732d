package fast

import "math"

// chunk is the DeltaNet prefill chunk length (model.md §4.3 step 8).
const chunk = 64

// gdnScratch is one value head's working memory for the chunked delta rule.
type gdnScratch struct {
	gam  [chunk]float32 // Γ_i: cumulative log-decay inside the chunk
	c    [chunk]float32 // one row of coefficients: −A_ij, or (q_i·k_j) e^{Γ_i-Γ_j}
	u, w []float32      // U: [chunk, Dv], W: [chunk, Dk]
	p    []float32      // [max(Dk, chunk)] coefficients of one weighted row sum
	kt   []float32      // [Dk, chunk] e^{Γ_last-Γ_j} k_j, transposed
}

func newGDNScratch(dk, dv int) *gdnScratch {
	return &gdnScratch{u: make([]float32, chunk*dv), w: make([]float32, chunk*dk),
		p: make([]float32, max(dk, chunk)), kt: make([]float32, dk*chunk)}
}

// gdnChunked runs the gated delta rule over T tokens for value heads [lo, hi) in the chunked
// form (mathematically equal to gdnStep applied T times, see model.md §4.3 step 8).
// qk: [T, 2*Hk*Dk] normalised q then k per token (row stride qkStride); v: [T, *] value rows with
// head h at v[t*vStride + h*Dv]; g, beta: [T, Hv]; state: [Hv, Dk, Dv]; out: [T, Hv*Dv].
func gdnChunked(ops vecOps, d *gdnDims, t int, qk []float32, qkStride int, v []float32, vStride int, g, beta, state, out []float32,
	scr []*gdnScratch, lo, hi int) {
	dk, dv, hv := d.dk, d.dv, d.hv
	rep := hv / d.hk
	kOff := d.hk * dk
	for h := lo; h < hi; h++ {
		kh := h / rep
		s := state[h*dk*dv : (h+1)*dk*dv]
		sc := scr[h]
		qOf := func(i int) []float32 { return qk[i*qkStride+kh*dk : i*qkStride+kh*dk+dk] }
		kOf := func(i int) []float32 { return qk[i*qkStride+kOff+kh*dk : i*qkStride+kOff+kh*dk+dk] }
		for c0 := 0; c0 < t; c0 += chunk {
			n := min(chunk, t-c0)
			var run float32
			for i := 0; i < n; i++ {
				run += g[(c0+i)*hv+h]
				sc.gam[i] = run
			}
			// A_ij = β_i (k_i·k_j) e^{Γ_i-Γ_j}, j < i; U = (I+A)^{-1} diag(β)V; W = (I+A)^{-1} diag(β e^Γ) K,
			// by forward substitution: row i of U and W minus Σ_{j<i} A_ij times rows j.
			kc := qk[c0*qkStride+kOff+kh*dk:] // the chunk's k rows at stride qkStride
			for i := 0; i < n; i++ {
				ki := kOf(c0 + i)
				bi := beta[(c0+i)*hv+h]
				ui := sc.u[i*dv : i*dv+dv]
				wi := sc.w[i*dk : i*dk+dk]
				vi := v[(c0+i)*vStride+h*dv : (c0+i)*vStride+h*dv+dv]
				eg := float32(math.Exp(float64(sc.gam[i])))
				for x := range ui {
					ui[x] = bi * vi[x]
				}
				for x := range wi {
					wi[x] = bi * eg * ki[x]
				}
				if i == 0 {
					continue
				}
				c := sc.c[:i]
				ops.dots(c, ki, kc, qkStride)
				for j := range c {
					c[j] *= -bi * float32(math.Exp(float64(sc.gam[i]-sc.gam[j])))
				}
				ops.axpyRows(ui, c, sc.u, dv)
				ops.axpyRows(wi, c, sc.w, dk)
			}
			// Vn_i = U_i - W_i S  (stored over U).
			for i := 0; i < n; i++ {
				p := sc.p[:dk]
				for x, e := range sc.w[i*dk : i*dk+dk] {
					p[x] = -e
				}
				ops.axpyRows(sc.u[i*dv:i*dv+dv], p, s, dv)
			}
			// O_i = e^{Γ_i} q_i S + Σ_{j≤i} (q_i·k_j) e^{Γ_i-Γ_j} Vn_j.
			for i := 0; i < n; i++ {
				qi := qOf(c0 + i)
				oi := out[(c0+i)*hv*dv+h*dv : (c0+i)*hv*dv+h*dv+dv]
				clear(oi)
				eg := float32(math.Exp(float64(sc.gam[i])))
				p := sc.p[:dk]
				for x, e := range qi {
					p[x] = eg * e
				}
				ops.axpyRows(oi, p, s, dv)
				c := sc.c[:i+1]
				ops.dots(c, qi, kc, qkStride)
				for j := range c {
					c[j] *= float32(math.Exp(float64(sc.gam[i] - sc.gam[j])))
				}
				ops.axpyRows(oi, c, sc.u, dv)
			}
			// S = e^{Γ_last} S + Σ_j e^{Γ_last-Γ_j} k_j ⊗ Vn_j: row x of S gains Σ_j kt[x][j] Vn_j.
			last := sc.gam[n-1]
			el := float32(math.Exp(float64(last)))
			for x := range s {
				s[x] *= el
			}
			for j := 0; j < n; j++ {
				f := float32(math.Exp(float64(last - sc.gam[j])))
				for x, e := range kOf(c0 + j) {
					sc.kt[x*chunk+j] = f * e
				}
			}
			for x := 0; x < dk; x++ {
				ops.axpyRows(s[x*dv:x*dv+dv], sc.kt[x*chunk:x*chunk+n], sc.u, dv)
			}
		}
	}
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
