package cpu

import "math"

// The decay kernels of the chunked gated delta rule (fast/deltanet_chunk.go): within a chunk of
// tokens with cumulative log-decays Γ (non-increasing, reaching −100s under strong decay), every
// coefficient carries a factor e^{Γ_i−Γ_j}, e^{Γ_i} or e^{Γ_last−Γ_j} ≤ 1. The kernels compute those
// factors with a vector exp and zero every result under DecayTiny, so that no float32 subnormal
// reaches the tiles' FMAs, where each operand that is subnormal takes a microcode assist on x86.

// DecayTiny is the magnitude under which the decay kernels zero a result (and a decay factor
// before it multiplies anything). A term that small is 1e-30 of the O(1) terms it is summed with in
// the delta rule, far below float32's resolution; every multiplier the rule scales by a factor is
// at most 1 in magnitude (unit-norm keys, queries scaled down, β < 1), so zeroing the factor first
// zeroes only products the final test would zero too.
const DecayTiny = 1e-30

// decayMinArg is the exponent below which a factor is zeroed without evaluating it: e^{−80} is under
// DecayTiny, and the clamp keeps the SIMD exp's result a normal float32.
const decayMinArg = -80

// maxDecayN is the most coefficients per row the SIMD CausalDecay stages on its stack; larger
// chunks run the portable loop.
const maxDecayN = 256

// ExpTiny replaces each x[j] by e^{x[j]}, or 0 where that is under DecayTiny.
func (k *Kernels) ExpTiny(x []float32) { k.f.expTiny(x, k.exp) }

// ScaleRows computes dst[i·d+x] = f[i]·src[i·ss+x] for i < len(f), x < d, zeroed where its
// magnitude is under DecayTiny. dst: [len(f), d]; src rows at stride ss (dst may be src when ss
// is d).
func (k *Kernels) ScaleRows(dst []float32, d int, src []float32, ss int, f []float32) {
	m := len(f)
	if m == 0 || d == 0 {
		return
	}
	if len(dst) < m*d || ss < d || len(src) < (m-1)*ss+d {
		panic("cpu: ScaleRows: buffers too short for the shapes")
	}
	k.f.scaleRows(dst, d, src, ss, f)
}

// CausalDecay rewrites c: [n, n] in place as the decayed causal coefficients of a chunk:
// c[i·n+j] = s[i]·c[i·n+j]·e^{gam[i]−gam[j]} for j < i (j ≤ i unless strict), zeroed where its
// magnitude is under DecayTiny (the factor e^{gam[i]−gam[j]} first), and 0 for the other j.
// gam: [n]; s: [n], or nil for all ones.
func (k *Kernels) CausalDecay(c []float32, n int, gam, s []float32, strict bool) {
	if n <= 0 {
		return
	}
	if len(c) < n*n || len(gam) < n || (s != nil && len(s) < n) {
		panic("cpu: CausalDecay: buffers too short for the shapes")
	}
	k.f.causalDecay(c, n, gam, s, strict, k.exp)
}

// AccumTileT is AccumTile with the weights transposed: o[i·d+x] += Σ_j pt[j·ps+i]·v[j·vs+x] for
// i < m, x < d, j < n (weight row j holds key j's weight for every output row, at stride ps ≥ m).
func (k *Kernels) AccumTileT(o []float32, m, d int, pt []float32, ps, n int, v []float32, vs int) {
	k.tileT("AccumTileT", o, m, d, pt, ps, n, v, vs, tileAdd)
}

// SetTileT is AccumTileT onto zeros: o[i·d+x] = Σ_j pt[j·ps+i]·v[j·vs+x], o's old contents never
// read (the same bits as AccumTileT on a zeroed o). With stream, o's rows go to memory past the
// caches where the CPU can (non-temporal stores, fenced before SetTileT returns): for an output
// that other traffic would evict before it is read again, so that neither its old lines are read
// nor its new ones take cache from data read sooner.
func (k *Kernels) SetTileT(o []float32, m, d int, pt []float32, ps, n int, v []float32, vs int, stream bool) {
	out := tileSet
	if stream {
		out = tileStream
	}
	k.tileT("SetTileT", o, m, d, pt, ps, n, v, vs, out)
}

// tileOut is what a transposed tile does with its output: adds to it, overwrites it, or overwrites
// it past the caches.
type tileOut uint8

const (
	tileAdd tileOut = iota
	tileSet
	tileStream
)

func (k *Kernels) tileT(name string, o []float32, m, d int, pt []float32, ps, n int, v []float32, vs int, out tileOut) {
	if m <= 0 || d <= 0 {
		return
	}
	if n <= 0 {
		if out != tileAdd {
			clear(o[:m*d])
		}
		return
	}
	if len(o) < m*d || ps < m || len(pt) < (n-1)*ps+m || vs < d || len(v) < (n-1)*vs+d {
		panic("cpu: " + name + ": buffers too short for the shapes")
	}
	k.f.accumTileT(o, m, d, pt, ps, n, v, vs, out)
}

// decayFactor returns e^{x} in float32, or 0 where it is under DecayTiny.
func decayFactor(x float32) float32 {
	if x < decayMinArg {
		return 0
	}
	e := float32(math.Exp(float64(x)))
	if e < DecayTiny {
		return 0
	}
	return e
}

// flushTiny returns x, or 0 when |x| < DecayTiny.
func flushTiny(x float32) float32 {
	if x < DecayTiny && x > -DecayTiny {
		return 0
	}
	return x
}

func expTinyPortable(x []float32, _ *expConsts) {
	for j, e := range x {
		x[j] = decayFactor(e)
	}
}

func scaleRowsPortable(dst []float32, d int, src []float32, ss int, f []float32) {
	for i, a := range f {
		o, r := dst[i*d:(i+1)*d], src[i*ss:i*ss+d]
		for x, e := range r {
			o[x] = flushTiny(a * e)
		}
	}
}

func causalDecayPortable(c []float32, n int, gam, s []float32, strict bool, _ *expConsts) {
	for i := range n {
		lim, si := i+1, float32(1)
		if strict {
			lim = i
		}
		if s != nil {
			si = s[i]
		}
		row := c[i*n : (i+1)*n]
		for j := range lim {
			row[j] = flushTiny(si * row[j] * decayFactor(gam[i]-gam[j]))
		}
		clear(row[lim:])
	}
}

func accumTileTPortable(o []float32, m, d int, pt []float32, ps, n int, v []float32, vs int, out tileOut) {
	if out != tileAdd {
		clear(o[:m*d])
	}
	for j := range n {
		w, vr := pt[j*ps:j*ps+m], v[j*vs:j*vs+d]
		for i, a := range w {
			axpyPortable(o[i*d:(i+1)*d], a, vr)
		}
	}
}

// UnitLowerInverse computes t = (I − L)⁻¹: [n, n] for L the strictly lower triangle of l: [n, n]
// (l's diagonal and upper triangle are not read): row i of t is e_i + Σ_{j<i} l[i·n+j]·t_j,
// each element below the diagonal zeroed where its magnitude is under DecayTiny. t is unit lower
// triangular, its upper triangle stored as zeros. The chunked delta rule's (I + A)⁻¹ is this
// with l = −A.
func (k *Kernels) UnitLowerInverse(t, l []float32, n int) {
	if n <= 0 {
		return
	}
	if len(t) < n*n || len(l) < n*n {
		panic("cpu: UnitLowerInverse: buffers too short for the shapes")
	}
	k.f.unitLowerInverse(t, l, n)
}

// AccumTileLower is AccumTile for lower-triangular weights: o[i·d+x] += Σ_{j≤i} p[i·m+j]·v[j·vs+x]
// for i < m, x < d. p: [m, m], its upper triangle zero (the SIMD tile reads the part of it inside
// each 8-row group's diagonal block).
func (k *Kernels) AccumTileLower(o []float32, m, d int, p []float32, v []float32, vs int) {
	if m <= 0 {
		return
	}
	if len(o) < m*d || len(p) < m*m || vs < d || len(v) < (m-1)*vs+d {
		panic("cpu: AccumTileLower: buffers too short for the shapes")
	}
	k.f.accumTileLower(o, m, d, p, v, vs)
}

func unitLowerInversePortable(t, l []float32, n int) {
	for i := range n {
		ti := t[i*n : (i+1)*n]
		for x := range i {
			var a float32
			for j := x; j < i; j++ { // t[j·n+x] = 0 for j < x
				a += l[i*n+j] * t[j*n+x]
			}
			ti[x] = flushTiny(a)
		}
		ti[i] = 1
		clear(ti[i+1:])
	}
}

func accumTileLowerPortable(o []float32, m, d int, p []float32, v []float32, vs int) {
	for i := range m {
		axpyRowsPortable(o[i*d:(i+1)*d], p[i*m:i*m+i+1], v, vs)
	}
}

// ScoreTileLower is ScoreTile for causal scores: s[i·m+j] = q_i·keys_j for j ≤ i < m (q: [m, d]
// contiguous, keys at stride ks); s: [m, m], whose elements above the diagonal are left
// unspecified (the SIMD tile writes some of them).
func (k *Kernels) ScoreTileLower(s, q []float32, m, d int, keys []float32, ks int) {
	if m <= 0 {
		return
	}
	if len(s) < m*m || len(q) < m*d || ks < d || len(keys) < (m-1)*ks+d {
		panic("cpu: ScoreTileLower: buffers too short for the shapes")
	}
	k.f.scoreTileLower(s, q, m, d, keys, ks)
}

func scoreTileLowerPortable(s, q []float32, m, d int, keys []float32, ks int) {
	for i := range m {
		dotsPortable(s[i*m:i*m+i+1], q[i*d:(i+1)*d], keys, ks)
	}
}
