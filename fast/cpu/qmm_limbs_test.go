package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// fillRecordRef is the record layout written the straightforward way, the specification fill must
// match byte for byte: the Vec's limb copy (prepareLimbs, itself tested against its portable loop)
// copied pair by pair, the multiplier
// pattern per pair, and each group's sum of x̂ from its limbs, element by element.
func fillRecordRef(rec []byte, x []float32, v *Vec, blocks int, n int) {
	v.prepareLimbs(x)
	scale := qmmLimbScale(n)
	for b := range blocks {
		blk := rec[b*recBlockBytes : (b+1)*recBlockBytes]
		for p := range 4 {
			pair := 4*b + p
			dst := blk[p*recPairBytes : (p+1)*recPairBytes]
			copy(dst, int8Bytes(v.l8[pair*limbBytes:(pair+1)*limbBytes]))
			pat := float32View(dst[limbBytes:])
			for l := range 8 {
				pat[l] = v.dl[2*pair] * scale
				pat[8+l] = v.dl[2*pair+1] * scale
			}
		}
		sums := float32View(blk[recSumOff:])
		for j := range 8 {
			// Σ x̂ over the group: its elements' first n limbs (a, b, c at 0, 128, 256; even
			// elements of the pair's group h at 32h, odd ones 64 on), as one integer.
			g := 8*b + j
			l8 := v.l8[(g/2)*limbBytes:]
			var tot int64
			for e := range GroupSize {
				at := 64*(e%2) + 32*(g%2) + e/2
				var L int64
				for l := range n {
					L = L*256 + int64(l8[128*l+at])
				}
				tot += L
			}
			sums[j], sums[8+j] = float32(float64(tot)*float64(v.dl[g])*float64(scale)), 0
		}
	}
}

// recordInput draws a token row that exercises the limb split's corners: all-zero groups, values
// scaled over 80 binades (tiny next to huge in one group), exact ties of the rounding (halves of
// the limb unit), repeated maxima and negative zeros.
func recordInput(r *rand.Rand, n int) []float32 {
	x := randVec(r, n)
	for g := range n / GroupSize {
		xs := x[g*GroupSize : (g+1)*GroupSize]
		switch r.IntN(6) {
		case 0:
			clear(xs)
		case 1:
			for i := range xs {
				xs[i] = float32(math.Ldexp(float64(xs[i]), r.IntN(80)-40))
			}
		case 2: // max 127 → d = 1, limb unit 1/65536: halves of it are ties
			for i := range xs {
				xs[i] = float32(r.IntN(1<<17)-1<<16) / (1 << 17)
			}
			xs[r.IntN(GroupSize)] = 127
		case 3:
			for i := range xs {
				if r.IntN(3) == 0 {
					xs[i] = float32(math.Copysign(0, -1))
				}
			}
			xs[r.IntN(GroupSize)] = -xs[r.IntN(GroupSize)]
		}
	}
	return x
}

// TestLimbRecordsFill checks that fill writes exactly fillRecordRef's bytes, on every path this
// build has (vector and portable), at several widths and limb counts, into a dirty buffer.
func TestLimbRecordsFill(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := 8 * GroupSize * rapid.IntRange(1, 6).Draw(t, "blocks")
		n := rapid.IntRange(1, 3).Draw(t, "limbs")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 7))
		x := recordInput(r, in)
		var want, got limbRecords
		want.ensure(1, in)
		fillRecordRef(want.rec[:want.stride], x, NewVec(in), want.blocks, n)
		for _, path := range []string{"fill", "portable"} {
			got.ensure(1, in)
			for i := range got.rec {
				got.rec[i] = 0xA5
			}
			v := NewVec(in)
			if path == "fill" {
				got.fill(0, x, v, n)
			} else {
				got.fillPortable(got.rec[:got.stride], x, v, n)
			}
			for i := range got.stride {
				if got.rec[i] != want.rec[i] {
					b, o := i/recBlockBytes, i%recBlockBytes
					t.Fatalf("%s, in %d, %d limbs: block %d byte %d: %#x, want %#x", path, in, n, b, o, got.rec[i], want.rec[i])
				}
			}
		}
	})
}
