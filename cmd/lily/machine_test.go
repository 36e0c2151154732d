package main

import (
	"testing"

	"github.com/lily-engine/lily/internal/bench"
)

// TestMachineWithReads: the best-of-run bandwidth rises to the highest read measured around a
// decode, of any backend and length, and never falls.
func TestMachineWithReads(t *testing.T) {
	reps := []bench.Report{
		{Results: []bench.Result{{DecodeReadGBs: 40}, {DecodeReadGBs: 61}}},
		{Results: []bench.Result{{DecodeReadGBs: 0}, {DecodeReadGBs: 50}}},
	}
	m := machine{memReadGBs: 36, peakGFLOPs: 200}
	if got := m.withReads(reps); got.memReadGBs != 61 || got.peakGFLOPs != 200 {
		t.Fatalf("withReads: %+v, want 61 GB/s and the peak unchanged", got)
	}
	if got := (machine{memReadGBs: 70}).withReads(reps); got.memReadGBs != 70 {
		t.Fatalf("withReads lowered 70 GB/s to %v", got.memReadGBs)
	}
}
