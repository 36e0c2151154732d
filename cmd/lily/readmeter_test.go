package main

import (
	"testing"

	"github.com/lily-engine/lily/fast/cpu"
)

// TestReadMeterKeepsItsBuffer: the meter maps its buffer at the first measurement and reads the
// same one at every later one (a fresh mapping each time slowed the prompts measured after it),
// reports it as held until close, and releases it there.
func TestReadMeterKeepsItsBuffer(t *testing.T) {
	m := newReadMeter()
	if m.heldBytes() != 0 {
		t.Fatalf("a new meter holds %d bytes", m.heldBytes())
	}
	if bw := m.measure(); bw <= 0 {
		t.Fatalf("first measurement: %g GB/s", bw)
	}
	first := &m.words[0]
	if got, want := m.heldBytes(), int64(cpu.BandwidthBytes()/8*8); got != want {
		t.Fatalf("held %d bytes, want the %d of its buffer", got, want)
	}
	if bw := m.measure(); bw <= 0 {
		t.Fatalf("second measurement: %g GB/s", bw)
	}
	if &m.words[0] != first {
		t.Fatal("the second measurement mapped a new buffer")
	}
	m.close()
	if m.heldBytes() != 0 {
		t.Fatalf("a closed meter holds %d bytes", m.heldBytes())
	}
}
