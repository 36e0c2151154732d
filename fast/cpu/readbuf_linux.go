//go:build linux

package cpu

import (
	"fmt"
	"syscall"
	"unsafe"
)

// madvHugepage is Linux's MADV_HUGEPAGE, which the syscall package does not name.
const madvHugepage = 14

// hugePageBytes is the size of an x86-64 (and arm64 4K-granule) transparent huge page.
const hugePageBytes = 2 << 20

// mapReadBytes maps n bytes of anonymous memory aligned to a huge page and advised MADV_HUGEPAGE,
// as the checkpoint's weights are (internal/safetensors maps them so, and the page cache holds them
// in 2 MB folios): a streaming read through 4 KB pages ran 1.15–1.6× slower on the Zen 4 host
// (BenchmarkReadBandwidthPages), and a roofline read from them would understate what the weights
// can be read at. Where the kernel has no transparent huge pages the
// advice fails and the mapping stays in small pages. free unmaps it.
func mapReadBytes(n int) (b []byte, free func(), err error) {
	if n <= 0 {
		return nil, nil, fmt.Errorf("cpu: read buffer of %d bytes", n)
	}
	m, err := syscall.Mmap(-1, 0, n+hugePageBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("cpu: map a %d-byte read buffer: %w", n, err)
	}
	off := (hugePageBytes - int(uintptr(unsafe.Pointer(&m[0])))%hugePageBytes) % hugePageBytes
	b = m[off : off+n : off+n]
	_ = syscall.Madvise(b, madvHugepage) // advice only: small pages where it fails
	return b, func() { _ = syscall.Munmap(m) }, nil
}
