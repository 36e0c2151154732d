package metal

import (
	"errors"
	"fmt"
	"sync"

	"github.com/lily-engine/lily/metal/emu"
)

// EmuDevice is the Device that runs the kernels on the CPU emulator (metal/emu): buffers are Go
// byte slices and each dispatch is one emu.Dispatch over the windows its arguments name. It runs
// exactly the plans the Metal device runs, so every buffer offset, grid size and ordering is
// exercised on Linux. Wrap copies, so the whole model lives in Go memory: it is meant for the tiny
// test models, not the real checkpoint. It is safe for concurrent use; Run calls are serialized.
type EmuDevice struct {
	mu  sync.Mutex
	emu *emu.Emulator
}

type emuBuffer struct{ b []byte }

func (b *emuBuffer) Len() int { return len(b.b) }

// NewEmuDevice compiles metal.Source() with g++ (about 10 s) and starts the emulator.
func NewEmuDevice() (*EmuDevice, error) {
	e, err := emu.Build(map[string]string{"lily.metal": Source()})
	if err != nil {
		return nil, err
	}
	return &EmuDevice{emu: e}, nil
}

// Name is "metal-emu".
func (d *EmuDevice) Name() string { return "metal-emu" }

// Alloc returns a zeroed Go slice; storage modes are all the same memory here.
func (d *EmuDevice) Alloc(n int, _ Storage) (Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("metal-emu: alloc of %d bytes", n)
	}
	return &emuBuffer{b: make([]byte, n)}, nil
}

// Wrap copies b: the emulator writes every bound window back after a dispatch, which a read-only
// file mapping would not survive.
func (d *EmuDevice) Wrap(b []byte, _ bool) (Buffer, int, error) {
	if len(b) == 0 {
		return nil, 0, errors.New("metal-emu: wrap of an empty slice")
	}
	return &emuBuffer{b: append([]byte(nil), b...)}, 0, nil
}

func (d *EmuDevice) buf(b Buffer) (*emuBuffer, error) {
	e, ok := b.(*emuBuffer)
	if !ok || e == nil {
		return nil, fmt.Errorf("metal-emu: buffer %T is not from this device", b)
	}
	return e, nil
}

// Upload copies src into dst at off.
func (d *EmuDevice) Upload(dst Buffer, off int, src []byte) error {
	e, err := d.buf(dst)
	if err != nil {
		return err
	}
	if off < 0 || off+len(src) > len(e.b) {
		return fmt.Errorf("metal-emu: upload of %d bytes at %d into %d", len(src), off, len(e.b))
	}
	copy(e.b[off:], src)
	return nil
}

// Download copies len(dst) bytes from src at off.
func (d *EmuDevice) Download(dst []byte, src Buffer, off int) error {
	e, err := d.buf(src)
	if err != nil {
		return err
	}
	if off < 0 || off+len(dst) > len(e.b) {
		return fmt.Errorf("metal-emu: download of %d bytes at %d from %d", len(dst), off, len(e.b))
	}
	copy(dst, e.b[off:])
	return nil
}

// Run executes cmds in order.
func (d *EmuDevice) Run(cmds []Command) error {
	if err := check(cmds); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.emu == nil {
		return errors.New("metal-emu: device closed")
	}
	for i, c := range cmds {
		switch c := c.(type) {
		case *Dispatch:
			bufs := make(map[int][]byte, len(c.Args))
			for j, a := range c.Args {
				if a.Buf == nil {
					bufs[j] = append([]byte(nil), a.Bytes...)
					continue
				}
				e, err := d.buf(a.Buf)
				if err != nil {
					return err
				}
				off, end, _ := a.window()
				bufs[j] = e.b[off:end:end]
			}
			if err := d.emu.Dispatch(c.Kernel, c.Groups, c.Threads, bufs); err != nil {
				return fmt.Errorf("command %d: %w", i, err)
			}
		case *Copy:
			src, err := d.buf(c.Src)
			if err != nil {
				return err
			}
			dst, err := d.buf(c.Dst)
			if err != nil {
				return err
			}
			copy(dst.b[c.DstOff:c.DstOff+c.N], src.b[c.SrcOff:c.SrcOff+c.N])
		}
	}
	return nil
}

// Free drops the buffer (the garbage collector reclaims it).
func (d *EmuDevice) Free(Buffer) {}

// Close stops the emulator process.
func (d *EmuDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.emu == nil {
		return nil
	}
	err := d.emu.Close()
	d.emu = nil
	return err
}
