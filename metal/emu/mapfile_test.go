package emu

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

const copyKernel = `#include <metal_stdlib>
using namespace metal;
kernel void copyw(device const uint* src [[buffer(0)]], device uint* dst [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  dst[i] = src[i] + 1u;
}
`

// TestMapFileInPlace: a window of a read-only file mapping, at an offset that is not a page
// boundary, is mapped by the emulator process from the file (the Buffer aliases the caller's
// memory, nothing is copied) and kernels read it; memory that is not file-backed is refused.
func TestMapFileInPlace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs g++ (seconds); skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the emulator needs g++, which is not installed")
	}
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("MapFile finds files through /proc/self/maps, which this OS lacks")
	}
	const off, n = 4100, 320 // words: a window starting 4 bytes past a page
	data := make([]byte, off+4*n+64)
	for i := 0; i+4 <= len(data); i += 4 {
		binary.LittleEndian.PutUint32(data[i:], uint32(i/4)*7)
	}
	path := filepath.Join(t.TempDir(), "weights")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, len(data), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)

	e, err := BuildOptions(map[string]string{"k.metal": copyKernel}, Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	win := m[off : off+4*n]
	src, ok, err := e.MapFile(win)
	if err != nil || !ok {
		t.Fatalf("MapFile of a file mapping: ok %v, %v", ok, err)
	}
	defer e.FreeBuffer(src)
	if &src.Bytes()[0] != &win[0] {
		t.Fatal("the buffer does not alias the caller's mapping: it was copied")
	}
	dst, err := e.NewBuffer(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer e.FreeBuffer(dst)
	err = e.Run("copyw", [3]int{cdiv(n, 64), 1, 1}, [3]int{64, 1, 1},
		[]Arg{{Slot: 0, Buf: src, Len: 4 * n}, {Slot: 1, Buf: dst, Len: 4 * n}}, Schedule{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		want := uint32(off/4+i)*7 + 1
		if got := binary.LittleEndian.Uint32(dst.Bytes()[4*i:]); got != want {
			t.Fatalf("word %d: %d, want %d", i, got, want)
		}
	}
	if _, ok, err := e.MapFile(make([]byte, 4096)); ok || err != nil {
		t.Fatalf("MapFile of heap memory: ok %v, %v; want a refusal", ok, err)
	}
}

func cdiv(a, b int) int { return (a + b - 1) / b }
