package emu

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unsafe"
)

const magicMapFile = 0x46504d4c

// MapFile makes b, which lies inside a read-only mapping of a file in this process, a Buffer the
// emulator process maps from the same file: no copy on either side. ok is false (and err nil)
// when the mapping behind b cannot be found (not Linux, anonymous memory, a deleted file, a file
// whose bytes differ from b); the caller then copies. Kernels must only read the buffer.
func (e *Emulator) MapFile(b []byte) (buf *Buffer, ok bool, err error) {
	if len(b) == 0 {
		return nil, false, nil
	}
	path, off, found := fileOf(b)
	if !found {
		return nil, false, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		return nil, false, errors.New("metal emulator: closed")
	}
	e.nextID++
	id := e.nextID
	le := binary.LittleEndian
	req := le.AppendUint32(nil, magicMapFile)
	req = le.AppendUint32(req, id)
	req = le.AppendUint64(req, uint64(off))
	req = le.AppendUint64(req, uint64(len(b)))
	req = le.AppendUint32(req, uint32(len(path)))
	req = append(req, path...)
	e.in.Write(req)
	var st [4]byte
	if err = e.in.Flush(); err == nil {
		_, err = io.ReadFull(e.out, st[:])
	}
	if err != nil {
		return nil, false, fmt.Errorf("metal emulator: mapping %s: %w", path, err)
	}
	if le.Uint32(st[:]) != 0 {
		return nil, false, nil
	}
	return &Buffer{id: id, b: b, borrowed: true}, true, nil
}

// fileOf finds the file and offset that b's memory maps, from /proc/self/maps, and checks that
// the file's bytes at both ends of the window are b's.
func fileOf(b []byte) (path string, off int64, ok bool) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) != 6 || !strings.HasPrefix(fs[5], "/") {
			continue
		}
		se := strings.SplitN(fs[0], "-", 2)
		start, err1 := strconv.ParseUint(se[0], 16, 64)
		end, err2 := strconv.ParseUint(se[1], 16, 64)
		foff, err3 := strconv.ParseUint(fs[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || addr < start || addr >= end {
			continue
		}
		path, off = fs[5], int64(foff+addr-start)
		return path, off, sameBytes(path, off, b)
	}
	return "", 0, false
}

// sameBytes reports whether the file at path holds b's first and last bytes at off.
func sameBytes(path string, off int64, b []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	n := min(len(b), 4096)
	head, tail := make([]byte, n), make([]byte, n)
	if _, err := f.ReadAt(head, off); err != nil {
		return false
	}
	if _, err := f.ReadAt(tail, off+int64(len(b)-n)); err != nil {
		return false
	}
	return bytes.Equal(head, b[:n]) && bytes.Equal(tail, b[len(b)-n:])
}
