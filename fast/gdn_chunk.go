package fast

import "math"

// chunk is the DeltaNet prefill chunk length (model.md §4.3 step 8).
const chunk = 64

// gdnScratch is one value head's working memory for the chunked delta rule.
type gdnScratch struct {
	gam  [chunk]float32         // Γ_i: cumulative log-decay inside the chunk
	a    [chunk * chunk]float32 // strictly lower β_i (k_i·k_j) e^{Γ_i-Γ_j}, then q_i·k_j e^{Γ_i-Γ_j}
	u, w []float32              // U: [chunk, Dv], W: [chunk, Dk]
}

func newGDNScratch(dk, dv int) *gdnScratch {
	return &gdnScratch{u: make([]float32, chunk*dv), w: make([]float32, chunk*dk)}
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
			// A_ij = β_i (k_i·k_j) e^{Γ_i-Γ_j}, j < i; U = (I+A)^{-1} diag(β)V; W = (I+A)^{-1} diag(β e^Γ) K.
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
				for j := 0; j < i; j++ {
					aij := bi * ops.dot(ki, kOf(c0+j)) * float32(math.Exp(float64(sc.gam[i]-sc.gam[j])))
					ops.axpy(-aij, sc.u[j*dv:j*dv+dv], ui)
					ops.axpy(-aij, sc.w[j*dk:j*dk+dk], wi)
				}
			}
			// Vn_i = U_i - W_i S  (stored over U).
			for i := 0; i < n; i++ {
				ui := sc.u[i*dv : i*dv+dv]
				wi := sc.w[i*dk : i*dk+dk]
				for x := 0; x < dk; x++ {
					ops.axpy(-wi[x], s[x*dv:x*dv+dv], ui)
				}
			}
			// O_i = e^{Γ_i} q_i S + Σ_{j≤i} (q_i·k_j) e^{Γ_i-Γ_j} Vn_j.
			for i := 0; i < n; i++ {
				qi := qOf(c0 + i)
				oi := out[(c0+i)*hv*dv+h*dv : (c0+i)*hv*dv+h*dv+dv]
				for x := range oi {
					oi[x] = 0
				}
				eg := float32(math.Exp(float64(sc.gam[i])))
				for x := 0; x < dk; x++ {
					ops.axpy(eg*qi[x], s[x*dv:x*dv+dv], oi)
				}
				for j := 0; j <= i; j++ {
					c := ops.dot(qi, kOf(c0+j)) * float32(math.Exp(float64(sc.gam[i]-sc.gam[j])))
					ops.axpy(c, sc.u[j*dv:j*dv+dv], oi)
				}
			}
			// S = e^{Γ_last} S + Σ_j e^{Γ_last-Γ_j} k_j ⊗ Vn_j.
			last := sc.gam[n-1]
			el := float32(math.Exp(float64(last)))
			for x := range s {
				s[x] *= el
			}
			for j := 0; j < n; j++ {
				kj := kOf(c0 + j)
				f := float32(math.Exp(float64(last - sc.gam[j])))
				vn := sc.u[j*dv : j*dv+dv]
				for x := 0; x < dk; x++ {
					ops.axpy(f*kj[x], vn, s[x*dv:x*dv+dv])
				}
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
