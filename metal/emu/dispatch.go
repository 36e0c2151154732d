package emu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// Order is the order in which a schedule runs the SIMD groups of a threadgroup between two
// barriers, and the threadgroups of a grid.
type Order uint32

const (
	InOrder  Order = iota // index order
	Reversed              // highest index first
	Random                // a permutation drawn from Schedule.Seed (afresh at every barrier)
)

// Schedule is one interleaving of a dispatch's threads. A correct kernel gives the same bytes under
// every schedule (except where it documents atomics-ordered output).
type Schedule struct {
	Order Order
	Seed  uint64
}

func (s Schedule) String() string {
	switch s.Order {
	case InOrder:
		return "in-order"
	case Reversed:
		return "reversed"
	}
	return fmt.Sprintf("random(%d)", s.Seed)
}

// Schedules are the interleavings a kernel test runs under: index order, reversed, and two seeded
// random orders.
var Schedules = []Schedule{{InOrder, 0}, {Reversed, 0}, {Random, 1}, {Random, 2}}

// Buffer is memory shared with the emulator process: a kernel argument that refers to it costs no
// copy, and what kernels write is visible in Bytes when the dispatch returns.
type Buffer struct {
	id       uint32
	b        []byte
	borrowed bool // b is the caller's memory (MapFile): unmapped only in the emulator process
}

// Bytes is the buffer's memory. It must not be used after FreeBuffer or Close.
func (b *Buffer) Bytes() []byte { return b.b }

// Arg is a kernel argument bound at [[buffer(Slot)]]: a window [Off, Off+Len) of a shared Buffer,
// or Bytes (copied to the process and back).
type Arg struct {
	Slot     int
	Buf      *Buffer
	Off, Len int
	Bytes    []byte
}

const (
	magicDispatch = 0x554d454c
	magicMap      = 0x50414d4c
	magicUnmap    = 0x504d4e55
)

// NewBuffer makes a zeroed shared buffer of n bytes: a file in the emulator's directory, mapped by
// both processes and unlinked once they have.
func (e *Emulator) NewBuffer(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("metal emulator: buffer of %d bytes", n)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		return nil, errors.New("metal emulator: closed")
	}
	e.nextID++
	id := e.nextID
	path := filepath.Join(e.dir, fmt.Sprintf("buf%d", id))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("metal emulator: %w", err)
	}
	defer os.Remove(path)
	defer f.Close()
	if err := f.Truncate(int64(n)); err != nil {
		return nil, fmt.Errorf("metal emulator: sizing a %d-byte buffer: %w", n, err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("metal emulator: mapping a %d-byte buffer: %w", n, err)
	}
	le := binary.LittleEndian
	req := le.AppendUint32(nil, magicMap)
	req = le.AppendUint32(req, id)
	req = le.AppendUint64(req, uint64(n))
	req = le.AppendUint32(req, uint32(len(path)))
	req = append(req, path...)
	e.in.Write(req)
	var st [4]byte
	if err := e.in.Flush(); err == nil {
		_, err = io.ReadFull(e.out, st[:])
	}
	if err != nil || le.Uint32(st[:]) != 0 {
		syscall.Munmap(m)
		return nil, fmt.Errorf("metal emulator: the process could not map a %d-byte buffer (%v)", n, err)
	}
	return &Buffer{id: id, b: m}, nil
}

// FreeBuffer unmaps b in both processes.
func (e *Emulator) FreeBuffer(b *Buffer) {
	if b == nil || b.b == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd != nil {
		le := binary.LittleEndian
		e.in.Write(le.AppendUint32(le.AppendUint32(nil, magicUnmap), b.id))
	}
	if !b.borrowed {
		syscall.Munmap(b.b)
	}
	b.b = nil
}

// Dispatch runs kernel over grid threadgroups of group threads each, with bufs[i] bound at
// [[buffer(i)]], in index order; the buffers are updated in place with what the kernel wrote.
func (e *Emulator) Dispatch(kernel string, grid, group [3]int, bufs map[int][]byte) error {
	idx := make([]int, 0, len(bufs))
	for i := range bufs {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	args := make([]Arg, len(idx))
	for j, i := range idx {
		args[j] = Arg{Slot: i, Bytes: bufs[i]}
	}
	return e.Run(kernel, grid, group, args, Schedule{})
}

// Run runs kernel over grid threadgroups of group threads each under schedule s. Inline arguments
// (Bytes) are updated in place with what the kernel wrote; shared ones are written directly. An
// access outside an argument's window fails the dispatch with an error naming the kernel, the
// buffer and the element.
func (e *Emulator) Run(kernel string, grid, group [3]int, args []Arg, s Schedule) error {
	k, ok := e.kernels[kernel]
	if !ok {
		return fmt.Errorf("metal emulator: unknown kernel %q", kernel)
	}
	bound := map[int]bool{}
	for _, a := range args {
		if a.Slot < 0 || a.Slot > 30 || bound[a.Slot] {
			return fmt.Errorf("metal emulator: %s: bad or repeated buffer index %d", kernel, a.Slot)
		}
		if a.Buf != nil && (a.Buf.b == nil || a.Off < 0 || a.Len <= 0 || a.Off+a.Len > len(a.Buf.b)) {
			return fmt.Errorf("metal emulator: %s: buffer %d: window [%d, +%d) outside a buffer of %d bytes", kernel, a.Slot, a.Off, a.Len, len(a.Buf.b))
		}
		bound[a.Slot] = true
	}
	for _, p := range k.Params {
		if p.Buffer >= 0 && !bound[p.Buffer] {
			return fmt.Errorf("metal emulator: %s: buffer %d (%s) not bound", kernel, p.Buffer, p.Name)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		return errors.New("metal emulator: closed")
	}
	le := binary.LittleEndian
	hdr := le.AppendUint32(nil, magicDispatch)
	hdr = le.AppendUint32(hdr, uint32(len(kernel)))
	hdr = append(hdr, kernel...)
	for _, v := range append(grid[:], group[:]...) {
		hdr = le.AppendUint32(hdr, uint32(v))
	}
	hdr = le.AppendUint32(hdr, uint32(s.Order))
	hdr = le.AppendUint64(hdr, s.Seed)
	hdr = le.AppendUint32(hdr, uint32(len(args)))
	e.in.Write(hdr)
	for _, a := range args {
		b := le.AppendUint32(nil, uint32(a.Slot))
		if a.Buf != nil {
			b = le.AppendUint32(b, 1)
			b = le.AppendUint32(b, a.Buf.id)
			b = le.AppendUint64(b, uint64(a.Off))
			b = le.AppendUint64(b, uint64(a.Len))
			e.in.Write(b)
			continue
		}
		b = le.AppendUint32(b, 0)
		b = le.AppendUint64(b, uint64(len(a.Bytes)))
		e.in.Write(b)
		e.in.Write(a.Bytes)
	}
	if err := e.in.Flush(); err != nil {
		return fmt.Errorf("metal emulator: %s: %w", kernel, err)
	}
	var st [4]byte
	if _, err := io.ReadFull(e.out, st[:]); err != nil {
		return fmt.Errorf("metal emulator: %s: process died: %w", kernel, err)
	}
	if le.Uint32(st[:]) != 0 {
		var n [4]byte
		io.ReadFull(e.out, n[:])
		msg := make([]byte, le.Uint32(n[:]))
		io.ReadFull(e.out, msg)
		return fmt.Errorf("metal emulator: %s", msg)
	}
	for _, a := range args {
		if a.Buf != nil {
			continue
		}
		var n [8]byte
		if _, err := io.ReadFull(e.out, n[:]); err != nil {
			return fmt.Errorf("metal emulator: %s: %w", kernel, err)
		}
		if _, err := io.ReadFull(e.out, a.Bytes[:le.Uint64(n[:])]); err != nil {
			return fmt.Errorf("metal emulator: %s: %w", kernel, err)
		}
	}
	return nil
}
