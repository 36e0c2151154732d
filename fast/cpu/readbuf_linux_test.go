//go:build linux

package cpu

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestReadBufferHugeAligned checks what NewReadBuffer promises: the words asked for, every one
// writable, the first on a huge-page boundary (the advice needs whole huge pages to take).
func TestReadBufferHugeAligned(t *testing.T) {
	const size = 3*hugePageBytes + 24
	buf, free, err := NewReadBuffer(size)
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	if len(buf) != size/8 {
		t.Fatalf("%d words, want %d", len(buf), size/8)
	}
	if a := uintptr(unsafe.Pointer(&buf[0])); a%hugePageBytes != 0 {
		t.Fatalf("buffer at %#x, not on a %d-byte boundary", a, hugePageBytes)
	}
	FillBandwidthBuffer(buf)
	if buf[len(buf)-1] != uint64(len(buf)-1)*0x9e3779b97f4a7c15 {
		t.Fatal("last word not written")
	}
	if _, _, err := NewReadBuffer(0); err == nil {
		t.Fatal("a zero-byte buffer mapped without error")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !bytes.Contains(mode, []byte("[always]")) && !bytes.Contains(mode, []byte("[madvise]")) {
		t.Skipf("transparent huge pages off here (%q, %v): the buffer's pages are not checked", bytes.TrimSpace(mode), err)
	}
	huge, err := anonHugeBytes(uintptr(unsafe.Pointer(&buf[0])))
	if err != nil {
		t.Fatal(err)
	}
	if huge < 2*hugePageBytes {
		t.Fatalf("%d bytes of the written buffer in huge pages, want at least %d (THP %q)", huge, 2*hugePageBytes, bytes.TrimSpace(mode))
	}
}

// anonHugeBytes returns the AnonHugePages of the mapping of /proc/self/smaps that holds addr.
func anonHugeBytes(addr uintptr) (int64, error) {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	in := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < b
			continue
		}
		if in && f[0] == "AnonHugePages:" && len(f) == 3 {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no mapping in /proc/self/smaps holds %#x", addr)
}

// BenchmarkReadBandwidthPages asks whether the roofline's read depends on the pages it reads: each
// round reads a heap buffer (small pages where THP is madvise-only, as on the development VM: the
// Go heap is not advised MADV_HUGEPAGE) and then a
// NewReadBuffer one (huge pages, as the checkpoint's weights are mapped), and the benchmark reports
// the median ratio huge/small of the rounds with each one's median GB/s.
func BenchmarkReadBandwidthPages(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	k := New(p)
	small := make([]uint64, bandwidthBytes()/8)
	FillBandwidthBuffer(small)
	huge, free, err := NewReadBuffer(bandwidthBytes())
	if err != nil {
		b.Fatal(err)
	}
	defer free()
	FillBandwidthBuffer(huge)
	const rounds = 15
	var s, h, ratio []float64
	for b.Loop() {
		s, h, ratio = nil, nil, nil
		for range rounds {
			rs := readBandwidthBest(p, k.f, small, 1)
			rh := readBandwidthBest(p, k.f, huge, 1)
			s, h, ratio = append(s, rs), append(h, rh), append(ratio, rh/rs)
		}
	}
	b.ReportMetric(median(s), "small_GB/s")
	b.ReportMetric(median(h), "huge_GB/s")
	b.ReportMetric(median(ratio), "huge/small")
}
