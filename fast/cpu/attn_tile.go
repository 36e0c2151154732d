package cpu

// The prefill attention tiles: a block of query rows (the query heads of one KV head, for several
// prompt positions) against a block of cached keys is two small matrix products, scores = Q·Kᵀ
// (ScoreTile) and O += P·V (AccumTile). As products over tiles they load each key and value row
// once for several query rows, where the per-query helpers (Dots, AxpyRows) load it once per query.

// maxTileKeys is the most keys the SIMD AccumTile takes per pass (it copies a 4-row strip of P to
// the stack); longer blocks run in passes.
const maxTileKeys = 128

// ScoreTile computes s[i·n+j] = Σ_x q[i·d+x]·keys[j·ks+x] for i < m, j < n: m query rows of d
// (contiguous) against n keys at stride ks. s: [m, n].
func (k *Kernels) ScoreTile(s, q []float32, m, d int, keys []float32, ks, n int) {
	if m <= 0 || n <= 0 {
		return
	}
	if len(s) < m*n || len(q) < m*d || ks < d || len(keys) < (n-1)*ks+d {
		panic("cpu: ScoreTile: buffers too short for the shapes")
	}
	k.f.scoreTile(s, q, m, d, keys, ks, n)
}

// AccumTile computes o[i·d+x] += Σ_j p[i·n+j]·v[j·vs+x] for i < m, x < d: m output rows of d
// (contiguous) take the p-weighted sum of n value rows at stride vs. p: [m, n].
func (k *Kernels) AccumTile(o []float32, m, d int, p []float32, n int, v []float32, vs int) {
	if m <= 0 || n <= 0 {
		return
	}
	if len(o) < m*d || len(p) < m*n || vs < d || len(v) < (n-1)*vs+d {
		panic("cpu: AccumTile: buffers too short for the shapes")
	}
	k.f.accumTile(o, m, d, p, n, v, vs)
}

func scoreTilePortable(s, q []float32, m, d int, keys []float32, ks, n int) {
	for i := range m {
		dotsPortable(s[i*n:(i+1)*n], q[i*d:(i+1)*d], keys, ks)
	}
}

func accumTilePortable(o []float32, m, d int, p []float32, n int, v []float32, vs int) {
	for i := range m {
		axpyRowsPortable(o[i*d:(i+1)*d], p[i*n:(i+1)*n], v, vs)
	}
}
