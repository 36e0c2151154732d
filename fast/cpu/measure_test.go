package cpu

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLargestCache reads sysfs-style cache sizes: the largest wins, K and M suffixes and plain
// bytes parse, and garbage or a missing directory counts as no cache (the 256 MiB floor applies).
func TestLargestCache(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]string{"index0": "48K\n", "index2": "2048K\n", "index3": "491520K\n", "index4": "junk\n", "index5": "3M\n"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "size"), []byte(size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := largestCache(dir), 491520<<10; got != want {
		t.Fatalf("largestCache = %d, want %d", got, want)
	}
	if got := largestCache(filepath.Join(dir, "none")); got != 0 {
		t.Fatalf("largestCache of a missing directory = %d", got)
	}
	if got := bandwidthBytes(); got < minBandwidthBytes {
		t.Fatalf("bandwidthBytes = %d < %d", got, minBandwidthBytes)
	}
}
