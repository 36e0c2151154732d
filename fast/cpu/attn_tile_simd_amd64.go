//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"unsafe"
)

// scoreTileSIMD is scoreTilePortable in tiles of 4 query rows × 4 keys (scoreQuads, assembly: 16
// accumulators, each key vector loaded once for four rows) where the CPU has AVX-512 and d is a
// multiple of 16; leftover keys run as single dot products and leftover rows through scoreTile2x4.
// Its case is a decode step's query heads of one KV head against a tile of keys in L1.
func scoreTileSIMD(s, q []float32, m, d int, keys []float32, ks, n int) {
	if d%16 != 0 || m < 4 || n < 4 || !archsimd.X86.AVX512() {
		scoreTile2x4(s, q, m, d, keys, ks, n)
		return
	}
	m4, n4 := m&^3, n&^3
	for i := 0; i < m4; i += 4 {
		scoreQuads(&s[i*n], 4*n, &q[i*d], 4*d, &keys[0], 4*ks, d, n4/4)
		for r := i; r < i+4 && n4 < n; r++ {
			dotsSIMD(s[r*n+n4:(r+1)*n], q[r*d:(r+1)*d], keys[n4*ks:], ks)
		}
	}
	if m4 < m {
		scoreTile2x4(s[m4*n:], q[m4*d:], m-m4, d, keys, ks, n)
	}
}

// scoreTile2x4 is scoreTilePortable in tiles of 2 query rows × 4 keys (key quads outer, so four
// key rows stay in L1 while the query rows stream past): per 16 dimensions two
// query loads and four key loads feed eight FMAs (Dots: nine loads for eight), each key row serving
// both query rows; one reduce8 turns the eight accumulators into the tile's scores, stored as a
// 4-wide vector per row. Two 16-dimension steps per pass, the key vector the FMAs' first operand
// (Go's FMA overwrites it, so it is copied once, not the query vector three times). Needs AVX-512
// and d a multiple of 32; leftover rows and keys run as Dots.
func scoreTile2x4(s, q []float32, m, d int, keys []float32, ks, n int) {
	if d%32 != 0 || !archsimd.X86.AVX512() {
		for i := range m {
			dotsSIMD(s[i*n:(i+1)*n], q[i*d:(i+1)*d], keys, ks)
		}
		return
	}
	m2, n4 := m&^1, n&^3
	pq, pk, ps := unsafe.Pointer(unsafe.SliceData(q)), unsafe.Pointer(unsafe.SliceData(keys)), unsafe.Pointer(unsafe.SliceData(s))
	qs, kst := uintptr(4*d), uintptr(4*ks)
	var acc [8]archsimd.Float32x8
	for j := 0; j < n4; j += 4 {
		k0 := unsafe.Add(pk, uintptr(j)*kst)
		k1, k2, k3 := unsafe.Add(k0, kst), unsafe.Add(k0, 2*kst), unsafe.Add(k0, 3*kst)
		for i := 0; i < m2; i += 2 {
			q0 := unsafe.Add(pq, uintptr(i)*qs)
			q1 := unsafe.Add(q0, qs)
			var a00, a01, a02, a03, a10, a11, a12, a13 archsimd.Float32x16
			var u, v, kv archsimd.Float32x16
			for x := uintptr(0); x < qs; x += 128 {
				u, v = f32x16(unsafe.Add(q0, x)), f32x16(unsafe.Add(q1, x))
				kv = f32x16(unsafe.Add(k0, x))
				a00, a10 = kv.MulAdd(u, a00), kv.MulAdd(v, a10)
				kv = f32x16(unsafe.Add(k1, x))
				a01, a11 = kv.MulAdd(u, a01), kv.MulAdd(v, a11)
				kv = f32x16(unsafe.Add(k2, x))
				a02, a12 = kv.MulAdd(u, a02), kv.MulAdd(v, a12)
				kv = f32x16(unsafe.Add(k3, x))
				a03, a13 = kv.MulAdd(u, a03), kv.MulAdd(v, a13)
				u, v = f32x16(unsafe.Add(q0, x+64)), f32x16(unsafe.Add(q1, x+64))
				kv = f32x16(unsafe.Add(k0, x+64))
				a00, a10 = kv.MulAdd(u, a00), kv.MulAdd(v, a10)
				kv = f32x16(unsafe.Add(k1, x+64))
				a01, a11 = kv.MulAdd(u, a01), kv.MulAdd(v, a11)
				kv = f32x16(unsafe.Add(k2, x+64))
				a02, a12 = kv.MulAdd(u, a02), kv.MulAdd(v, a12)
				kv = f32x16(unsafe.Add(k3, x+64))
				a03, a13 = kv.MulAdd(u, a03), kv.MulAdd(v, a13)
			}
			acc[0], acc[1] = a00.GetLo().Add(a00.GetHi()), a01.GetLo().Add(a01.GetHi())
			acc[2], acc[3] = a02.GetLo().Add(a02.GetHi()), a03.GetLo().Add(a03.GetHi())
			acc[4], acc[5] = a10.GetLo().Add(a10.GetHi()), a11.GetLo().Add(a11.GetHi())
			acc[6], acc[7] = a12.GetLo().Add(a12.GetHi()), a13.GetLo().Add(a13.GetHi())
			r := reduce8(&acc)
			r.GetLo().Store((*[4]float32)(unsafe.Add(ps, 4*(i*n+j))))
			r.GetHi().Store((*[4]float32)(unsafe.Add(ps, 4*((i+1)*n+j))))
		}
	}
	archsimd.ClearAVXUpperBits()
	for i := range m2 {
		for j := n4; j < n; j++ {
			s[i*n+j] = dotSIMD(q[i*d:(i+1)*d], keys[j*ks:j*ks+d])
		}
	}
	for i := m2; i < m; i++ {
		dotsSIMD(s[i*n:(i+1)*n], q[i*d:(i+1)*d], keys, ks)
	}
}

// accumTileSIMD is accumTilePortable in tiles of 8 output rows × 32 dimensions (accumOctetRows,
// assembly: 16 accumulators, each value vector loaded once for eight rows, each weight broadcast
// from its row of p as it lies) where the CPU has AVX-512 and d is a multiple of 32; leftover rows
// run through accumTile4.
func accumTileSIMD(o []float32, m, d int, p []float32, n int, v []float32, vs int) {
	if d%32 != 0 || m < 8 || !archsimd.X86.AVX512() {
		accumTile4(o, m, d, p, n, v, vs)
		return
	}
	m8 := m &^ 7
	for i := 0; i < m8; i += 8 {
		accumOctetRows(&o[i*d], 4*d, &p[i*n], 4*n, n, &v[0], 4*vs, d/32)
	}
	if m8 < m {
		accumTile4(o[m8*d:], m-m8, d, p[m8*n:], n, v, vs)
	}
}

// accumOctet is in attn_tile_asm_amd64.s.
//
//go:noescape
func accumOctet(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)

// accumOctetNext, setOctetNext, setOctetStream and storeFence are in attn_tile_asm_amd64.s: the
// state update's octets (accumOctet prefetching the next octet's rows; overwriting o, the same;
// overwriting it with non-temporal stores) and the fence after the last.
//
//go:noescape
func accumOctetNext(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)

//go:noescape
func setOctetNext(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)

//go:noescape
func setOctetStream(o *float32, oRow int, pt *float32, n int, v *float32, vRow, chunks int)

func storeFence()

// accumTile4 is accumTilePortable in tiles of 4 output rows × 32 dimensions held in registers
// across the keys: per key two value loads and four broadcast weights feed eight FMAs (AxpyRows:
// one output row per pass over the values). The weights of a 4-row strip are first copied to the
// stack interleaved by key (pt[4j+r]), so each broadcast is one load. Needs AVX-512 and d a multiple
// of 32; leftover rows run as AxpyRows.
func accumTile4(o []float32, m, d int, p []float32, n int, v []float32, vs int) {
	if d%32 != 0 || !archsimd.X86.AVX512() {
		for i := range m {
			axpyRowsSIMD(o[i*d:(i+1)*d], p[i*n:(i+1)*n], v, vs)
		}
		return
	}
	m4 := m &^ 3
	var pt [4*maxTileKeys + 4]float32 // + 4: bcast16 reads 16 bytes at the last weight
	po, pv := unsafe.Pointer(unsafe.SliceData(o)), unsafe.Pointer(unsafe.SliceData(v))
	pp := unsafe.Pointer(&pt[0])
	os, vst := uintptr(4*d), uintptr(4*vs)
	for i := 0; i < m4; i += 4 {
		for j0 := 0; j0 < n; j0 += maxTileKeys {
			nb := min(maxTileKeys, n-j0)
			archsimd.ClearAVXUpperBits() // scalar copies next
			for j := range nb {
				for r := range 4 {
					pt[4*j+r] = p[(i+r)*n+j0+j]
				}
			}
			for x := 0; x < d; x += 32 {
				a := unsafe.Add(po, uintptr(i)*os+uintptr(4*x))
				b, c, e := unsafe.Add(a, os), unsafe.Add(a, 2*os), unsafe.Add(a, 3*os)
				c00, c01 := f32x16(a), f32x16(unsafe.Add(a, 64))
				c10, c11 := f32x16(b), f32x16(unsafe.Add(b, 64))
				c20, c21 := f32x16(c), f32x16(unsafe.Add(c, 64))
				c30, c31 := f32x16(e), f32x16(unsafe.Add(e, 64))
				vr0 := unsafe.Add(pv, uintptr(j0)*vst+uintptr(4*x))
				for j := range nb {
					vr := unsafe.Add(vr0, uintptr(j)*vst) // by index: one row past the end would fail checkptr
					v0, v1 := f32x16(vr), f32x16(unsafe.Add(vr, 64))
					w := bcast16(unsafe.Add(pp, 16*j))
					c00, c01 = w.MulAdd(v0, c00), w.MulAdd(v1, c01)
					w = bcast16(unsafe.Add(pp, 16*j+4))
					c10, c11 = w.MulAdd(v0, c10), w.MulAdd(v1, c11)
					w = bcast16(unsafe.Add(pp, 16*j+8))
					c20, c21 = w.MulAdd(v0, c20), w.MulAdd(v1, c21)
					w = bcast16(unsafe.Add(pp, 16*j+12))
					c30, c31 = w.MulAdd(v0, c30), w.MulAdd(v1, c31)
				}
				c00.Store((*[16]float32)(a))
				c01.Store((*[16]float32)(unsafe.Add(a, 64)))
				c10.Store((*[16]float32)(b))
				c11.Store((*[16]float32)(unsafe.Add(b, 64)))
				c20.Store((*[16]float32)(c))
				c21.Store((*[16]float32)(unsafe.Add(c, 64)))
				c30.Store((*[16]float32)(e))
				c31.Store((*[16]float32)(unsafe.Add(e, 64)))
			}
		}
	}
	archsimd.ClearAVXUpperBits()
	for i := m4; i < m; i++ {
		axpyRowsSIMD(o[i*d:(i+1)*d], p[i*n:(i+1)*n], v, vs)
	}
}

// scoreQuads is in attn_tile_asm_amd64.s.
//
//go:noescape
func scoreQuads(s *float32, sRow int, q *float32, qRow int, keys *float32, kRow, d, quads int)
