//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
	"strings"
	"testing"
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
