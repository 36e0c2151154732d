package cpu

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkHot(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := NewPool(1)
	defer p.Close()
	for _, name := range []string{"simd", "simdq8", "simd8bit", "portable", "portableq8"} {
		b.Run(name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			k := New(p)
			if name == "portable" || name == "portableq8" {
				k = NewPortable(p)
			}
			bits := 4
			if name == "simd8bit" {
				bits = 8
			}
			r := newRand(1)
			m := randQMat(r, bits, 256, 2048)
			v := NewVec(2048)
			v.PrepareQ8(randVec(r, 2048))
			y := make([]float32, 256)
			c0 := threadCPU()
			n := 0
			for b.Loop() {
				if name == "simdq8" || name == "portableq8" {
					k.QMatVecQ8(y, m, v)
				} else {
					k.QMatVec(y, m, v)
				}
				n++
			}
			cpu := threadCPU() - c0
			b.ReportMetric(float64(256*2048*bits/8)*float64(n)/cpu.Seconds()/1e9, "GB/s-cpu")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*256*2048/64), "ns-cpu/group")
		})
	}
}
