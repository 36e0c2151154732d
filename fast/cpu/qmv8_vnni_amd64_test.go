//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"

	"pgregory.net/rapid"
)

// TestVNNI8Selected checks that New picks the 8-bit VNNI mat-vec exactly where the CPU has AVX-512
// VNNI and VBMI, and that a Vec it reads is not given the float32 kernel's 8-bit order.
func TestVNNI8Selected(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	k := New(p)
	want := archsimd.X86.AVX512() && archsimd.X86.AVX512VNNI() && archsimd.X86.AVX512VBMI()
	if k.f.vnni8 != want {
		t.Fatalf("vnni8 = %v on a CPU with AVX-512 %v, VNNI %v, VBMI %v", k.f.vnni8, archsimd.X86.AVX512(),
			archsimd.X86.AVX512VNNI(), archsimd.X86.AVX512VBMI())
	}
	if !want {
		return
	}
	r := newRand(8)
	m, x := randQMat(r, 8, 16, 8*GroupSize), randVec(r, 8*GroupSize)
	v := k.NewVec(8 * GroupSize)
	v.Prepare(x)
	k.QMatVec(make([]float32, 16), m, v)
	if v.hasP8 {
		t.Fatal("the 8-bit VNNI mat-vec's Vec was given the float32 kernel's 8-bit order")
	}
}

// TestVNNI8RowsAnySplit checks that an 8-bit row gets the same bits whichever rows a call covers:
// in a four-row pass, or among the last rows of a call that run as a padded pass (every Out that
// is not a multiple of 4, the one-row shared-expert gate among them), for outlier groups too.
func TestVNNI8RowsAnySplit(t *testing.T) {
	if !archsimd.X86.AVX512() || !archsimd.X86.AVX512VNNI() || !archsimd.X86.AVX512VBMI() {
		t.Skip("no AVX-512 VNNI and VBMI on this CPU: the 8-bit VNNI mat-vec does not run")
	}
	rapid.Check(t, func(t *rapid.T) {
		out := rapid.IntRange(1, 40).Draw(t, "out")
		in := 8 * GroupSize * rapid.IntRange(1, 4).Draw(t, "blocks")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 8))
		m, x := randQMat(r, 8, out, in), randVec(r, in)
		x[r.IntN(in)] *= 1000
		v := NewVec(in)
		v.Prepare(x)
		all := make([]float32, out)
		qmv8RowsVNNI(all, m, v, 0, out)
		lo := rapid.IntRange(0, out-1).Draw(t, "lo")
		hi := rapid.IntRange(lo+1, out).Draw(t, "hi")
		part, one := make([]float32, out), make([]float32, out)
		qmv8RowsVNNI(part, m, v, lo, hi)
		for o := lo; o < hi; o++ {
			qmv8RowsVNNI(one, m, v, o, o+1)
			if a, b, c := math.Float32bits(all[o]), math.Float32bits(part[o]), math.Float32bits(one[o]); a != b || a != c {
				t.Fatalf("[%d,%d]: y[%d] = %g over all rows, %g over [%d,%d), %g alone", out, in, o, all[o], part[o], lo, hi, one[o])
			}
		}
	})
}
