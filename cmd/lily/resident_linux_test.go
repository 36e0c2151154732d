package main

import "testing"

// TestResidentBytesGrows: touching 256 MB of fresh memory must show in the reading.
func TestResidentBytesGrows(t *testing.T) {
	before, ok := residentBytes()
	if !ok || before <= 0 {
		t.Fatalf("residentBytes: %d, %v", before, ok)
	}
	b := make([]byte, 256<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after, _ := residentBytes()
	if after-before < 200<<20 {
		t.Errorf("resident grew by %d bytes after touching 256 MB", after-before)
	}
	_ = b[len(b)-1]
}
