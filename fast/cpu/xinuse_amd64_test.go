//go:build goexperiment.simd && amd64

package cpu

import (
	"runtime"
	"testing"

	"github.com/lily-engine/lily/internal/safetensors"
)

// Upper vector state bits of XINUSE that slow legacy SSE code: AVX (upper YMM halves) and the
// upper ZMM halves. (ZMM16-31 in use, bit 7, does not: measured, and VZEROUPPER cannot clear it.)
const upperState = 1<<2 | 1<<6

// TestKernelsLeaveUpperStateClean runs every SIMD kernel on this (locked) thread and checks the
// CPU's XINUSE bitmap afterwards: a kernel that returns with dirty upper halves makes every later
// legacy-SSE instruction of plain Go code (math.Exp, scalar float loops) about 100 times slower on
// the machines lily runs CI on — the bug that once cost half of prefill and decode time.
func TestKernelsLeaveUpperStateClean(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, ok := xinuse(); !ok {
		t.Skip("this CPU does not report XINUSE (XGETBV with ECX=1)")
	}
	p := NewPool(1) // one worker: every kernel runs on this thread
	defer p.Close()
	k := New(p)
	if !k.SIMD() {
		t.Skip("no SIMD kernels in this build or CPU")
	}
	r := newRand(1)
	const in = 2048
	x := randVec(r, in)
	v := NewVec(in)
	v.PrepareQ16(x)
	y := make([]float32, 512)
	m4, m8 := randQMat(r, 4, 40, in), randQMat(r, 8, 40, in)
	m4odd := randQMat(r, 4, 13, 3*GroupSize) // group count not a multiple of 8: the scalar prep path
	vodd := NewVec(3 * GroupSize)
	vodd.PrepareQ16(x[:3*GroupSize])
	w16 := make([]uint16, 40*in)
	for i := range w16 {
		w16[i] = safetensors.Float32ToBF16(float32(r.NormFloat64()))
	}
	xs := randVec(r, 5*in)
	ys := make([]float32, 5*40)
	idx := make([]int, 4)
	cases := []struct {
		name string
		run  func()
	}{
		{"QMatVec/4bit", func() { k.QMatVec(y, m4, v) }},
		{"QMatVec/8bit", func() { k.QMatVec(y, m8, v) }},
		{"QMatVec/oddgroups", func() { k.QMatVec(y, m4odd, vodd) }},
		{"QMatVecQ16", func() { k.QMatVecQ16(y, m4, v) }},
		{"QMatVecQ16/oddgroups", func() { k.QMatVecQ16(y, m4odd, vodd) }},
		{"QMatMat/4bit", func() { k.QMatMat(ys, m4, xs, 5) }},
		{"QMatMat/8bit", func() { k.QMatMat(ys, m8, xs, 5) }},
		{"BF16MatVec", func() { k.BF16MatVec(y, w16, 40, in, x) }},
		{"Dot", func() { _ = k.Dot(x, x) }},
		{"Axpy", func() { k.Axpy(xs[:in], 0.5, x) }},
		{"ScaleAxpy", func() { k.ScaleAxpy(xs[:in], 0.9, 0.5, x) }},
		{"RMSNorm", func() { k.RMSNorm(xs[:in], x, x, 1e-6) }},
		{"SiLUMul", func() { k.SiLUMul(xs[:in], x, x) }},
		{"Softmax", func() { k.Softmax(xs[:in]) }},
		{"TopK", func() { k.TopK(idx, x) }},
		{"MeasureReadBandwidthKernel", func() { _ = k.f.readSum(make([]uint64, 1024)) }},
		{"MeasureReadBandwidthKernelPF", func() {
			if k.f.readSumPF != nil {
				_ = k.f.readSumPF(make([]uint64, 1024))
			}
		}},
	}
	// The Go runtime's asynchronous preemption restores every ZMM register and returns without
	// VZEROUPPER, so a preemption that lands inside a case (plain Go code such as Softmax's most
	// often: 1 run in 150 under load) dirties the state through no fault of the kernel. A kernel
	// that leaves the state dirty does so every time: a case fails when all of its tries do.
	const tries = 3
	for _, c := range cases {
		var bits uint32
		for range tries {
			clearUpper()
			c.run()
			if bits, _ = xinuse(); bits&upperState == 0 {
				break
			}
		}
		if bits&upperState != 0 {
			t.Errorf("%s returns with dirty upper vector state (XINUSE %#b), %d tries", c.name, bits, tries)
		}
	}
}
