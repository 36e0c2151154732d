package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// limbValue reads element i's limbs back from v: L = 65536·a + 256·b + c.
func limbValue(v *Vec, i int) int64 {
	g, j := i/GroupSize, i%GroupSize
	off := (g/2)*limbBytes + 32*(g%2) + j/2
	if j%2 != 0 {
		off += 64
	}
	return 65536*int64(v.l8[off]) + 256*int64(v.l8[off+128]) + int64(v.l8[off+256])
}

// TestPrepareLimbs checks the limb copy against its documented bound on inputs with wide dynamic
// range, exact zeros and equal magnitudes: per paired group, |x − dl·L| ≤ d/131072 with
// d = dl·65536 ≥ max|x|/127 (and no larger than max|x|/127 by more than float32 rounding), and the
// top limb within ±127.
func TestPrepareLimbs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		groups := rapid.IntRange(1, 20).Draw(t, "groups")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 4))
		x := make([]float32, groups*GroupSize)
		for i := range x {
			switch r.IntN(8) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = float32(math.Ldexp(r.NormFloat64(), r.IntN(60)-30))
			case 2:
				x[i] = float32(math.Copysign(3, r.NormFloat64())) // ties in magnitude
			default:
				x[i] = float32(r.NormFloat64())
			}
		}
		v := NewVec(len(x))
		v.Prepare(x)
		for g := range groups &^ 1 {
			var amax float64
			for _, e := range x[g*GroupSize : (g+1)*GroupSize] {
				amax = math.Max(amax, math.Abs(float64(e)))
			}
			d := float64(v.dl[g]) * limbScale
			if d < amax/127 || d > amax/127*(1+1e-6) {
				t.Fatalf("group %d: d = %g for max|x| = %g", g, d, amax)
			}
			for i := g * GroupSize; i < (g+1)*GroupSize; i++ {
				L := limbValue(v, i)
				if a := v.l8[(g/2)*limbBytes+32*(g%2)+(i%GroupSize)/2+64*(i%2)]; a < -127 {
					t.Fatalf("x[%d] = %g: top limb %d", i, x[i], a)
				}
				if e := math.Abs(float64(x[i]) - float64(v.dl[g])*float64(L)); e > d/131072*(1+1e-9) {
					t.Fatalf("x[%d] = %g: limbs %d give %g (|Δ| %g > %g)", i, x[i], L, float64(v.dl[g])*float64(L), e, d/131072)
				}
			}
		}
	})
}

// TestLimbsSplit checks the digit split on the whole range of L, at its ends and around every
// carry boundary.
func TestLimbsSplit(t *testing.T) {
	const top = 127 * 65536
	check := func(L int32) {
		a, b, c := limbs(L)
		if got := 65536*int32(a) + 256*int32(b) + int32(c); got != L || a < -127 || a > 127 {
			t.Fatalf("limbs(%d) = %d, %d, %d (= %d)", L, a, b, c, got)
		}
	}
	for _, L := range []int32{-top, -top + 1, -1, 0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, top - 1, top} {
		check(L)
	}
	rapid.Check(t, func(t *rapid.T) { check(rapid.Int32Range(-top, top).Draw(t, "L")) })
}

// TestLimbsSIMDMatchesPortable checks that the vector limb preparation, where this build and CPU
// have it, writes exactly the portable loop's bytes and scales.
func TestLimbsSIMDMatchesPortable(t *testing.T) {
	if v := NewVec(2 * GroupSize); !limbsSIMD(v, v.l8, vecLimbLayout(), make([]float32, 2*GroupSize)) {
		t.Skip("no vector limb preparation in this build or CPU (needs GOEXPERIMENT=simd on amd64 with AVX-512 VBMI)")
	}
	rapid.Check(t, func(t *rapid.T) {
		n := GroupSize * rapid.IntRange(1, 40).Draw(t, "groups")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 6))
		x := randVec(r, n)
		for i := range x {
			if r.IntN(10) == 0 {
				x[i] = float32(math.Ldexp(float64(x[i]), r.IntN(40)-20))
			}
		}
		a, b := NewVec(n), NewVec(n)
		a.Prepare(x)
		b.Prepare(x)
		limbsSIMD(a, a.l8, vecLimbLayout(), x)
		limbsPortable(b.dl, b.l8, vecLimbLayout(), x, len(b.sum)/2)
		for i := range a.l8 {
			if a.l8[i] != b.l8[i] {
				t.Fatalf("n %d: limb byte %d: %d, portable %d", n, i, a.l8[i], b.l8[i])
			}
		}
		for g := range a.dl {
			if a.dl[g] != b.dl[g] {
				t.Fatalf("n %d: dl[%d] %g, portable %g", n, g, a.dl[g], b.dl[g])
			}
		}
	})
}
