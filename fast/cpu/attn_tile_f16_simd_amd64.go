//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// The fp16 tiles below run on CPUs with AVX-512 only (simdImpl): elsewhere Kernels widens the
// block with the impl's fromF16 and runs its float32 tiles.

// scoreTileF16SIMD is ScoreTileF16 reading the fp16 keys inside the 4×4 tiles (scoreQuadsF16:
// VCVTPH2PS from memory, no widened copy) where the CPU has AVX-512, d is a multiple of 16 and the
// tile has at least 4 rows and 4 keys. Leftover keys (n mod 4) and rows (m mod 4) are widened into
// scratch and run where scoreTileSIMD runs them, so the scores are bit for bit those of widening the
// block first. scratch: [n, d] float32 at least where rows are left over, else [n mod 4, d]. vals
// (ScoreTileF16's) are prefetched by the first row quad's tiles.
func scoreTileF16SIMD(s, q []float32, m, d int, keys []uint16, ks, n int, scratch []float32, vals []uint16) {
	if d%16 != 0 || m < 4 || n < 4 || !archsimd.X86.AVX512() {
		scoreTileSIMD(s, q, m, d, widenRowsF16(scratch, keys, ks, d, n), d, n)
		return
	}
	m4, n4 := m&^3, n&^3
	var tail []float32 // [n−n4, d] the leftover keys, widened
	if n4 < n {
		tail = widenRowsF16(scratch, keys[n4*ks:], ks, d, n-n4)
	}
	vdelta := 0 // bytes from a key row to its value row, for the first row quad's prefetch
	if len(vals) >= (n4-1)*ks+d {
		vdelta = int(uintptr(unsafe.Pointer(&vals[0])) - uintptr(unsafe.Pointer(&keys[0])))
	}
	for i := 0; i < m4; i += 4 {
		scoreQuadsF16(&s[i*n], 4*n, &q[i*d], 4*d, &keys[0], 2*ks, d, n4/4, vdelta)
		vdelta = 0
		for r := i; r < i+4 && n4 < n; r++ {
			dotsSIMD(s[r*n+n4:(r+1)*n], q[r*d:(r+1)*d], tail, d)
		}
	}
	if m4 < m {
		scoreTile2x4(s[m4*n:], q[m4*d:], m-m4, d, widenRowsF16(scratch, keys, ks, d, n), d, n)
	}
}

// accumTileF16SIMD is AccumTileF16 reading the fp16 values inside the 8-row tile (accumOctetF16)
// where the CPU has AVX-512, d is a multiple of 32 and there are at least 8 rows; leftover rows
// (m mod 8) run on the block widened into scratch ([n, d]) through accumTile4, as accumTileSIMD
// runs them: bit for bit the results of widening first.
func accumTileF16SIMD(o []float32, m, d int, p []float32, n int, v []uint16, vs int, scratch []float32) {
	if d%32 != 0 || m < 8 || !archsimd.X86.AVX512() {
		accumTile4(o, m, d, p, n, widenRowsF16(scratch, v, vs, d, n), d)
		return
	}
	m8 := m &^ 7
	var pt [8 * maxTileKeys]float32
	for i := 0; i < m8; i += 8 {
		for j0 := 0; j0 < n; j0 += maxTileKeys {
			nb := min(maxTileKeys, n-j0)
			for j := range nb {
				for r := range 8 {
					pt[8*j+r] = p[(i+r)*n+j0+j]
				}
			}
			accumOctetF16(&o[i*d], 4*d, &pt[0], nb, &v[j0*vs], 2*vs, d/32)
		}
	}
	if m8 < m {
		accumTile4(o[m8*d:], m-m8, d, p[m8*n:], n, widenRowsF16(scratch, v, vs, d, n), d)
	}
}

// widenRowsF16 converts n rows of d fp16 values at stride rs into scratch: [n, d] float32.
func widenRowsF16(scratch []float32, rows []uint16, rs, d, n int) []float32 {
	if len(scratch) < n*d {
		panic("cpu: fp16 tile: scratch shorter than the rows it must widen")
	}
	if rs == d {
		f16ToF32SIMD(scratch[:n*d], rows[:n*d])
		return scratch[:n*d]
	}
	for j := range n {
		f16ToF32SIMD(scratch[j*d:(j+1)*d], rows[j*rs:j*rs+d])
	}
	return scratch[:n*d]
}

// scoreQuadsF16 is in attn_tile_f16_asm_amd64.s.
//
//go:noescape
func scoreQuadsF16(s *float32, sRow int, q *float32, qRow int, keys *uint16, kRow, d, quads, vdelta int)

// accumOctetF16 is in attn_tile_f16_asm_amd64.s.
//
//go:noescape
func accumOctetF16(o *float32, oRow int, pt *float32, n int, v *uint16, vRow, chunks int)
