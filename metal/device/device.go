package device

import (
	"errors"
	"fmt"
)

// ErrNoMetal is returned by NewMetalDevice where there is no Metal GPU (any OS but macOS, or a
// Mac without one).
var ErrNoMetal = errors.New("metal: no Metal GPU")

// Device is the narrow GPU interface the engine needs: buffers, and command buffers that run a
// sequence of kernel dispatches and copies in order. Two implementations exist: the Metal bridge
// (darwin, "metal") and the CPU emulator of the same kernel sources ("metal-emu").
//
// A Device is safe for concurrent use; Run calls are serialized. Buffers belong to the device that
// made them and are valid until Free or Close.
type Device interface {
	// Name is "metal" or "metal-emu".
	Name() string
	// Alloc returns a zeroed buffer of n bytes (n > 0).
	Alloc(n int, s Storage) (Buffer, error)
	// Wrap makes b readable by kernels. When mapped is true, b lies inside a read-only file mapping
	// that stays mapped while the buffer lives, and the device may use the memory in place (Metal
	// widens b to whole pages, which stay inside the mapping, and wraps them without a copy);
	// otherwise the device copies b. off is where b[0] sits in the returned buffer.
	Wrap(b []byte, mapped bool) (buf Buffer, off int, err error)
	// Upload copies src into dst at byte offset off. It must not overlap a Run.
	Upload(dst Buffer, off int, src []byte) error
	// Download copies len(dst) bytes of src from byte offset off into dst.
	Download(dst []byte, src Buffer, off int) error
	// Run runs cmds and waits for them to complete. Each command sees the memory effects of the
	// ones before it that it depends on (Encode: concurrent passes with barriers, split over
	// several command buffers on Metal; the same groups in a seeded order on the emulator).
	Run(cmds []Command) error
	// Free releases a buffer made by Alloc or Wrap.
	Free(b Buffer)
	// Close releases the device; its buffers must not be used afterwards.
	Close() error
	// Limits are the device's memory limits.
	Limits() Limits
	// MaxThreads is the most threads per threadgroup the kernel's pipeline allows (Metal's
	// maxTotalThreadsPerThreadgroup, at most 1,024; lower for a kernel that needs many registers).
	MaxThreads(kernel string) (int, error)
}

// MaxThreadgroup is the most threads per threadgroup any Apple GPU runs.
const MaxThreadgroup = 1024

// Limits are what a device says about its memory.
type Limits struct {
	// MaxBufferLength is the largest buffer the device can make (Metal's maxBufferLength).
	MaxBufferLength int64
	// WorkingSet is about how much memory the device can use without hurting performance
	// (Metal's recommendedMaxWorkingSetSize; on macOS it follows iogpu.wired_limit_mb).
	WorkingSet int64
	// Source says how the device was obtained ("MTLCreateSystemDefaultDevice",
	// "MTLCopyAllDevices", "emulator").
	Source string
	// Residency says how the weights are kept resident: "MTLResidencySet" (macOS 15+), or why not.
	Residency string
}

// CompileLogger is a device that reports what its compiler said about the kernel library.
type CompileLogger interface {
	CompileLog() string
}

// Storage says who may touch a buffer's memory directly.
type Storage int

const (
	// Shared memory is visible to the CPU and the GPU (readback, per-call inputs).
	Shared Storage = iota
	// Private memory is GPU-only (activations, sequence state); Upload and Download go through a
	// staging copy on Metal.
	Private
)

// Buffer is device memory.
type Buffer interface {
	// Len is the buffer's size in bytes.
	Len() int
}

// Command is one step of a command buffer: a *Dispatch or a *Copy.
type Command interface{ command() }

// Dispatch runs a kernel over Groups threadgroups of Threads threads each (Metal's
// dispatchThreadgroups:threadsPerThreadgroup:), with Args[i] bound at [[buffer(i)]].
type Dispatch struct {
	Kernel  string
	Groups  [3]int
	Threads [3]int
	Args    []Arg
}

// Copy copies N bytes from Src at SrcOff to Dst at DstOff on the GPU (a blit).
type Copy struct {
	Src, Dst       Buffer
	SrcOff, DstOff int
	N              int
}

func (*Dispatch) command() {}
func (*Copy) command()     {}

// Arg is one kernel argument: a window of a buffer, or inline constant bytes (a dims struct).
type Arg struct {
	Buf Buffer
	Off int // byte offset of the window in Buf
	// Len is the window's size in bytes: what the kernel may touch from Off. Metal binds Buf at
	// Off (the kernel could reach the rest); the emulator transfers exactly the window, so Len
	// must cover every byte the kernel reads or writes. 0 means to the end of Buf.
	Len   int
	Bytes []byte // inline constant data when Buf is nil (setBytes; at most 4 KiB)
}

// window returns the argument's byte range [off, end) inside its buffer, checked.
func (a Arg) window() (off, end int, err error) {
	if a.Buf == nil {
		return 0, 0, fmt.Errorf("no buffer and no bytes")
	}
	n := a.Buf.Len()
	end = n
	if a.Len > 0 {
		end = a.Off + a.Len
	}
	if a.Off < 0 || a.Len < 0 || end > n || a.Off >= end {
		return 0, 0, fmt.Errorf("window [%d, +%d) outside a buffer of %d bytes", a.Off, a.Len, n)
	}
	return a.Off, end, nil
}

// Check validates a command buffer before it is encoded, so that a plan error surfaces as an
// error naming the dispatch rather than as a GPU fault.
func Check(cmds []Command) error {
	for i, c := range cmds {
		switch c := c.(type) {
		case *Dispatch:
			t := c.Threads[0] * c.Threads[1] * c.Threads[2]
			if t <= 0 || t > MaxThreadgroup || c.Groups[0] <= 0 || c.Groups[1] <= 0 || c.Groups[2] <= 0 {
				return fmt.Errorf("metal: command %d (%s): bad grid %v × %v", i, c.Kernel, c.Groups, c.Threads)
			}
			if len(c.Args) > 31 {
				return fmt.Errorf("metal: command %d (%s): %d buffers (max 31)", i, c.Kernel, len(c.Args))
			}
			for j, a := range c.Args {
				if a.Buf == nil && len(a.Bytes) == 0 {
					return fmt.Errorf("metal: command %d (%s): buffer %d not bound", i, c.Kernel, j)
				}
				if a.Buf == nil {
					if len(a.Bytes) > 4096 {
						return fmt.Errorf("metal: command %d (%s): inline buffer %d is %d bytes (max 4096)", i, c.Kernel, j, len(a.Bytes))
					}
					continue
				}
				if _, _, err := a.window(); err != nil {
					return fmt.Errorf("metal: command %d (%s): buffer %d: %w", i, c.Kernel, j, err)
				}
			}
		case *Copy:
			if c.N <= 0 || c.SrcOff < 0 || c.DstOff < 0 || c.Src == nil || c.Dst == nil ||
				c.SrcOff+c.N > c.Src.Len() || c.DstOff+c.N > c.Dst.Len() {
				return fmt.Errorf("metal: command %d: bad copy of %d bytes", i, c.N)
			}
		default:
			return fmt.Errorf("metal: command %d: unknown command %T", i, c)
		}
	}
	return nil
}
