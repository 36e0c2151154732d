package main

import (
	"runtime/debug"
	"time"

	"github.com/lily-engine/lily/fast/cpu"
)

// machine is what the roofline fractions are measured against.
type machine struct {
	memReadGBs float64 // streaming-read bandwidth of all cores
	peakGFLOPs float64 // the CPU kernels' compute peak (in-cache fused-dequant GEMM)
}

// measureMachine measures this machine in the same run as the benchmark, on a pool of all cores.
// lily bench measures it before and after the backends run and keeps the better figures. The
// bandwidth buffer (twice the last-level cache, about 1 GB here) goes back to the OS at once: held
// by the heap, it would push the checkpoint's pages out of a page cache that only just holds them.
func measureMachine() machine {
	p := cpu.NewPool(0)
	defer p.Close()
	bw := cpu.MeasureReadBandwidth(p)
	debug.FreeOSMemory()
	return machine{memReadGBs: bw, peakGFLOPs: cpu.MeasurePeakFLOPs(cpu.New(p), 300*time.Millisecond)}
}

// best returns the higher of each figure of m and o.
func (m machine) best(o machine) machine {
	return machine{memReadGBs: max(m.memReadGBs, o.memReadGBs), peakGFLOPs: max(m.peakGFLOPs, o.peakGFLOPs)}
}
