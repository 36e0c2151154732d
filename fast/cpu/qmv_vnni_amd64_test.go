//go:build goexperiment.simd && amd64

package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"simd/archsimd"
	"strings"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

// TestVNNISelected checks that New picks the VNNI mat-vec wherever the CPU has AVX-512 VNNI, and
// only there (its budget is TestQMatVecLimbBudget's).
func TestVNNISelected(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	want := archsimd.X86.AVX512() && archsimd.X86.AVX512VNNI()
	if got := New(p).VNNI(); got != want {
		t.Fatalf("New(p).VNNI() = %v on a CPU with AVX-512 %v, VNNI %v", got, archsimd.X86.AVX512(), archsimd.X86.AVX512VNNI())
	}
	k512 := newKernels(p, simdImpl(level512), true)
	if k512.VNNI() {
		t.Fatal("level512 kernels use VNNI")
	}
	if k512.NewVec(8*GroupSize).l8 != nil {
		t.Fatal("a Vec for kernels without VNNI carries the limb copy")
	}
	if !want {
		return
	}
	// The VNNI kernels' own Vec leaves out the float32 kernels' orders where the limbs serve every
	// 4-bit row (whole 8-group blocks), keeps them elsewhere, and gives NewVec's bits either way.
	for _, in := range []int{8 * GroupSize, 12 * GroupSize} {
		r := newRand(uint64(in))
		m4, m8, x := randQMat(r, 4, 24, in), randQMat(r, 8, 24, in), randVec(r, in)
		kv, full := New(p).NewVec(in), NewVec(in)
		if kv.floatQ4 != (in/GroupSize%8 != 0) {
			t.Fatalf("in %d: Kernels.NewVec floatQ4 = %v", in, kv.floatQ4)
		}
		kv.Prepare(x)
		full.Prepare(x)
		for _, m := range []*QMat{m4, m8} {
			a, b := make([]float32, m.Out), make([]float32, m.Out)
			New(p).QMatVec(a, m, kv)
			New(p).QMatVec(b, m, full)
			for o := range a {
				if math.Float32bits(a[o]) != math.Float32bits(b[o]) {
					t.Fatalf("in %d, %d-bit: y[%d] = %g on Kernels.NewVec's Vec, %g on NewVec's", in, m.Bits, o, a[o], b[o])
				}
			}
		}
	}
	// A Vec without limbs handed to the VNNI kernel is refused, not read as zeros.
	v := k512.NewVec(8 * GroupSize)
	v.Prepare(make([]float32, 8*GroupSize))
	m := randQMat(newRand(1), 4, 8, 8*GroupSize)
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "limb copy") {
			t.Fatalf("QMatVec on the VNNI kernel with a Vec without the limb copy: recovered %q, want the check's refusal", msg)
		}
	}()
	New(p).QMatVec(make([]float32, 8), m, v)
}

// vnniRows1 runs qmv4RowsVNNI's one-row assembly loop on every row of [lo, hi) (qmv4RowsVNNI
// itself runs whole four-row passes first where the CPU has GFNI).
func vnniRows1(y []float32, m *QMat, v *Vec, lo, hi int) {
	groups, rb := m.Groups(), m.RowBytes()
	qmv4RowsVNNIAsm(&y[lo], hi-lo, unsafe.Pointer(&m.W[lo*rb]),
		unsafe.Pointer(&m.Scales[lo*groups]), unsafe.Pointer(&m.Biases[lo*groups]), groups/8,
		unsafe.Pointer(&v.l8[0]), unsafe.Pointer(&v.dl[0]), unsafe.Pointer(&v.sum[0]))
}

// TestVNNIRows4MatchesRows1 checks that the four-row pass gives the one-row loop's bits on every
// row (same integer sums, same float32 operations in the same order), for row counts that leave
// every remainder and for outlier groups.
func TestVNNIRows4MatchesRows1(t *testing.T) {
	if !archsimd.X86.AVX512() || !archsimd.X86.AVX512VNNI() || !archsimd.X86.AVX512GFNI() {
		t.Skip("no AVX-512 VNNI and GFNI on this CPU: the four-row pass does not run")
	}
	rapid.Check(t, func(t *rapid.T) {
		out := rapid.IntRange(1, 70).Draw(t, "out")
		in := 8 * GroupSize * rapid.IntRange(1, 6).Draw(t, "blocks")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 7))
		m, x := randQMat(r, 4, out, in), randVec(r, in)
		x[r.IntN(in)] *= 1000
		v := NewVec(in)
		v.Prepare(x)
		lo := rapid.IntRange(0, out-1).Draw(t, "lo")
		y1, y4 := make([]float32, out), make([]float32, out)
		vnniRows1(y1, m, v, lo, out)
		qmv4RowsVNNI(y4, m, v, lo, out)
		for o := lo; o < out; o++ {
			if math.Float32bits(y1[o]) != math.Float32bits(y4[o]) {
				t.Fatalf("[%d,%d] rows [%d,%d): y[%d] = %g (%#x) four rows at a time, %g (%#x) one at a time",
					out, in, lo, out, o, y4[o], math.Float32bits(y4[o]), y1[o], math.Float32bits(y1[o]))
			}
		}
	})
}

// BenchmarkQMatVecVNNIRows times the VNNI mat-vec's assembly on BenchmarkQMatVecCPU's in-cache
// [256, 2048] matrix by the thread's CPU time, the one-row loop ("rows1") and the four-row pass
// ("rows4") alternated in the same process, so that a shared host shifts both alike.
func BenchmarkQMatVecVNNIRows(b *testing.B) {
	if !archsimd.X86.AVX512() || !archsimd.X86.AVX512VNNI() || !archsimd.X86.AVX512GFNI() {
		b.Skip("no AVX-512 VNNI and GFNI on this CPU: the four-row pass does not run")
	}
	const out, in = 256, 2048
	r := newRand(1)
	m := randQMat(r, 4, out, in)
	v := NewVec(in)
	v.Prepare(randVec(r, in))
	y := make([]float32, out)
	for _, name := range []string{"rows1", "rows4"} {
		f := vnniRows1
		if name == "rows4" {
			f = qmv4RowsVNNI
		}
		b.Run(name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0, n := threadCPU(), 0
			for b.Loop() {
				f(y, m, v, 0, out)
				n++
			}
			cpu := threadCPU() - c0
			b.ReportMetric(float64(out*in/2)*float64(n)/cpu.Seconds()/1e9, "GB/s-cpu")
		})
	}
}
