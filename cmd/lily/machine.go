package main

import (
	"time"

	"github.com/lily-engine/lily/fast/cpu"
	"github.com/lily-engine/lily/internal/bench"
)

// machine is what the roofline fractions are measured against.
type machine struct {
	memReadGBs float64 // streaming-read bandwidth of all cores
	peakGFLOPs float64 // the CPU kernels' compute peak (in-cache fused-dequant GEMM)
}

// measureMachine measures this machine in the same run as the benchmark, on a pool of all cores.
// lily bench measures it before and after the backends run and keeps the better figures. The
// bandwidth buffer (at least 256 MiB and twice the last-level cache) is mapped for the measurement,
// in huge pages as the weights are, and unmapped after it (cpu.MeasureReadBandwidth): held between
// measurements, it would push the checkpoint's pages out of a page cache that only just holds them.
func measureMachine() machine {
	p := cpu.NewPool(0)
	defer p.Close()
	bw := cpu.MeasureReadBandwidth(p)
	return machine{memReadGBs: bw, peakGFLOPs: cpu.MeasurePeakFLOPs(cpu.New(p), 300*time.Millisecond)}
}

// withReads returns m with its bandwidth raised to the highest read measured around a decode of
// reps (bench.Result.DecodeReadGBs): on a host whose bandwidth drifts, the reads before and after
// all the runs can both fall in a slow spell that the runs did not, and the best-of-run roofline
// would then read lower than the decode it bounds.
func (m machine) withReads(reps []bench.Report) machine {
	for _, rep := range reps {
		for _, r := range rep.Results {
			m.memReadGBs = max(m.memReadGBs, r.DecodeReadGBs)
		}
	}
	return m
}

// best returns the higher of each figure of m and o.
func (m machine) best(o machine) machine {
	return machine{memReadGBs: max(m.memReadGBs, o.memReadGBs), peakGFLOPs: max(m.peakGFLOPs, o.peakGFLOPs)}
}
