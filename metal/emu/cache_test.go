package emu

import (
	"os"
	"os/exec"
	"testing"
)

// cacheKernel is a one-kernel library for the cache tests.
const cacheKernel = `#include <metal_stdlib>
using namespace metal;
kernel void twice(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 2.0f * x[i]; }
`

func buildCached(t *testing.T, src, dir string) *Emulator {
	t.Helper()
	e, err := BuildOptions(map[string]string{"k.metal": src}, Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	b := make([]byte, 4*32)
	b[2], b[3] = 0x80, 0x3f // x[0] = 1
	if err := e.Dispatch("twice", [3]int{1, 1, 1}, [3]int{32, 1, 1}, map[int][]byte{0: b}); err != nil {
		t.Fatal(err)
	}
	if b[3] != 0x40 || b[2] != 0x00 { // 2.0f = 0x40000000
		t.Fatalf("x[0] bytes % x, want 2.0", b[:4])
	}
	return e
}

// TestBuildCache: the second build of the same sources runs the cached binary; a changed source
// compiles anew; LILY_EMU_CACHE=off neither reads nor writes the cache.
func TestBuildCache(t *testing.T) {
	if testing.Short() {
		t.Skip("runs g++ twice (seconds); skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the emulator needs g++, which is not installed")
	}
	dir := t.TempDir()
	if e := buildCached(t, cacheKernel, dir); e.FromCache() {
		t.Fatal("first build came from an empty cache")
	}
	if e := buildCached(t, cacheKernel, dir); !e.FromCache() {
		t.Fatal("second build of the same sources was compiled again")
	}
	if e := buildCached(t, cacheKernel+"\n// changed\n", dir); e.FromCache() {
		t.Fatal("a changed source was served from the cache")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("cache holds %d entries, want 2", len(ents))
	}
	t.Setenv("LILY_EMU_CACHE", "off")
	if e := buildCached(t, cacheKernel, dir); e.FromCache() {
		t.Fatal("LILY_EMU_CACHE=off used the cache")
	}
	off := t.TempDir()
	if e := buildCached(t, cacheKernel+"// other\n", off); e.FromCache() {
		t.Fatal("LILY_EMU_CACHE=off used the cache")
	}
	if ents, _ := os.ReadDir(off); len(ents) != 0 {
		t.Fatalf("LILY_EMU_CACHE=off wrote %d cache entries", len(ents))
	}
}
