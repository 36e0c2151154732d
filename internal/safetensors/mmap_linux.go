//go:build linux

package safetensors

import "syscall"

// adviseHuge marks a weight mapping MADV_HUGEPAGE. On kernels whose page cache holds large folios
// for the file system (ext4, xfs, btrfs on Linux 6.x), the pages read after this are cached and
// mapped 2 MB at a time: decode streams gigabytes of weights per second, and with 4 KB pages every
// fourth 1 KB weight row costs a TLB miss and restarts the hardware prefetcher. Advice only: an
// error (an older kernel, THP disabled) changes nothing, so it is ignored.
func adviseHuge(b []byte) {
	_ = syscall.Madvise(b, 14) // MADV_HUGEPAGE
}
