package device

import (
	"errors"
	"fmt"
	"runtime"
	"structs"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// MetalDevice is the Device on the system's Metal GPU, driven through the Objective-C runtime
// with purego (no cgo). One goroutine, locked to its OS thread, owns every Metal object (device,
// queue, library, pipelines, buffers, command buffers): each method hands a closure to it and
// waits, inside an autorelease pool. MetalDevice is therefore safe for concurrent use; command
// buffers run one at a time.
type MetalDevice struct {
	calls     chan func()
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// Owned by the loop goroutine.
	dev, queue, lib objc.ID
	pipes           map[string]pipeline
	sel             selectors
	page            int
	maxBuf          int    // the device's maxBufferLength
	limits          Limits // read once at open
	res             residency
	compileLog      string // the library compiler's warnings (empty when it had none)
	acc             Access // which kernel arguments are written: where barriers go
	enc             encScratch
}

type pipeline struct {
	id        objc.ID
	maxThread int
}

// mtlBuffer is a Metal buffer. mem keeps wrapped Go-visible memory alive; contents is the CPU
// address of a shared buffer (nil for private ones).
type mtlBuffer struct {
	id       objc.ID
	n        int
	storage  Storage
	contents unsafe.Pointer
	mem      []byte
	resident bool // in the residency set (wrapped weights)
}

func (b *mtlBuffer) Len() int { return b.n }

// mtlSize is MTLSize: three NSUInteger, passed by value (purego copies it as the C ABI says).
type mtlSize struct {
	_                    structs.HostLayout
	Width, Height, Depth uint64
}

// Metal constants (MTLResourceOptions, MTLCommandBufferStatus).
const (
	mtlStorageShared   = 0 << 4
	mtlStoragePrivate  = 2 << 4
	mtlStatusCommitted = 2
	mtlStatusError     = 5
)

// NewMetalDevice opens the system default Metal device, compiles metal.Source() and starts the
// goroutine that owns the Metal objects. It fails with the Metal error text when the library does
// not compile, and clearly when the machine has no Metal GPU.
func NewMetalDevice() (Device, error) {
	d := &MetalDevice{calls: make(chan func()), quit: make(chan struct{}), done: make(chan struct{}),
		pipes: map[string]pipeline{}, page: syscall.Getpagesize()}
	started := make(chan error, 1)
	go d.loop(started)
	if err := <-started; err != nil {
		<-d.done
		return nil, err
	}
	return d, nil
}

// loop is the owner goroutine: it sets up the device, then runs closures until Close.
func (d *MetalDevice) loop(started chan<- error) {
	runtime.LockOSThread()
	defer close(d.done)
	if err := d.open(); err != nil {
		started <- err
		return
	}
	started <- nil
	for {
		select {
		case fn := <-d.calls:
			pool := objc.ID(objc.GetClass("NSAutoreleasePool")).Send(d.sel.new)
			fn()
			pool.Send(d.sel.drain)
		case <-d.quit:
			d.release()
			return
		}
	}
}

// do runs fn on the owner goroutine and returns its error.
func (d *MetalDevice) do(fn func() error) error {
	var err error
	ran := make(chan struct{})
	select {
	case d.calls <- func() { err = fn(); close(ran) }:
	case <-d.done:
		return errors.New("metal: device closed")
	}
	<-ran
	return err
}

// release drops every Metal object the loop owns.
func (d *MetalDevice) release() {
	d.closeResidency()
	for _, p := range d.pipes {
		p.id.Send(d.sel.release)
	}
	d.pipes = nil
	for _, id := range []objc.ID{d.lib, d.queue, d.dev} {
		if id != 0 {
			id.Send(d.sel.release)
		}
	}
	d.lib, d.queue, d.dev = 0, 0, 0
}

func (d *MetalDevice) nsString(s string) objc.ID {
	return objc.ID(objc.GetClass("NSString")).Send(d.sel.stringWithUTF8String, s)
}

// errText is an NSError's localizedDescription (the Metal compiler or runtime message).
func (d *MetalDevice) errText(e objc.ID) string {
	if e == 0 {
		return "unknown error (no NSError)"
	}
	desc := e.Send(d.sel.localizedDescription)
	if desc == 0 {
		return "unknown error"
	}
	return objc.Send[string](desc, d.sel.utf8String)
}

// pipelineFor returns the compiled pipeline of a kernel, building it on first use.
func (d *MetalDevice) pipelineFor(name string) (pipeline, error) {
	if p, ok := d.pipes[name]; ok {
		return p, nil
	}
	fn := d.lib.Send(d.sel.newFunctionWithName, d.nsString(name))
	if fn == 0 {
		return pipeline{}, fmt.Errorf("metal: kernel %q not in the library", name)
	}
	defer fn.Send(d.sel.release)
	var nserr objc.ID
	id := d.dev.Send(d.sel.newComputePipelineStateWithFunction, fn, unsafe.Pointer(&nserr))
	if id == 0 {
		return pipeline{}, fmt.Errorf("metal: pipeline for %s: %s", name, d.errText(nserr))
	}
	p := pipeline{id: id, maxThread: int(objc.Send[uint64](id, d.sel.maxTotalThreadsPerThreadgroup))}
	d.pipes[name] = p
	return p, nil
}

// Name is "metal".
func (d *MetalDevice) Name() string { return "metal" }

func storageOption(s Storage) uint64 {
	if s == Private {
		return mtlStoragePrivate
	}
	return mtlStorageShared
}

// nsRange is NSRange.
type nsRange struct {
	_                structs.HostLayout
	Location, Length uint64
}

// Alloc makes a zeroed buffer: shared memory comes zero-filled; a private buffer is cleared with
// a blit before it is handed out, so recurrent state starts at zero whatever the driver does.
func (d *MetalDevice) Alloc(n int, s Storage) (Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("metal: alloc of %d bytes", n)
	}
	var b *mtlBuffer
	err := d.do(func() error {
		if n > d.maxBuf {
			return fmt.Errorf("metal: a buffer of %d bytes exceeds the device's maxBufferLength %d", n, d.maxBuf)
		}
		id := d.dev.Send(d.sel.newBufferWithLength, uint64(n), storageOption(s))
		if id == 0 {
			return fmt.Errorf("metal: newBufferWithLength %d failed (out of GPU memory?)", n)
		}
		b = &mtlBuffer{id: id, n: n, storage: s}
		if s == Shared {
			b.contents = objc.Send[unsafe.Pointer](id, d.sel.contents)
			return nil
		}
		cb := d.queue.Send(d.sel.commandBuffer)
		enc := cb.Send(d.sel.blitCommandEncoder)
		enc.Send(d.sel.fillBuffer, id, nsRange{Location: 0, Length: uint64(n)}, uint8(0))
		enc.Send(d.sel.endEncoding)
		cb.Send(d.sel.commit)
		cb.Send(d.sel.waitUntilCompleted)
		if objc.Send[uint64](cb, d.sel.status) == mtlStatusError {
			id.Send(d.sel.release)
			return fmt.Errorf("metal: clearing a new buffer: %s", d.errText(cb.Send(d.sel.errorSel)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Wrap uses mapped memory in place: b is widened to whole pages (which lie inside the same file
// mapping) and wrapped with newBufferWithBytesNoCopy; other memory is copied into a new buffer.
func (d *MetalDevice) Wrap(b []byte, mapped bool) (Buffer, int, error) {
	if len(b) == 0 {
		return nil, 0, errors.New("metal: wrap of an empty slice")
	}
	var out *mtlBuffer
	var off int
	err := d.do(func() error {
		p := unsafe.Pointer(unsafe.SliceData(b))
		if !mapped {
			id := d.dev.Send(d.sel.newBufferWithBytes, p, uint64(len(b)), uint64(mtlStorageShared))
			if id == 0 {
				return fmt.Errorf("metal: newBufferWithBytes of %d bytes failed", len(b))
			}
			out = &mtlBuffer{id: id, n: len(b), storage: Shared}
			out.contents = objc.Send[unsafe.Pointer](id, d.sel.contents)
			return nil
		}
		addr := uintptr(p)
		off = int(addr % uintptr(d.page))
		n := (off + len(b) + d.page - 1) / d.page * d.page
		if n > d.maxBuf {
			return fmt.Errorf("metal: %d bytes of weights in one file exceed the device's maxBufferLength %d (shard the checkpoint)", n, d.maxBuf)
		}
		start := unsafe.Add(p, -off)
		id := d.dev.Send(d.sel.newBufferWithBytesNoCopy, start, uint64(n), uint64(mtlStorageShared), objc.ID(0))
		if id == 0 {
			return fmt.Errorf("metal: newBufferWithBytesNoCopy of %d bytes at a page boundary failed", n)
		}
		out = &mtlBuffer{id: id, n: n, storage: Shared, contents: start, mem: b, resident: true}
		d.makeResident(id)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, off, nil
}

func (d *MetalDevice) own(b Buffer) (*mtlBuffer, error) {
	m, ok := b.(*mtlBuffer)
	if !ok || m == nil || m.id == 0 {
		return nil, fmt.Errorf("metal: buffer %T is not a live buffer of this device", b)
	}
	return m, nil
}

// Free releases the buffer.
func (d *MetalDevice) Free(b Buffer) {
	m, err := d.own(b)
	if err != nil {
		return
	}
	_ = d.do(func() error {
		if m.resident {
			d.dropResident(m.id)
		}
		m.id.Send(d.sel.release)
		m.id, m.contents, m.mem = 0, nil, nil
		return nil
	})
}

// Close stops the owner goroutine and releases the device, its queue, library and pipelines.
func (d *MetalDevice) Close() error {
	d.closeOnce.Do(func() { close(d.quit) })
	<-d.done
	return nil
}

var _ Device = (*MetalDevice)(nil)

var _ timedRunner = (*MetalDevice)(nil)

// CompileLog is what the Metal compiler said about the kernel library when it compiled it
// (warnings; empty when there were none).
func (d *MetalDevice) CompileLog() string { return d.compileLog }
