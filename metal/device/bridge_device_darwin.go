package device

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// Frameworks the bridge loads. CoreGraphics comes first: Apple documents that a command-line process
// must link it for MTLCreateSystemDefaultDevice to return the GPU.
const (
	coreGraphicsPath = "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics"
	metalPath        = "/System/Library/Frameworks/Metal.framework/Metal"
)

// MTLMathMode and MTLMathFloatingPointFunctions values (macOS 15+).
const (
	mtlMathModeSafe                      = 0
	mtlMathFloatingPointFunctionsPrecise = 1
)

func (d *MetalDevice) open() error {
	_, cgErr := purego.Dlopen(coreGraphicsPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	lib, err := purego.Dlopen(metalPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("metal: loading Metal.framework: %w", err)
	}
	d.sel = newSelectors()
	if err := d.openMsgSend(); err != nil {
		return err
	}
	if d.acc, err = NewAccess(Source()); err != nil {
		return err
	}
	pool := objc.ID(objc.GetClass("NSAutoreleasePool")).Send(d.sel.new)
	defer pool.Send(d.sel.drain)
	if d.dev, d.limits.Source, err = systemDevice(lib, d.sel); err != nil {
		if cgErr != nil {
			err = fmt.Errorf("%w (CoreGraphics did not load: %v)", err, cgErr)
		}
		return err
	}
	d.maxBuf = int(objc.Send[uint64](d.dev, d.sel.maxBufferLength))
	d.limits.MaxBufferLength = int64(d.maxBuf)
	d.limits.WorkingSet = int64(objc.Send[uint64](d.dev, d.sel.recommendedMaxWorkingSetSize))
	d.queue = d.dev.Send(d.sel.newCommandQueue)
	if d.queue == 0 {
		return errors.New("metal: newCommandQueue failed")
	}
	// The kernels are checked against ref with IEEE exp/log: safe math and precise functions where
	// the OS has mathMode (macOS 15+), else fast math off (deprecated since macOS 15).
	opts := objc.ID(objc.GetClass("MTLCompileOptions")).Send(d.sel.new)
	if objc.Send[bool](opts, d.sel.respondsToSelector, d.sel.setMathMode) {
		opts.Send(d.sel.setMathMode, int64(mtlMathModeSafe))
		if objc.Send[bool](opts, d.sel.respondsToSelector, d.sel.setMathFloatingPointFunctions) {
			opts.Send(d.sel.setMathFloatingPointFunctions, int64(mtlMathFloatingPointFunctionsPrecise))
		}
	} else {
		opts.Send(d.sel.setFastMathEnabled, false)
	}
	var nserr objc.ID
	d.lib = d.dev.Send(d.sel.newLibraryWithSource, d.nsString(Source()), opts, unsafe.Pointer(&nserr))
	opts.Send(d.sel.release)
	if d.lib == 0 {
		return fmt.Errorf("metal: compiling the kernel library: %s", d.errText(nserr))
	}
	if nserr != 0 { // a library that compiled with warnings comes with them in the error
		d.compileLog = d.errText(nserr)
	}
	d.openResidency()
	return nil
}

// systemDevice returns the default Metal device, or the first of MTLCopyAllDevices where there is no
// default (a process without a window server session), retained, and which call gave it.
func systemDevice(lib uintptr, sel selectors) (objc.ID, string, error) {
	var create func() objc.ID
	purego.RegisterLibFunc(&create, lib, "MTLCreateSystemDefaultDevice")
	if dev := create(); dev != 0 {
		return dev, "MTLCreateSystemDefaultDevice", nil
	}
	var all func() objc.ID
	purego.RegisterLibFunc(&all, lib, "MTLCopyAllDevices")
	arr := all()
	if arr == 0 {
		return 0, "", fmt.Errorf("%w: MTLCreateSystemDefaultDevice and MTLCopyAllDevices returned none", ErrNoMetal)
	}
	defer arr.Send(sel.release)
	if objc.Send[uint64](arr, sel.count) == 0 {
		return 0, "", fmt.Errorf("%w: MTLCreateSystemDefaultDevice returned none and MTLCopyAllDevices is empty", ErrNoMetal)
	}
	dev := arr.Send(sel.objectAtIndex, uint64(0))
	dev.Send(sel.retain)
	return dev, "MTLCopyAllDevices", nil
}

// Limits are the device's maxBufferLength and recommendedMaxWorkingSetSize, and how it was opened.
func (d *MetalDevice) Limits() Limits { return d.limits }

// MaxThreads is the kernel pipeline's maxTotalThreadsPerThreadgroup (the pipeline is built on first
// use).
func (d *MetalDevice) MaxThreads(kernel string) (int, error) {
	var n int
	err := d.do(func() error {
		p, err := d.pipelineFor(kernel)
		n = p.maxThread
		return err
	})
	return n, err
}
