package device

import (
	"bytes"
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

// Run encodes cmds into one command buffer (consecutive dispatches share a compute encoder,
// copies a blit encoder), commits it and waits; a failed command buffer returns Metal's error text.
func (d *MetalDevice) Run(cmds []Command) error { return d.run(cmds, nil) }

// RunTimed is Run, and returns the GPU time the command buffer took: its GPUEndTime minus its
// GPUStartTime, without the CPU's encoding, commit and wake-up.
func (d *MetalDevice) RunTimed(cmds []Command) (time.Duration, error) {
	var sec float64
	if err := d.run(cmds, &sec); err != nil {
		return 0, err
	}
	return time.Duration(sec * float64(time.Second)), nil
}

// run encodes, commits and waits for cmds; gpu, when not nil, receives the GPU seconds it took.
func (d *MetalDevice) run(cmds []Command, gpu *float64) error {
	if err := Check(cmds); err != nil {
		return err
	}
	return d.do(func() error {
		cb := d.queue.Send(d.sel.commandBuffer)
		if cb == 0 {
			return fmt.Errorf("metal: commandBuffer failed")
		}
		var enc objc.ID
		var bs bound
		blit := false
		end := func() {
			if enc != 0 {
				enc.Send(d.sel.endEncoding)
				enc = 0
			}
		}
		for i, c := range cmds {
			switch c := c.(type) {
			case *Dispatch:
				if enc == 0 || blit {
					end()
					enc, blit, bs = cb.Send(d.sel.computeCommandEncoder), false, bound{}
				}
				if err := d.encodeDispatch(enc, c, &bs); err != nil {
					end()
					return fmt.Errorf("command %d: %w", i, err)
				}
			case *Copy:
				if enc == 0 || !blit {
					end()
					enc, blit = cb.Send(d.sel.blitCommandEncoder), true
				}
				src, err := d.own(c.Src)
				if err != nil {
					end()
					return err
				}
				dst, err := d.own(c.Dst)
				if err != nil {
					end()
					return err
				}
				enc.Send(d.sel.copyBuffer, src.id, uint64(c.SrcOff), dst.id, uint64(c.DstOff), uint64(c.N))
			}
		}
		end()
		cb.Send(d.sel.commit)
		cb.Send(d.sel.waitUntilCompleted)
		if objc.Send[uint64](cb, d.sel.status) == mtlStatusError {
			return fmt.Errorf("metal: command buffer failed: %s", d.errText(cb.Send(d.sel.errorSel)))
		}
		if gpu != nil {
			*gpu = objc.Send[float64](cb, d.sel.gpuEndTime) - objc.Send[float64](cb, d.sel.gpuStartTime)
		}
		return nil
	})
}

// bound is what a compute encoder already has bound. Encoder state persists across dispatches, so
// unchanged pipelines, buffers and constants are not sent again: each message is a reflective
// purego call, and a decode token encodes hundreds of dispatches.
type bound struct {
	pipe  objc.ID
	buf   [31]objc.ID
	off   [31]int
	bytes [31][]byte
}

// encodeDispatch binds a dispatch's pipeline and arguments (what changed since the encoder's last
// dispatch) and encodes it.
func (d *MetalDevice) encodeDispatch(enc objc.ID, c *Dispatch, bs *bound) error {
	p, err := d.pipelineFor(c.Kernel)
	if err != nil {
		return err
	}
	if t := c.Threads[0] * c.Threads[1] * c.Threads[2]; t > p.maxThread {
		return fmt.Errorf("metal: %s: %d threads per threadgroup, the pipeline allows %d", c.Kernel, t, p.maxThread)
	}
	if bs.pipe != p.id {
		enc.Send(d.sel.setComputePipelineState, p.id)
		bs.pipe = p.id
	}
	for i, a := range c.Args {
		if a.Buf == nil {
			if bs.buf[i] != 0 || bs.bytes[i] == nil || !bytes.Equal(bs.bytes[i], a.Bytes) {
				enc.Send(d.sel.setBytes, unsafe.Pointer(unsafe.SliceData(a.Bytes)), uint64(len(a.Bytes)), uint64(i))
				bs.buf[i], bs.bytes[i] = 0, a.Bytes
			}
			continue
		}
		m, err := d.own(a.Buf)
		if err != nil {
			return fmt.Errorf("%s: buffer %d: %w", c.Kernel, i, err)
		}
		if bs.buf[i] != m.id || bs.off[i] != a.Off {
			enc.Send(d.sel.setBuffer, m.id, uint64(a.Off), uint64(i))
			bs.buf[i], bs.off[i], bs.bytes[i] = m.id, a.Off, nil
		}
	}
	enc.Send(d.sel.dispatchThreadgroups,
		mtlSize{Width: uint64(c.Groups[0]), Height: uint64(c.Groups[1]), Depth: uint64(c.Groups[2])},
		mtlSize{Width: uint64(c.Threads[0]), Height: uint64(c.Threads[1]), Depth: uint64(c.Threads[2])})
	return nil
}
