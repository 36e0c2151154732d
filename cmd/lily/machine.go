package main

// machine is what the roofline fractions are measured against.
type machine struct {
	memReadGBs float64 // streaming-read bandwidth
	peakGFLOPs float64 // the CPU kernels' compute peak
}

// measureMachine measures this machine in the same run as the benchmark.
// TODO(merge): fast/cpu.MeasureReadBandwidth and MeasurePeakFLOPs.
func measureMachine() machine { return machine{} }
