package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/lily-engine/lily/internal/safetensors"
)

// f16KVTol is the fp16 KV tiles' budget against the float32 tiles on the unrounded keys and
// values, relative to Σ|terms|: each stored element is within 2^-11 of itself (one fp16 rounding,
// 10 mantissa bits, normal range), plus the float32 tile's own opsTol.
const f16KVTol = 1.0/2048 + opsTol

// TestF16RowSIMD: every variant's F16Row and widening agree bit for bit with safetensors.Float32ToF16 / F16ToFloat32, on
// lengths around the 16-value vector and values across fp16's range (subnormals, overflow, ties).
func TestF16RowSIMD(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	r := rand.New(rand.NewPCG(5, 5))
	for name, k := range variants(p) {
		for _, n := range []int{1, 15, 16, 17, 256, 263} {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(math.Ldexp(r.NormFloat64(), r.IntN(48)-30))
			}
			src[0] = 1 + 1.0/2048 // a tie: rounds to even (1)
			dst := make([]uint16, n)
			k.F16Row(dst, src)
			back := make([]float32, n)
			k.f.fromF16(back, dst)
			for i, f := range src {
				if dst[i] != safetensors.Float32ToF16(f) || math.Float32bits(back[i]) != math.Float32bits(safetensors.F16ToFloat32(dst[i])) {
					t.Fatalf("%s n %d: [%d] %g → %#04x → %g, want %#04x → %g", name, n, i, f, dst[i], back[i], safetensors.Float32ToF16(f), safetensors.F16ToFloat32(dst[i]))
				}
			}
		}
	}
}

// TestAttentionTilesF16: the fp16 tiles against the float32 tiles on the unrounded keys and values,
// within f16KVTol, with rows at a stride wider than the head (the cache's rows hold every KV head).
func TestAttentionTilesF16(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(rt *rapid.T) {
		d := rapid.SampledFrom([]int{3, 16, 32, 256}).Draw(rt, "d")
		m := rapid.IntRange(1, 11).Draw(rt, "m")
		n := rapid.OneOf(rapid.IntRange(1, 13), rapid.Just(maxTileKeys+5)).Draw(rt, "n")
		stride := d + rapid.SampledFrom([]int{0, 5, d}).Draw(rt, "extra")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 13))
		q, rows, pw, o0 := randVec(r, m*d), randVec(r, (n-1)*stride+d), randVec(r, m*n), randVec(r, m*d)
		h := make([]uint16, len(rows))
		f32ToF16Portable(h, rows)
		scratch := make([]float32, n*d)
		for name, k := range ks {
			s := make([]float32, m*n)
			k.ScoreTileF16(s, q, m, d, h, stride, n, scratch, h)
			for i := range m {
				for j := range n {
					var want, mass float64
					for x := range d {
						v := float64(q[i*d+x]) * float64(rows[j*stride+x])
						want, mass = want+v, mass+math.Abs(v)
					}
					if math.Abs(float64(s[i*n+j])-want) > f16KVTol*mass+1e-30 {
						rt.Fatalf("%s ScoreTileF16 m %d d %d n %d (%d, %d): %g, want %g", name, m, d, n, i, j, s[i*n+j], want)
					}
				}
			}
			o := append([]float32(nil), o0...)
			k.AccumTileF16(o, m, d, pw, n, h, stride, scratch)
			for i := range m {
				for x := range d {
					want, mass := float64(o0[i*d+x]), math.Abs(float64(o0[i*d+x]))
					for j := range n {
						v := float64(pw[i*n+j]) * float64(rows[j*stride+x])
						want, mass = want+v, mass+math.Abs(v)
					}
					if math.Abs(float64(o[i*d+x])-want) > f16KVTol*mass+1e-30 {
						rt.Fatalf("%s AccumTileF16 m %d d %d n %d (%d, %d): %g, want %g", name, m, d, n, i, x, o[i*d+x], want)
					}
				}
			}
		}
	})
}

// TestAttentionTilesF16Exact: the fp16 tiles (which read fp16 inside the SIMD register tiles where
// the shapes allow) against the float32 tiles on the same keys and values widened first, on every
// variant, whatever value rows the score tile is given to prefetch. Budget: none, bit for bit: the
// conversion is exact and the two run the same products in the same order. Shapes around the 4×4
// score and 8-row accumulate tiles and their leftovers, the real decode (8 rows) and prefill (64
// rows) tiles at D = 256 and the cache's stride of 2 KV heads.
func TestAttentionTilesF16Exact(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	ks := variants(p)
	rapid.Check(t, func(rt *rapid.T) {
		d := rapid.SampledFrom([]int{3, 16, 32, 48, 256}).Draw(rt, "d")
		m := rapid.OneOf(rapid.IntRange(1, 19), rapid.Just(64)).Draw(rt, "m")
		n := rapid.OneOf(rapid.IntRange(1, 13), rapid.Just(64), rapid.Just(maxTileKeys+5)).Draw(rt, "n")
		stride := d + rapid.SampledFrom([]int{0, 5, d}).Draw(rt, "extra")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 14))
		q, pw, o0 := randVec(r, m*d), randVec(r, m*n), randVec(r, m*d)
		h := make([]uint16, (n-1)*stride+d)
		f32ToF16Portable(h, randVec(r, len(h)))
		wide := make([]float32, len(h)) // the fp16 rows widened, at the same stride
		f16ToF32Portable(wide, h)
		// The value rows the score tile prefetches (the cache's value array): none, as many as the
		// keys, or too few (then none are); the scores must not depend on them.
		var vals []uint16
		switch rapid.IntRange(0, 2).Draw(rt, "vals") {
		case 1:
			vals = make([]uint16, len(h))
		case 2:
			vals = make([]uint16, len(h)/2)
		}
		for name, k := range ks {
			want, got := make([]float32, m*n), make([]float32, m*n)
			k.ScoreTile(want, q, m, d, wide, stride, n)
			k.ScoreTileF16(got, q, m, d, h, stride, n, make([]float32, n*d), vals)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					rt.Fatalf("%s ScoreTileF16 m %d d %d n %d stride %d [%d]: %g, want %g", name, m, d, n, stride, i, got[i], want[i])
				}
			}
			wo, gotO := append([]float32(nil), o0...), append([]float32(nil), o0...)
			k.AccumTile(wo, m, d, pw, n, wide, stride)
			k.AccumTileF16(gotO, m, d, pw, n, h, stride, make([]float32, n*d))
			for i := range wo {
				if math.Float32bits(gotO[i]) != math.Float32bits(wo[i]) {
					rt.Fatalf("%s AccumTileF16 m %d d %d n %d stride %d [%d]: %g, want %g", name, m, d, n, stride, i, gotO[i], wo[i])
				}
			}
		}
	})
}

// TestF16ToF32F16C: the 256-bit F16C widening (the fp16 tiles' path on CPUs without AVX-512)
// against safetensors.F16ToFloat32, bit for bit, on every fp16 pattern but the NaNs, which must
// stay NaN (the hardware sets a signalling NaN's quiet bit; the plain Go conversion keeps it).
func TestF16ToF32F16C(t *testing.T) {
	if !hasF16CForTest() {
		t.Skip("the CPU has no F16C (or this build has no SIMD kernels)")
	}
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]float32, len(src))
	f16ToF32F16CForTest(dst, src)
	for i, h := range src {
		if w := safetensors.F16ToFloat32(h); w != w {
			if dst[i] == dst[i] {
				t.Fatalf("%#04x: %g, want NaN", h, dst[i])
			}
			continue
		}
		if got, want := math.Float32bits(dst[i]), math.Float32bits(safetensors.F16ToFloat32(h)); got != want {
			t.Fatalf("%#04x: %#08x, want %#08x", h, got, want)
		}
	}
}
