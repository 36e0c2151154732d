package device

import "bytes"

// The encoding of a command list, decided in pure Go so that Linux tests can count and check it:
// the darwin bridge sends exactly one Objective-C message per Op (Encode's result), and the emulator
// device runs the dispatches between two barriers in a shuffled order, so a barrier the analysis
// leaves out shows as a wrong result on Linux.
//
// A compute pass is a concurrent encoder (MTLDispatchTypeConcurrent): Metal may overlap its
// dispatches, so a memoryBarrierWithScope:MTLBarrierScopeBuffers goes exactly before a dispatch
// that touches what an earlier dispatch of the pass touched, where either of them writes
// (Apple: "MTLDispatchType.concurrent … you're responsible for synchronizing access"; the same
// scheme as llama.cpp's ggml-metal concurrent mode). Passes, and command buffers on one queue, run
// in order, so the hazard set starts empty with each encoder.

// OpKind is one Objective-C message of the encoding.
type OpKind uint8

// The messages, with the selector each stands for.
const (
	OpCommandBuffer  OpKind = iota // [queue commandBuffer]
	OpComputeEncoder               // [cb computeCommandEncoderWithDispatchType:MTLDispatchTypeConcurrent]
	OpBlitEncoder                  // [cb blitCommandEncoder]
	OpEndEncoding                  // [enc endEncoding]
	OpSetPipeline                  // [enc setComputePipelineState:]
	OpSetBuffers                   // [enc setBuffers:offsets:withRange:] over slots [Slot, Slot+N)
	OpSetBytes                     // [enc setBytes:length:atIndex:Slot]
	OpBarrier                      // [enc memoryBarrierWithScope:MTLBarrierScopeBuffers]
	OpDispatch                     // [enc dispatchThreadgroups:threadsPerThreadgroup:]
	OpCopy                         // [enc copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:]
	OpCommit                       // [cb commit]
	OpWait                         // [cb waitUntilCompleted], after the last commit, for each buffer
	OpStatus                       // [cb status], for each buffer
	numOpKinds
)

var opNames = [numOpKinds]string{"commandBuffer", "computeCommandEncoder", "blitCommandEncoder",
	"endEncoding", "setComputePipelineState", "setBuffers", "setBytes", "memoryBarrier",
	"dispatchThreadgroups", "copyFromBuffer", "commit", "waitUntilCompleted", "status"}

func (k OpKind) String() string {
	if k < numOpKinds {
		return opNames[k]
	}
	return "op?"
}

// Op is one message: Cmd is the index of the command it serves (-1 for none), CB the command
// buffer it belongs to, Slot and N the argument slots of setBuffers / setBytes.
type Op struct {
	Kind    OpKind
	Cmd, CB int
	Slot, N int
}

// Split says when the encoder commits a command buffer and starts the next, so the GPU starts on
// the first dispatches while the CPU encodes the rest.
type Split struct {
	First int // dispatches in the first command buffer (0: all in one)
	Every int // dispatches in each later one (0: the rest in one)
}

// DefaultSplit commits a small first command buffer early, then one per 128 dispatches: a decode
// token (~450 dispatches) becomes about five command buffers.
func DefaultSplit() Split { return Split{First: 16, Every: 128} }

// Encode decides the messages that encode cmds: concurrent compute passes with barriers where
// the access table says a dispatch depends on an earlier one, buffer bindings in ranges, constant
// bytes and pipelines only where they changed, and command buffers committed as sp says. cmds
// must have passed Check.
func Encode(cmds []Command, acc Access, sp Split) []Op {
	e := encoder{acc: acc, sp: sp, cb: -1}
	e.newCB(0)
	for i, c := range cmds {
		switch c := c.(type) {
		case *Dispatch:
			e.dispatch(i, c)
		case *Copy:
			if e.pass != OpBlitEncoder {
				e.end()
				e.emit(OpBlitEncoder, i)
				e.pass = OpBlitEncoder
			}
			e.emit(OpCopy, i)
		}
	}
	e.end()
	e.emit(OpCommit, -1)
	for cb := 0; cb <= e.cb; cb++ {
		e.ops = append(e.ops, Op{Kind: OpWait, Cmd: -1, CB: cb}, Op{Kind: OpStatus, Cmd: -1, CB: cb})
	}
	return e.ops
}

// encoder is Encode's state: the open pass, what it has bound, and the hazards since its last
// barrier.
type encoder struct {
	acc  Access
	sp   Split
	ops  []Op
	cb   int    // current command buffer
	n    int    // dispatches in it
	pass OpKind // OpComputeEncoder, OpBlitEncoder, or OpEndEncoding when none is open
	pipe string
	buf  [31]Buffer
	off  [31]int
	byt  [31][]byte
	haz  hazards
	rd   []span
	wr   []span
}

func (e *encoder) emit(k OpKind, cmd int) { e.ops = append(e.ops, Op{Kind: k, Cmd: cmd, CB: e.cb}) }

func (e *encoder) newCB(cmd int) {
	e.cb++
	e.n = 0
	e.pass = OpEndEncoding
	e.emit(OpCommandBuffer, cmd)
}

// end closes the open pass; the next pass starts with nothing bound and no hazards.
func (e *encoder) end() {
	if e.pass != OpEndEncoding {
		e.emit(OpEndEncoding, -1)
	}
	e.pass, e.pipe = OpEndEncoding, ""
	e.buf, e.off, e.byt = [31]Buffer{}, [31]int{}, [31][]byte{}
	e.haz.reset()
}

func (e *encoder) dispatch(i int, c *Dispatch) {
	limit := e.sp.Every
	if e.cb == 0 {
		limit = e.sp.First
	}
	if limit > 0 && e.n >= limit {
		e.end()
		e.emit(OpCommit, -1)
		e.newCB(i)
	}
	e.n++
	if e.pass != OpComputeEncoder {
		e.end()
		e.emit(OpComputeEncoder, i)
		e.pass = OpComputeEncoder
	}
	e.rd, e.wr = e.acc.spans(c, e.rd[:0], e.wr[:0])
	if e.haz.conflicts(e.rd, e.wr) {
		e.emit(OpBarrier, i)
		e.haz.reset()
	}
	e.haz.add(e.rd, e.wr)
	if e.pipe != c.Kernel {
		e.emit(OpSetPipeline, i)
		e.pipe = c.Kernel
	}
	e.bind(i, c)
	e.emit(OpDispatch, i)
}

// bind emits one setBuffers per run of buffer slots, from the first to the last slot whose binding
// changed (unchanged slots inside the run are bound again, which costs nothing), and one setBytes per
// inline argument whose bytes changed. A run stops at an inline slot: setBuffers there would
// unbind its bytes.
func (e *encoder) bind(i int, c *Dispatch) {
	start := -1
	flush := func(endSlot int) {
		if start >= 0 {
			e.ops = append(e.ops, Op{Kind: OpSetBuffers, Cmd: i, CB: e.cb, Slot: start, N: endSlot - start})
			start = -1
		}
	}
	last := -1 // the last buffer slot whose binding changed
	for j, a := range c.Args {
		if a.Buf != nil && (e.buf[j] != a.Buf || e.off[j] != a.Off) {
			last = j
		}
	}
	for j, a := range c.Args {
		if a.Buf == nil {
			flush(j)
			if e.buf[j] != nil || e.byt[j] == nil || !bytes.Equal(e.byt[j], a.Bytes) {
				e.ops = append(e.ops, Op{Kind: OpSetBytes, Cmd: i, CB: e.cb, Slot: j})
				e.buf[j], e.off[j], e.byt[j] = nil, 0, a.Bytes
			}
			continue
		}
		if j > last {
			continue
		}
		if start < 0 && (e.buf[j] != a.Buf || e.off[j] != a.Off) {
			start = j
		}
		if start >= 0 {
			e.buf[j], e.off[j], e.byt[j] = a.Buf, a.Off, nil
		}
		if j == last {
			flush(j + 1)
		}
	}
}

// Counts are what an encoding costs: dispatches, barriers, passes, command buffers, and the
// Objective-C messages the bridge sends for it: one per Op, and the two of the autorelease pool
// each Run drains.
type Counts struct {
	Dispatches, Copies, Barriers, Passes, CommandBuffers, Calls int
	ByKind                                                      [numOpKinds]int
}

// Count tallies an encoding.
func Count(ops []Op) Counts {
	var c Counts
	for _, o := range ops {
		c.ByKind[o.Kind]++
	}
	c.Dispatches, c.Copies, c.Barriers = c.ByKind[OpDispatch], c.ByKind[OpCopy], c.ByKind[OpBarrier]
	c.Passes = c.ByKind[OpComputeEncoder] + c.ByKind[OpBlitEncoder]
	c.CommandBuffers, c.Calls = c.ByKind[OpCommandBuffer], len(ops)+poolCalls
	return c
}

// CallsPerDispatchBound is the most messages the encoding spends on one dispatch: a barrier, a
// pipeline, one buffer range, one constant block and the dispatch itself. Plans whose kernels take
// several inline blocks, or whose buffer runs are broken by them, may exceed it.
const CallsPerDispatchBound = 5

// poolCalls are the autorelease pool's new and drain around each Run.
const poolCalls = 2

// PerCommandBuffer is the fixed messages of one command buffer: create, commit, wait, status, and
// its first pass's encoder and endEncoding.
const PerCommandBuffer = 6

// CallBound is the most messages an encoding of d dispatches in cb command buffers may take
// (CallsPerDispatchBound per dispatch, PerCommandBuffer per command buffer, the pool's two).
func CallBound(d, cb int) int { return CallsPerDispatchBound*d + PerCommandBuffer*cb + poolCalls }
