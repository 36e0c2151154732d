package fast

import "math"

// prefillQTokens is how many prompt positions one unit of the prefill attention takes: their
// query heads that share one KV head (8 positions × 8 heads = 64 query rows at the real sizes) go
// through the keys together, so that each key and value row is loaded once for all of them.
const prefillQTokens = 8

// prefillKeyBlock is the key count of one step of a unit: 64 keys and their values (64 KB each at
// the real head size, in L2) serve all the unit's query rows; smaller blocks pay the running
// softmax's rescale more often, larger ones fall out of L2.
const prefillKeyBlock = 64

// attendPrefill computes the gated causal attention of prompt positions s.pos … s.pos+t−1, whose
// keys and values are already in the cache: for query head h of position i,
// ao[i, h] = (Σ_{p ≤ s.pos+i} softmax_p(q·k_p) v_p) ⊙ sigmoid(gate[i, h]).
// qh, gate, ao: [t, Hq·D], the queries scaled by D^-1/2 (queryHead).
//
// A unit is (block of prefillQTokens positions, KV head). Per block of prefillKeyBlock keys it
// computes the scores of all its query rows (cpu.Kernels.ScoreTileF16 on the fp16 cache), masks the
// keys past each row's position, folds them into each row's running softmax (rescaling the row when
// its maximum grows) and adds the weighted values (cpu.Kernels.AccumTileF16). Memory per unit is
// fixed by the block sizes, never by the context: no [t, n] score matrix exists.
func (s *Session) attendPrefill(li int, qh, gate []float32, t int, ao []float32) {
	m, c := s.m, s.m.cfg
	hq, hkv, hd := c.NumHeads, c.NumKVHeads, c.HeadDim
	qw, kw, rep := hq*hd, hkv*hd, hq/hkv
	kv := s.kv[li]
	blocks := (t + prefillQTokens - 1) / prefillQTokens
	m.run.Run(hkv*blocks, func(lo, hi int) {
		rows := prefillQTokens * rep
		qb := make([]float32, rows*hd) // [rows, D]: row r is position i0 + r/rep, head kvh·rep + r%rep
		ob := make([]float32, rows*hd) // [rows, D] the rows' unnormalised outputs
		sc := make([]float32, rows*prefillKeyBlock)
		wd := make([]float32, prefillKeyBlock*hd) // [block, D] the block's fp16 keys, then values, widened
		mx := make([]float32, rows)
		sum := make([]float64, rows)
		for u := lo; u < hi; u++ {
			blk, kvh := u/hkv, u%hkv
			i0, i1 := blk*prefillQTokens, min(t, (blk+1)*prefillQTokens)
			nr := (i1 - i0) * rep
			for i := i0; i < i1; i++ {
				copy(qb[(i-i0)*rep*hd:(i-i0+1)*rep*hd], qh[i*qw+kvh*rep*hd:i*qw+(kvh+1)*rep*hd])
			}
			clear(ob[:nr*hd])
			for r := range nr {
				mx[r], sum[r] = float32(math.Inf(-1)), 0
			}
			n := s.pos + i1 // keys the block's last position sees
			for p0 := 0; p0 < n; p0 += prefillKeyBlock {
				nb := min(n, p0+prefillKeyBlock) - p0
				st := sc[:nr*nb]
				kv.scoreTile(m.ops, st, qb, nr, hd, p0*kw+kvh*hd, kw, nb, wd)
				for r := range nr {
					row := st[r*nb : (r+1)*nb]
					valid := min(nb, s.pos+i0+r/rep+1-p0) // keys p0 … this row's position
					if valid <= 0 {
						clear(row)
						continue
					}
					m.ops.foldScores(row[:valid], ob[r*hd:(r+1)*hd], &mx[r], &sum[r])
					clear(row[valid:])
				}
				kv.accumTile(m.ops, ob, nr, hd, st, nb, p0*kw+kvh*hd, kw, wd)
			}
			for r := range nr {
				at := (i0+r/rep)*qw + (kvh*rep+r%rep)*hd
				dst, g, o := ao[at:at+hd], gate[at:at+hd], ob[r*hd:(r+1)*hd]
				for x := range dst {
					dst[x] = float32(float64(o[x])/sum[r]) * sigmoid(g[x])
				}
			}
		}
	})
}
