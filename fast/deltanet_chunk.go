package fast

import (
	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/checkpoint"
)

// chunk is the DeltaNet prefill chunk length (model.md §4.3 step 8; any length gives the same
// result up to rounding). The work within a chunk grows with its length (its C×C tiles: ~5·C·Dk
// products a token and head) while the state's does not (~3·Dk·Dv): 16 rather than the reference's
// 64 takes 14% less time (BenchmarkDeltaNetChunked), and the tiles still run at full width.
const chunk = 16

// deltanetScratch is one worker's working memory for the chunked delta rule, one value head at a
// time. The "K then Q" buffers hold a chunk's n key rows and then its n query rows contiguously, so
// that one tile call serves both.
type deltanetScratch struct {
	gam    [chunk]float32     // Γ_i: cumulative log-decay inside the chunk
	el     [chunk]float32     // e^{Γ_last−Γ_j}
	bt, nb [chunk]float32     // β_i and −β_i
	f      [2 * chunk]float32 // the factors of kq's rows: −β_i e^{Γ_i} (keys), then e^{Γ_i} (queries)
	kq     []float32          // [2·chunk, Dk]: the chunk's k rows then its q rows, gathered
	sq     []float32          // [2·chunk, Dk]: kq's rows times f; then e^{Γ_last−Γ_j} k_j
	cc     []float32          // [2·chunk, chunk]: k_i·k_j then q_i·k_j; then −A and the causal decayed scores
	tm     []float32          // [chunk, chunk]: (I + A)⁻¹
	xo     []float32          // [2·chunk, Dv]: diag(β)V − diag(β e^Γ) K S, then diag(e^Γ) Q S and the outputs
	u      []float32          // [chunk, Dv]: Vn
}

func newDeltaNetScratch(dk, dv int) *deltanetScratch {
	return &deltanetScratch{kq: make([]float32, 2*chunk*dk), sq: make([]float32, 2*chunk*dk),
		cc: make([]float32, 2*chunk*chunk), tm: make([]float32, chunk*chunk),
		xo: make([]float32, 2*chunk*dv), u: make([]float32, chunk*dv)}
}

// deltanetChunked runs the gated delta rule over T tokens for value heads [lo, hi) in the chunked
// form (mathematically equal to deltanetStep applied T times, see model.md §4.3 step 8).
// qk: [T, 2*Hk*Dk] normalised q then k per token (row stride qkStride); v: [T, *] value rows with
// head h at v[t*vStride + h*Dv]; g, beta: [T, Hv]; state: [Hv, Dk, Dv]; out: [T, Hv*Dv].
//
// Per chunk, with A_ij = β_i (k_i·k_j) e^{Γ_i−Γ_j} (j < i) and T = (I + A)⁻¹ (cpu.UnitLowerInverse,
// a small triangular recurrence): Vn = T (diag(β)V − diag(β e^Γ) K S); the outputs
// O = diag(e^Γ) Q S + (causal mask ∘ Q Kᵀ ∘ e^{Γ_i−Γ_j}) Vn; the state
// S = e^{Γ_last} S + Σ_j e^{Γ_last−Γ_j} k_j ⊗ Vn_j. Every product is a tile: scoreTileLower for
// the lower triangles of K·Kᵀ and Q·Kᵀ, accumTile for K·S and Q·S together, accumTileLower for the
// two triangular products, accumTileT for the state update (reading the decayed keys as they
// lie). The decay factors and their products are the vector decay kernels (cpu.CausalDecay,
// ScaleRows, ExpTiny), which zero every term under cpu.DecayTiny, so that no subnormal reaches
// the tiles' FMAs (on x86 each one that reads a subnormal takes a microcode assist: with strong
// decays, e^{Γ} reaches e^{−100} and below inside a chunk).
//
// zero says the state holds zeros (a sequence's first tokens): the first chunk then skips the
// terms that read it (K·S, Q·S and the state's decay) and overwrites the state rather than adding
// to it (cpu.SetTileT), which on a short prompt would be passes over every head's state from DRAM;
// the results are the same but for the sign of zeros.
//
// sc is the calling worker's scratch, reused from head to head (it stays in the caches).
func deltanetChunked(ops vecOps, d *checkpoint.Dims, t int, qk []float32, qkStride int, v []float32, vStride int, g, beta, state, out []float32,
	sc *deltanetScratch, lo, hi int, zero bool) {
	dk, dv, hv := d.Dk, d.Dv, d.Hv
	rep := hv / d.Hk
	kOff := d.Hk * dk
	for h := lo; h < hi; h++ {
		kh := h / rep
		s := state[h*dk*dv : (h+1)*dk*dv]
		for c0 := 0; c0 < t; c0 += chunk {
			n := min(chunk, t-c0)
			gam, el, f := sc.gam[:n], sc.el[:n], sc.f[:2*n]
			var run float32
			for i := 0; i < n; i++ {
				run += g[(c0+i)*hv+h]
				gam[i] = run
				b := beta[(c0+i)*hv+h]
				sc.bt[i], sc.nb[i] = b, -b
				row := qk[(c0+i)*qkStride:]
				copy(sc.kq[i*dk:(i+1)*dk], row[kOff+kh*dk:kOff+kh*dk+dk])
				copy(sc.kq[(n+i)*dk:(n+i+1)*dk], row[kh*dk:kh*dk+dk])
			}
			last := gam[n-1]
			copy(f[n:], gam)
			for j, e := range gam {
				el[j] = last - e
			}
			ops.expTiny(f[n:])
			ops.expTiny(el)
			for i, e := range f[n:] {
				f[i] = flushTiny(sc.nb[i] * e)
			}
			kq, kg, sq := sc.kq[:2*n*dk], sc.kq[:n*dk], sc.sq[:2*n*dk]
			cc, tm, xo, u := sc.cc[:2*n*n], sc.tm[:n*n], sc.xo[:2*n*dv], sc.u[:n*dv]
			ops.scoreTileLower(cc[:n*n], kg, n, dk, kg, dk)
			ops.scoreTileLower(cc[n*n:], kq[n*dk:], n, dk, kg, dk)
			ops.causalDecay(cc[:n*n], n, gam, sc.nb[:n], true) // −A
			ops.causalDecay(cc[n*n:], n, gam, nil, false)
			ops.unitLowerInverse(tm, cc[:n*n], n)
			empty := zero && c0 == 0 // S = 0: no K·S, Q·S or decay
			ops.scaleRows(xo, dv, v[c0*vStride+h*dv:], vStride, sc.bt[:n])
			clear(xo[n*dv:])
			if !empty {
				ops.scaleRows(sq, dk, kq, dk, f)
				ops.accumTile(xo, 2*n, dv, sq, dk, s, dv)
			}
			clear(u)
			ops.accumTileLower(u, n, dv, tm, xo, dv)
			ob := xo[n*dv:]
			ops.accumTileLower(ob, n, dv, cc[n*n:], u, dv)
			for i := 0; i < n; i++ {
				copy(out[(c0+i)*hv*dv+h*dv:(c0+i)*hv*dv+h*dv+dv], ob[i*dv:(i+1)*dv])
			}
			if !empty {
				ops.scaleAxpy(s, f[2*n-1], 0, s)
			}
			ops.scaleRows(sq, dk, kg, dk, el)
			if empty {
				// The state is zero: written, not read; past the caches when no later chunk of
				// this call reads it back (the next reader comes after the other layers' traffic).
				ops.setTileT(s, dk, dv, sq, dk, n, u, dv, c0+n == t)
			} else {
				ops.accumTileT(s, dk, dv, sq, dk, n, u, dv)
			}
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
