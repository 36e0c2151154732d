package device

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/lily-engine/lily/metal/emu"
)

// EmuDevice is the Device that runs the kernels on the CPU emulator (metal/emu): buffers are memory
// shared with the emulator process, and each dispatch is one emu.Run over the windows its arguments
// name, which the emulator bounds-checks. It runs exactly the plans the Metal device runs, so every
// buffer offset, grid size and ordering is exercised on Linux. Buffers live
// in (file-backed, shared) memory, except weights Wrap maps from their file in place. It is safe for concurrent use; Run calls are serialized.
type EmuDevice struct {
	mu  sync.Mutex
	emu *emu.Emulator
	opt EmuOptions
	acc Access     // which arguments each kernel writes: where the barriers go
	rng *rand.Rand // the order of the dispatches between two barriers
}

// EmuOptions configure an emulator device. The limits are reported as a Metal device reports its
// own, so that checks against them can be tested with small values.
type EmuOptions struct {
	// Threads is how many OS threads run threadgroups; 0 means one per CPU.
	Threads int
	// Schedule is the interleaving every dispatch runs under (the zero value: in order).
	Schedule emu.Schedule
	// InOrder runs a command list's dispatches in list order. By default the dispatches between two
	// barriers of the Metal encoding (Encode) run in an order drawn from Seed, as a concurrent
	// encoder may run them, so a missing barrier gives a wrong result here.
	InOrder bool
	Seed    uint64
	// MaxThreads caps a kernel's maxTotalThreadsPerThreadgroup below the default 1,024.
	MaxThreads map[string]int
	// MaxBufferLength and WorkingSet are what Limits reports; 0 means the defaults below.
	MaxBufferLength, WorkingSet int64
}

// The emulator's default limits: those of a 64 GB Apple-silicon Mac (a quarter of memory per
// buffer, three quarters as working set).
const (
	emuMaxBufferLength = 16 << 30
	emuWorkingSet      = 48 << 30
)

// emuBuffer is memory shared with the emulator process, or plain Go memory on the zero EmuDevice
// (which plans and uploads without an emulator, for tests that need no g++).
type emuBuffer struct {
	b        *emu.Buffer
	mem      []byte
	readOnly bool // a file wrapped in place: Upload must not write it
}

func (b *emuBuffer) bytes() []byte {
	if b.b != nil {
		return b.b.Bytes()
	}
	return b.mem
}

func (b *emuBuffer) Len() int { return len(b.bytes()) }

// NewEmuDevice compiles metal.Source() with g++ (about 20 s) and starts the emulator.
func NewEmuDevice() (*EmuDevice, error) { return NewEmuDeviceOptions(EmuOptions{}) }

// NewEmuDeviceOptions is NewEmuDevice with options.
func NewEmuDeviceOptions(o EmuOptions) (*EmuDevice, error) {
	if o.MaxBufferLength <= 0 {
		o.MaxBufferLength = emuMaxBufferLength
	}
	if o.WorkingSet <= 0 {
		o.WorkingSet = emuWorkingSet
	}
	e, err := emu.BuildOptions(map[string]string{"lily.metal": Source()}, emu.Options{Threads: o.Threads})
	if err != nil {
		return nil, err
	}
	acc := accessOf(e.Kernels())
	return &EmuDevice{emu: e, opt: o, acc: acc, rng: rand.New(rand.NewPCG(o.Seed, 0x6c696c79))}, nil
}

// Name is "metal-emu".
func (d *EmuDevice) Name() string { return "metal-emu" }

// Limits reports the configured limits.
func (d *EmuDevice) Limits() Limits {
	l := Limits{MaxBufferLength: d.opt.MaxBufferLength, WorkingSet: d.opt.WorkingSet, Source: "emulator",
		Residency: "none (the emulator's memory is the process's)"}
	if l.MaxBufferLength <= 0 {
		l.MaxBufferLength = emuMaxBufferLength
	}
	if l.WorkingSet <= 0 {
		l.WorkingSet = emuWorkingSet
	}
	return l
}

// MaxThreads is 1,024 unless the options cap the kernel lower.
func (d *EmuDevice) MaxThreads(kernel string) (int, error) {
	if d.emu != nil {
		if _, ok := d.emu.Kernels()[kernel]; !ok {
			return 0, fmt.Errorf("metal-emu: kernel %q not in the library", kernel)
		}
	}
	if n, ok := d.opt.MaxThreads[kernel]; ok && n > 0 && n < MaxThreadgroup {
		return n, nil
	}
	return MaxThreadgroup, nil
}

// Alloc returns a zeroed shared buffer; storage modes are all the same memory here.
func (d *EmuDevice) Alloc(n int, _ Storage) (Buffer, error) {
	if lim := d.Limits().MaxBufferLength; n <= 0 || int64(n) > lim {
		return nil, fmt.Errorf("metal-emu: alloc of %d bytes (maxBufferLength %d)", n, lim)
	}
	if d.emu == nil {
		return &emuBuffer{mem: make([]byte, n)}, nil
	}
	b, err := d.emu.NewBuffer(n)
	if err != nil {
		return nil, err
	}
	return &emuBuffer{b: b}, nil
}

// Wrap maps b's file into the emulator process in place when b lies in a read-only file mapping
// (mapped) and the file can be found (emu.MapFile); otherwise it copies b into a shared buffer.
func (d *EmuDevice) Wrap(b []byte, mapped bool) (Buffer, int, error) {
	if len(b) == 0 {
		return nil, 0, errors.New("metal-emu: wrap of an empty slice")
	}
	if mapped && d.emu != nil {
		fb, ok, err := d.emu.MapFile(b)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			return &emuBuffer{b: fb, readOnly: true}, 0, nil
		}
	}
	buf, err := d.Alloc(len(b), Shared)
	if err != nil {
		return nil, 0, err
	}
	copy(buf.(*emuBuffer).bytes(), b)
	return buf, 0, nil
}

func (d *EmuDevice) buf(b Buffer) ([]byte, error) {
	e, ok := b.(*emuBuffer)
	if !ok || e == nil || e.bytes() == nil {
		return nil, fmt.Errorf("metal-emu: buffer %T is not a live buffer of this device", b)
	}
	return e.bytes(), nil
}

// Upload copies src into dst at off.
func (d *EmuDevice) Upload(dst Buffer, off int, src []byte) error {
	b, err := d.buf(dst)
	if err != nil {
		return err
	}
	if off < 0 || off+len(src) > len(b) {
		return fmt.Errorf("metal-emu: upload of %d bytes at %d into %d", len(src), off, len(b))
	}
	if e, _ := dst.(*emuBuffer); e.readOnly {
		return errors.New("metal-emu: upload into a read-only file wrapped in place")
	}
	copy(b[off:], src)
	return nil
}

// Download copies len(dst) bytes from src at off.
func (d *EmuDevice) Download(dst []byte, src Buffer, off int) error {
	b, err := d.buf(src)
	if err != nil {
		return err
	}
	if off < 0 || off+len(dst) > len(b) {
		return fmt.Errorf("metal-emu: download of %d bytes at %d from %d", len(dst), off, len(b))
	}
	copy(dst, b[off:])
	return nil
}

// Run executes cmds as the Metal device encodes them (Encode): passes and barriers in order, the
// dispatches between two barriers in a seeded shuffle unless the options ask for list order.
func (d *EmuDevice) Run(cmds []Command) error {
	if err := Check(cmds); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.emu == nil {
		return errors.New("metal-emu: device closed")
	}
	return d.runOps(cmds, Encode(cmds, d.acc, DefaultSplit()))
}

// runOps runs cmds in the order an encoding allows: each run of dispatches that no barrier, pass or
// command-buffer boundary separates goes in an order drawn from the device's generator.
func (d *EmuDevice) runOps(cmds []Command, ops []Op) error {
	var group []int
	flush := func() error {
		if !d.opt.InOrder {
			d.rng.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		}
		for _, i := range group {
			if err := d.dispatch(cmds[i].(*Dispatch)); err != nil {
				return fmt.Errorf("command %d: %w", i, err)
			}
		}
		group = group[:0]
		return nil
	}
	for _, o := range ops {
		switch o.Kind {
		case OpDispatch:
			group = append(group, o.Cmd)
			continue
		case OpSetPipeline, OpSetBuffers, OpSetBytes:
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if o.Kind == OpCopy {
			c := cmds[o.Cmd].(*Copy)
			src, err := d.buf(c.Src)
			if err != nil {
				return err
			}
			dst, err := d.buf(c.Dst)
			if err != nil {
				return err
			}
			copy(dst[c.DstOff:c.DstOff+c.N], src[c.SrcOff:c.SrcOff+c.N])
		}
	}
	return flush()
}

// dispatch runs one kernel: buffer arguments as windows of shared memory, inline ones copied. Like
// a Metal pipeline, it refuses more threads per threadgroup than the kernel allows.
func (d *EmuDevice) dispatch(c *Dispatch) error {
	limit, err := d.MaxThreads(c.Kernel)
	if err != nil {
		return err
	}
	if t := c.Threads[0] * c.Threads[1] * c.Threads[2]; t > limit {
		return fmt.Errorf("metal-emu: %s: %d threads per threadgroup, the pipeline allows %d", c.Kernel, t, limit)
	}
	args := make([]emu.Arg, len(c.Args))
	for j, a := range c.Args {
		if a.Buf == nil {
			args[j] = emu.Arg{Slot: j, Bytes: append([]byte(nil), a.Bytes...)}
			continue
		}
		e, ok := a.Buf.(*emuBuffer)
		if !ok || e == nil || e.b == nil {
			return fmt.Errorf("metal-emu: %s: buffer %d is %T, not from this device", c.Kernel, j, a.Buf)
		}
		off, end, _ := a.window()
		args[j] = emu.Arg{Slot: j, Buf: e.b, Off: off, Len: end - off}
	}
	return d.emu.Run(c.Kernel, c.Groups, c.Threads, args, d.opt.Schedule)
}

// Free unmaps the buffer.
func (d *EmuDevice) Free(b Buffer) {
	if e, ok := b.(*emuBuffer); ok && e != nil && e.b != nil && d.emu != nil {
		d.emu.FreeBuffer(e.b)
	}
}

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

var _ Device = (*EmuDevice)(nil)
