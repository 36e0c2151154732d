package main

import "github.com/lily-engine/lily/fast/cpu"

// readMeter measures the streaming-read bandwidth during a benchmark, as often as it is asked:
// right before and right after each decode (bench.Options.Bandwidth), so that the decode is judged
// against the bandwidth of the moment it ran on a host whose neighbours move it within minutes.
// Each measurement maps a fresh buffer of cpu.BandwidthBytes (cpu.NewReadBuffer: in huge pages, as
// the weights are), fills it, reads it (cpu.ReadBandwidth) and unmaps it again: between measurements
// the buffer holds no memory, so neither the page cache that holds the checkpoint nor the resident
// figure of the run sees it.
type readMeter struct {
	p      *cpu.Pool
	passes int
}

func newReadMeter() *readMeter { return &readMeter{p: cpu.NewPool(0), passes: 3} }

// measure returns the bandwidth in GB/s, or 0 when the buffer cannot be mapped.
func (m *readMeter) measure() float64 {
	words, free, err := cpu.NewReadBuffer(cpu.BandwidthBytes())
	if err != nil {
		return 0
	}
	defer free()
	cpu.FillBandwidthBuffer(words)
	return cpu.ReadBandwidth(m.p, words, m.passes)
}

func (m *readMeter) close() { m.p.Close() }
