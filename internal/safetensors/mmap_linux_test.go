//go:build linux

package safetensors

import (
	"os"
	"path/filepath"
	"testing"
)

const smapsSample = `7f0000000000-7f0040000000 r--s 00000000 fd:01 1234 /w/model.safetensors
Size:            1048576 kB
Rss:              524288 kB
FilePmdMapped:    409600 kB
VmFlags: rd sh mr mw me ms hg
7f0040000000-7f0040001000 rw-p 00000000 00:00 0
Size:                  4 kB
Rss:                   4 kB
FilePmdMapped:         0 kB
`

func TestParseSmaps(t *testing.T) {
	rss, pmd, err := parseSmaps([]byte(smapsSample), 0x7f0000000000)
	if err != nil || rss != 524288<<10 || pmd != 409600<<10 {
		t.Fatalf("rss %d pmd %d err %v", rss, pmd, err)
	}
	if rss, pmd, err = parseSmaps([]byte(smapsSample), 0x7f0040000000); err != nil || rss != 4<<10 || pmd != 0 {
		t.Fatalf("second mapping: rss %d pmd %d err %v", rss, pmd, err)
	}
	if _, _, err := parseSmaps([]byte(smapsSample), 0x1000); err == nil {
		t.Fatal("absent mapping found")
	}
	if _, _, err := parseSmaps([]byte("7f0000000000-7f0000001000 r--s 0 0 0\nRss: x kB\n"), 0x7f0000000000); err == nil {
		t.Fatal("bad number accepted")
	}
}

// FuzzParseSmaps: any text gives figures or an error, never a panic.
func FuzzParseSmaps(f *testing.F) {
	f.Add([]byte(smapsSample), uint64(0x7f0000000000))
	f.Add([]byte("1-2 r\nRss: 1 kB\n"), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, start uint64) {
		_, _, _ = parseSmaps(data, uintptr(start))
	})
}

// TestRehugeOwnMapping runs rehuge on a freshly written (so cached, small-page) file of a few huge
// pages and checks the mapping still reads the file's bytes; whether the kernel could make it huge
// depends on its configuration, so that is logged, not asserted.
func TestRehugeOwnMapping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w")
	want := make([]byte, 3*hugePage+123)
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	b, err := mmapFile(fd, len(want))
	if err != nil {
		t.Fatal(err)
	}
	defer munmap(b)
	for i := range want {
		if b[i] != want[i] {
			t.Fatalf("byte %d: %d, want %d", i, b[i], want[i])
		}
	}
	if rss, pmd, err := smapsHuge(addrOfBytes(b)); err == nil {
		t.Logf("after rehuge: rss %d KiB, huge %d KiB (resident %.2f)", rss>>10, pmd>>10, residentFrac(b))
	}
}
