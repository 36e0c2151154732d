//go:build darwin

package device

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// The encoding messages go through objc_msgSend called with purego.SyscallN and plain words, not
// objc.Send's reflective `...any` path: a decode token sends about a thousand of them.
//
// Arguments follow the Arm64 procedure call standard (AAPCS64 §6.8.2, as purego's struct_arm64.go
// implements it): a composite of at most 16 bytes (NSRange) travels in consecutive integer
// registers, one word per field; a larger one that is not a floating-point aggregate (MTLSize, 24
// bytes) is copied by the caller and passed as a pointer to the copy. The copies and arrays the
// messages point at live in encScratch, a heap object of the device that the garbage collector
// never moves, so the words stay valid through each call.

// Enum values, from Apple's Metal headers (MTLComputeCommandEncoder.h, MTLCommandEncoder.h):
// MTLDispatchTypeConcurrent = 1 (Serial = 0), MTLBarrierScopeBuffers = 1 << 0.
const (
	mtlDispatchTypeConcurrent = 1
	mtlBarrierScopeBuffers    = 1
)

const libobjcPath = "/usr/lib/libobjc.A.dylib"

// encScratch is the memory the encoding messages point at, and the pipelines resolve found.
type encScratch struct {
	msgSend uintptr     // objc_msgSend
	pipes   []objc.ID   // per command: the dispatch's pipeline (0 for a copy)
	bufs    [31]uintptr // setBuffers: ids
	offs    [31]uint64  // setBuffers: offsets
	size    [2]mtlSize  // dispatchThreadgroups: groups, threads
	bytes   [4096]byte  // setBytes: the constant block (Metal copies it during the call)
	cbs     []objc.ID
}

// openMsgSend finds objc_msgSend for the typed calls.
func (d *MetalDevice) openMsgSend() error {
	lib, err := purego.Dlopen(libobjcPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("metal: loading libobjc: %w", err)
	}
	d.enc.msgSend, err = purego.Dlsym(lib, "objc_msgSend")
	if err != nil {
		return fmt.Errorf("metal: objc_msgSend: %w", err)
	}
	return nil
}

// msg sends sel to id with word arguments and returns the result word.
func (d *MetalDevice) msg(id objc.ID, sel objc.SEL, args ...uintptr) uintptr {
	var w [8]uintptr
	w[0], w[1] = uintptr(id), uintptr(sel)
	n := copy(w[2:], args)
	r, _, _ := purego.SyscallN(d.enc.msgSend, w[:2+n]...)
	return r
}

// encode sends ops, one message each, for cmds (already resolved), and waits for every command
// buffer it committed. It returns the command buffers in order.
func (d *MetalDevice) encode(cmds []Command, ops []Op) ([]objc.ID, error) {
	s := &d.enc
	s.cbs = s.cbs[:0]
	var cb, enc objc.ID
	failed := -1
	for _, o := range ops {
		switch o.Kind {
		case OpCommandBuffer:
			cb = objc.ID(d.msg(d.queue, d.sel.commandBuffer))
			if cb == 0 {
				d.waitAll()
				return nil, fmt.Errorf("metal: commandBuffer failed")
			}
			s.cbs = append(s.cbs, cb)
		case OpComputeEncoder:
			enc = objc.ID(d.msg(cb, d.sel.computeCommandEncoderWithDispatchType, mtlDispatchTypeConcurrent))
		case OpBlitEncoder:
			enc = objc.ID(d.msg(cb, d.sel.blitCommandEncoder))
		case OpEndEncoding:
			d.msg(enc, d.sel.endEncoding)
			enc = 0
		case OpSetPipeline:
			d.msg(enc, d.sel.setComputePipelineState, uintptr(s.pipes[o.Cmd]))
		case OpSetBuffers:
			c := cmds[o.Cmd].(*Dispatch)
			for j := 0; j < o.N; j++ {
				a := c.Args[o.Slot+j]
				m, _ := d.own(a.Buf) // resolve checked it
				s.bufs[j], s.offs[j] = uintptr(m.id), uint64(a.Off)
			}
			d.msg(enc, d.sel.setBuffersOffsetsWithRange, uintptr(unsafe.Pointer(&s.bufs[0])),
				uintptr(unsafe.Pointer(&s.offs[0])), uintptr(o.Slot), uintptr(o.N))
		case OpSetBytes:
			b := cmds[o.Cmd].(*Dispatch).Args[o.Slot].Bytes
			n := copy(s.bytes[:], b)
			d.msg(enc, d.sel.setBytes, uintptr(unsafe.Pointer(&s.bytes[0])), uintptr(n), uintptr(o.Slot))
		case OpBarrier:
			d.msg(enc, d.sel.memoryBarrierWithScope, mtlBarrierScopeBuffers)
		case OpDispatch:
			c := cmds[o.Cmd].(*Dispatch)
			s.size[0] = mtlSize{Width: uint64(c.Groups[0]), Height: uint64(c.Groups[1]), Depth: uint64(c.Groups[2])}
			s.size[1] = mtlSize{Width: uint64(c.Threads[0]), Height: uint64(c.Threads[1]), Depth: uint64(c.Threads[2])}
			d.msg(enc, d.sel.dispatchThreadgroups, uintptr(unsafe.Pointer(&s.size[0])), uintptr(unsafe.Pointer(&s.size[1])))
		case OpCopy:
			c := cmds[o.Cmd].(*Copy)
			src, _ := d.own(c.Src)
			dst, _ := d.own(c.Dst)
			d.msg(enc, d.sel.copyBuffer, uintptr(src.id), uintptr(c.SrcOff), uintptr(dst.id), uintptr(c.DstOff), uintptr(c.N))
		case OpCommit:
			d.msg(cb, d.sel.commit)
		case OpWait:
			d.msg(s.cbs[o.CB], d.sel.waitUntilCompleted)
		case OpStatus:
			if d.msg(s.cbs[o.CB], d.sel.status) == mtlStatusError && failed < 0 {
				failed = o.CB
			}
		}
	}
	runtime.KeepAlive(cmds)
	if failed >= 0 {
		return nil, fmt.Errorf("metal: command buffer %d of %d failed: %s", failed+1, len(s.cbs),
			d.errText(s.cbs[failed].Send(d.sel.errorSel)))
	}
	return s.cbs, nil
}

// waitAll waits for the command buffers already committed (after a failure part-way).
func (d *MetalDevice) waitAll() {
	for _, cb := range d.enc.cbs {
		if objc.Send[uint64](cb, d.sel.status) >= mtlStatusCommitted {
			d.msg(cb, d.sel.waitUntilCompleted)
		}
	}
}
