//go:build goexperiment.simd && amd64

package cpu

import (
	"simd/archsimd"
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
	if newKernels(p, simdImpl(level512), true).VNNI() {
		t.Fatal("level512 kernels use VNNI")
	}
}
