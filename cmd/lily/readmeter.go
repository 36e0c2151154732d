package main

import "github.com/lily-engine/lily/fast/cpu"

// readMeter measures the streaming-read bandwidth during a benchmark, as often as it is asked:
// right before and right after each decode (bench.Options.Bandwidth), so that the decode is judged
// against the bandwidth of the moment it ran on a host whose neighbours move it within minutes.
// It maps one buffer of cpu.BandwidthBytes at its first measurement (cpu.NewReadBuffer: in huge
// pages, as the weights are), fills it once and reads it (cpu.ReadBandwidth) at every one, until
// close. Mapping, filling and unmapping a fresh buffer at each measurement (as it once did, to hold
// no memory between them) made the kernel find and release 128 huge pages twice per prompt, and
// the prompt measured next ran at about half speed one time in 20 to 40 (8-token prompts of
// synth8, 40 a run: 13 slow in 280 with a fresh buffer each time, 3 in 280 with the one kept or no
// meter at all; the slow ones had twice the context switches, as if the host's memory management
// ran beside them on one of the two cores). heldBytes is what the run's resident figure leaves out
// for it.
type readMeter struct {
	p      *cpu.Pool
	passes int
	words  []uint64
	free   func()
}

func newReadMeter() *readMeter { return &readMeter{p: cpu.NewPool(0), passes: 3} }

// measure returns the bandwidth in GB/s, or 0 when the buffer cannot be mapped.
func (m *readMeter) measure() float64 {
	if m.words == nil {
		words, free, err := cpu.NewReadBuffer(cpu.BandwidthBytes())
		if err != nil {
			return 0
		}
		cpu.FillBandwidthBuffer(words)
		m.words, m.free = words, free
	}
	return cpu.ReadBandwidth(m.p, m.words, m.passes)
}

// heldBytes is the resident memory of the meter's buffer (0 before the first measurement).
func (m *readMeter) heldBytes() int64 { return int64(len(m.words)) * 8 }

func (m *readMeter) close() {
	if m.free != nil {
		m.free()
		m.words, m.free = nil, nil
	}
	m.p.Close()
}
