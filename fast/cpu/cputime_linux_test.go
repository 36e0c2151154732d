package cpu

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used (getrusage RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1 = RUSAGE_THREAD
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQMatVecCPU measures the compute cost of the mat-vec kernels on one core: a [256, 2048]
// matrix that stays in L2, one worker (the benchmark's own locked thread), timed by that thread's CPU
// time, so other processes on a shared machine change it little. GB/s-cpu is the rate one core could
// consume weights at if memory were free; compare it with the 1-worker read bandwidth.
func BenchmarkQMatVecCPU(b *testing.B) {
	for _, impl := range []string{"simd", "simd512", "simd_q16", "simd_8bit", "portable", "portable_q16", "portable_8bit"} {
		b.Run(impl, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p := NewPool(1)
			defer p.Close()
			k := NewPortable(p)
			if impl[:4] == "simd" {
				if k = New(p); !k.SIMD() {
					b.Skip("no SIMD kernels in this build (GOEXPERIMENT=simd, amd64, AVX2+FMA)")
				}
				if impl == "simd512" { // the float32 512-bit kernel, without AVX-512 VNNI
					k = newKernels(p, simdImpl(level512), true)
				}
			}
			bits, q16 := 4, impl == "simd_q16" || impl == "portable_q16"
			if impl == "simd_8bit" || impl == "portable_8bit" {
				bits = 8
			}
			r := newRand(1)
			m := randQMat(r, bits, 256, 2048)
			v := NewVec(2048)
			v.PrepareQ16(randVec(r, 2048))
			y := make([]float32, 256)
			c0, n := threadCPU(), 0
			for b.Loop() {
				if q16 {
					k.QMatVecQ16(y, m, v)
				} else {
					k.QMatVec(y, m, v)
				}
				n++
			}
			cpu := threadCPU() - c0
			b.ReportMetric(float64(256*2048*bits/8)*float64(n)/cpu.Seconds()/1e9, "GB/s-cpu")
		})
	}
}
