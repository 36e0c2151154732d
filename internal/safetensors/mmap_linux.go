//go:build linux

package safetensors

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// Linux madvise and fadvise values the syscall package does not name.
const (
	madvHugepage     = 14
	madvPopulateRead = 22 // Linux 5.14
	madvCollapse     = 25 // Linux 6.1
	fadvDontneed     = 4
	hugePage         = 2 << 20
)

// adviseHuge marks a weight mapping MADV_HUGEPAGE and, where the file's page cache already holds it
// in small pages, makes the kernel hold it in huge ones (rehuge). On kernels whose page cache holds
// large folios for the file system (ext4, xfs, btrfs on Linux 6.x), the pages read after
// MADV_HUGEPAGE are cached and mapped 2 MB at a time: decode streams gigabytes of weights per
// second, and with 4 KB pages every fourth 1 KB weight row costs a TLB miss and restarts the
// hardware prefetcher. Advice only: an error (an older kernel, THP disabled) changes nothing, so it
// is ignored.
func adviseHuge(fd *os.File, b []byte) {
	if syscall.Madvise(b, madvHugepage) != nil {
		return
	}
	rehuge(fd, b)
}

// rehugeMinResident is the fraction of a mapping that must already be in the page cache for
// rehuge to look at it: pages not cached are read in huge folios when first touched anyway.
const rehugeMinResident = 0.5

// rehugeMaxSmall is the fraction of the resident mapping that may be mapped in small pages before
// rehuge re-reads the file.
const rehugeMaxSmall = 0.25

// rehuge gets a mapping whose file was just written (by lily synth or a download: the written
// page cache is in 4 KB folios, and stays so until evicted; decode ran ~30% slower on it) into
// 2 MB folios. MADV_COLLAPSE does it in place where the kernel can collapse file pages
// (CONFIG_READ_ONLY_THP_FOR_FS); elsewhere it fails with EINVAL, and then, when most of the file is
// cached but mapped in small pages (MADV_POPULATE_READ, then the mapping's FilePmdMapped in
// /proc/self/smaps), the mapping is dropped, the file's clean cached pages are evicted
// (POSIX_FADV_DONTNEED; pages other processes map stay) and read again through the MADV_HUGEPAGE
// mapping, which the kernel's readahead caches in huge folios. That costs one read of the file;
// nothing is done when the cache is already in huge pages or mostly absent.
func rehuge(fd *os.File, b []byte) {
	if len(b) < 2*hugePage {
		return
	}
	start := addrOfBytes(b)
	off := int((hugePage - start%hugePage) % hugePage)
	aligned := b[off : off+(len(b)-off)/hugePage*hugePage]
	if syscall.Madvise(aligned, madvCollapse) == nil {
		return
	}
	if residentFrac(b) < rehugeMinResident {
		return
	}
	if syscall.Madvise(b, madvPopulateRead) != nil {
		return
	}
	rss, pmd, err := smapsHuge(start)
	if err != nil || rss == 0 || float64(rss-pmd) <= rehugeMaxSmall*float64(rss) {
		return
	}
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED) // unmap our pages so that fadvise may evict them
	_, _, _ = syscall.Syscall6(syscall.SYS_FADVISE64, fd.Fd(), 0, uintptr(len(b)), fadvDontneed, 0, 0)
	_ = syscall.Madvise(b, madvPopulateRead)
}

// residentFrac returns the fraction of b's pages in the page cache (mincore).
func residentFrac(b []byte) float64 {
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	_, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return 0
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return float64(n) / float64(len(vec))
}

// smapsHuge returns the Rss and FilePmdMapped (bytes) of the mapping starting at start, from
// /proc/self/smaps.
func smapsHuge(start uintptr) (rss, pmd int64, err error) {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, 0, err
	}
	return parseSmaps(data, start)
}

// parseSmaps finds the mapping that starts at start in smaps text and returns its Rss and
// FilePmdMapped in bytes.
func parseSmaps(data []byte, start uintptr) (rss, pmd int64, err error) {
	head := []byte(strconv.FormatUint(uint64(start), 16) + "-")
	sc := bufio.NewScanner(bytes.NewReader(data))
	in, found := false, false
	for sc.Scan() {
		line := sc.Bytes()
		if f := bytes.Fields(line); len(f) > 0 && bytes.IndexByte(f[0], '-') > 0 && !bytes.HasSuffix(f[0], []byte(":")) {
			in = bytes.HasPrefix(line, head)
			found = found || in
			continue
		}
		if !in {
			continue
		}
		f := bytes.Fields(line)
		if len(f) != 3 || string(f[2]) != "kB" {
			continue
		}
		kb, perr := strconv.ParseInt(string(f[1]), 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("smaps: %q: %w", line, perr)
		}
		switch string(f[0]) {
		case "Rss:":
			rss = kb << 10
		case "FilePmdMapped:":
			pmd = kb << 10
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("smaps: no mapping at %#x", start)
	}
	return rss, pmd, sc.Err()
}

// addrOfBytes returns the address of b's first byte.
func addrOfBytes(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
