package device

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// selectors are the Objective-C selectors the bridge sends, registered once per device.
type selectors struct {
	new, release, drain                                                         objc.SEL
	stringWithUTF8String, utf8String, localizedDescription                      objc.SEL
	newCommandQueue, setFastMathEnabled, newLibraryWithSource                   objc.SEL
	newFunctionWithName, newComputePipelineStateWithFunction                    objc.SEL
	maxTotalThreadsPerThreadgroup, maxBufferLength                              objc.SEL
	newBufferWithLength, newBufferWithBytes, newBufferWithBytesNoCopy, contents objc.SEL
	commandBuffer, computeCommandEncoder, blitCommandEncoder, endEncoding       objc.SEL
	setComputePipelineState, setBuffer, setBytes, dispatchThreadgroups          objc.SEL
	copyBuffer, fillBuffer, commit, waitUntilCompleted, status, errorSel        objc.SEL
	recommendedMaxWorkingSetSize, respondsToSelector, setMathMode               objc.SEL
	setMathFloatingPointFunctions, count, objectAtIndex, retain                 objc.SEL
	gpuStartTime, gpuEndTime                                                    objc.SEL
	computeCommandEncoderWithDispatchType, setBuffersOffsetsWithRange           objc.SEL
	memoryBarrierWithScope                                                      objc.SEL
}

func newSelectors() selectors {
	r := objc.RegisterName
	return selectors{
		new: r("new"), release: r("release"), drain: r("drain"),
		stringWithUTF8String: r("stringWithUTF8String:"), utf8String: r("UTF8String"),
		localizedDescription: r("localizedDescription"),
		newCommandQueue:      r("newCommandQueue"), setFastMathEnabled: r("setFastMathEnabled:"),
		newLibraryWithSource:                r("newLibraryWithSource:options:error:"),
		newFunctionWithName:                 r("newFunctionWithName:"),
		newComputePipelineStateWithFunction: r("newComputePipelineStateWithFunction:error:"),
		maxTotalThreadsPerThreadgroup:       r("maxTotalThreadsPerThreadgroup"),
		maxBufferLength:                     r("maxBufferLength"),
		newBufferWithLength:                 r("newBufferWithLength:options:"),
		newBufferWithBytes:                  r("newBufferWithBytes:length:options:"),
		newBufferWithBytesNoCopy:            r("newBufferWithBytesNoCopy:length:options:deallocator:"),
		contents:                            r("contents"),
		commandBuffer:                       r("commandBuffer"), computeCommandEncoder: r("computeCommandEncoder"),
		blitCommandEncoder: r("blitCommandEncoder"), endEncoding: r("endEncoding"),
		setComputePipelineState: r("setComputePipelineState:"), setBuffer: r("setBuffer:offset:atIndex:"),
		setBytes: r("setBytes:length:atIndex:"), dispatchThreadgroups: r("dispatchThreadgroups:threadsPerThreadgroup:"),
		copyBuffer: r("copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:"),
		fillBuffer: r("fillBuffer:range:value:"),
		commit:     r("commit"), waitUntilCompleted: r("waitUntilCompleted"), status: r("status"), errorSel: r("error"),
		recommendedMaxWorkingSetSize:  r("recommendedMaxWorkingSetSize"),
		respondsToSelector:            r("respondsToSelector:"),
		setMathMode:                   r("setMathMode:"),
		setMathFloatingPointFunctions: r("setMathFloatingPointFunctions:"),
		count:                         r("count"), objectAtIndex: r("objectAtIndex:"), retain: r("retain"),
		gpuStartTime: r("GPUStartTime"), gpuEndTime: r("GPUEndTime"),
		computeCommandEncoderWithDispatchType: r("computeCommandEncoderWithDispatchType:"),
		setBuffersOffsetsWithRange:            r("setBuffers:offsets:withRange:"),
		memoryBarrierWithScope:                r("memoryBarrierWithScope:"),
	}
}

// Upload copies src into dst at off: directly for shared buffers, through a staging buffer and a
// blit for private ones.
func (d *MetalDevice) Upload(dst Buffer, off int, src []byte) error {
	m, err := d.own(dst)
	if err != nil {
		return err
	}
	if off < 0 || off+len(src) > m.n {
		return fmt.Errorf("metal: upload of %d bytes at %d into %d", len(src), off, m.n)
	}
	if len(src) == 0 {
		return nil
	}
	if m.mem != nil {
		return fmt.Errorf("metal: upload into a wrapped (read-only) buffer")
	}
	if m.contents != nil {
		return d.do(func() error {
			copy(unsafe.Slice((*byte)(unsafe.Add(m.contents, off)), len(src)), src)
			return nil
		})
	}
	st, _, err := d.Wrap(src, false)
	if err != nil {
		return err
	}
	defer d.Free(st)
	return d.Run([]Command{&Copy{Src: st, Dst: dst, DstOff: off, N: len(src)}})
}

// Download copies len(dst) bytes of src from off.
func (d *MetalDevice) Download(dst []byte, src Buffer, off int) error {
	m, err := d.own(src)
	if err != nil {
		return err
	}
	if off < 0 || off+len(dst) > m.n {
		return fmt.Errorf("metal: download of %d bytes at %d from %d", len(dst), off, m.n)
	}
	if len(dst) == 0 {
		return nil
	}
	if m.contents != nil {
		return d.do(func() error {
			copy(dst, unsafe.Slice((*byte)(unsafe.Add(m.contents, off)), len(dst)))
			return nil
		})
	}
	st, err := d.Alloc(len(dst), Shared)
	if err != nil {
		return err
	}
	defer d.Free(st)
	if err := d.Run([]Command{&Copy{Src: src, SrcOff: off, Dst: st, N: len(dst)}}); err != nil {
		return err
	}
	return d.Download(dst, st, 0)
}

// Run encodes cmds as Encode decides (concurrent passes with barriers, several command buffers
// committed as they fill), waits for the last, and returns Metal's error text for a failed one.
func (d *MetalDevice) Run(cmds []Command) error { return d.run(cmds, DefaultSplit(), nil) }

// RunTimed is Run, and returns the GPU time the command list took: the last command buffer's
// GPUEndTime minus the first one's GPUStartTime, without the CPU's encoding before the first commit
// or its wake-up after the last.
func (d *MetalDevice) RunTimed(cmds []Command) (time.Duration, error) {
	var t []cbTime
	if err := d.run(cmds, DefaultSplit(), &t); err != nil {
		return 0, err
	}
	return t[len(t)-1].end - t[0].start, nil
}

// RunProfiled runs cmds one dispatch per command buffer and returns each command's GPU time (its
// command buffer's GPUEndTime − GPUStartTime; copies count in the dispatch before them).
func (d *MetalDevice) RunProfiled(cmds []Command) ([]time.Duration, error) {
	var t []cbTime
	if err := d.run(cmds, ProfileSplit(), &t); err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(cmds))
	for _, o := range Encode(cmds, d.acc, ProfileSplit()) {
		if o.Kind == OpDispatch && o.CB < len(t) {
			out[o.Cmd] = t[o.CB].end - t[o.CB].start
		}
	}
	return out, nil
}

var _ Profiler = (*MetalDevice)(nil)

// cbTime is one command buffer's GPUStartTime and GPUEndTime (seconds on the GPU's clock, as a
// Duration since that clock's origin).
type cbTime struct{ start, end time.Duration }

// run validates and resolves cmds, encodes them (one message per Op), and waits; times, when not
// nil, receives each command buffer's GPU start and end.
func (d *MetalDevice) run(cmds []Command, sp Split, times *[]cbTime) error {
	if err := Check(cmds); err != nil {
		return err
	}
	return d.do(func() error {
		if err := d.resolve(cmds); err != nil {
			return err
		}
		ops := Encode(cmds, d.acc, sp)
		cbs, err := d.encode(cmds, ops)
		if err != nil {
			return err
		}
		if times != nil {
			*times = (*times)[:0]
			for _, cb := range cbs {
				sec := func(s objc.SEL) time.Duration {
					return time.Duration(objc.Send[float64](cb, s) * float64(time.Second))
				}
				*times = append(*times, cbTime{sec(d.sel.gpuStartTime), sec(d.sel.gpuEndTime)})
			}
		}
		return nil
	})
}

// resolve builds (or finds) each dispatch's pipeline and checks its threadgroup against the
// pipeline's limit, and checks every buffer is this device's, before anything is encoded: a
// failure then never leaves a command buffer half encoded or committed.
func (d *MetalDevice) resolve(cmds []Command) error {
	r := &d.enc
	r.pipes = r.pipes[:0]
	for i, c := range cmds {
		switch c := c.(type) {
		case *Dispatch:
			p, err := d.pipelineFor(c.Kernel)
			if err != nil {
				return fmt.Errorf("command %d: %w", i, err)
			}
			if t := c.Threads[0] * c.Threads[1] * c.Threads[2]; t > p.maxThread {
				return fmt.Errorf("metal: command %d (%s): %d threads per threadgroup, the pipeline allows %d", i, c.Kernel, t, p.maxThread)
			}
			for j, a := range c.Args {
				if a.Buf != nil {
					if _, err := d.own(a.Buf); err != nil {
						return fmt.Errorf("command %d (%s): buffer %d: %w", i, c.Kernel, j, err)
					}
				}
			}
			r.pipes = append(r.pipes, p.id)
		case *Copy:
			if _, err := d.own(c.Src); err != nil {
				return fmt.Errorf("command %d: copy source: %w", i, err)
			}
			if _, err := d.own(c.Dst); err != nil {
				return fmt.Errorf("command %d: copy destination: %w", i, err)
			}
			r.pipes = append(r.pipes, 0)
		}
	}
	return nil
}
