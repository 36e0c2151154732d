package metal

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal/device"
)

// qmat is a quantized matrix on the device: windows of its packed words, bf16 scales and biases.
// Stacked experts keep all experts in one window; the kernels index expert e's rows at e*out.
// Each window starts at the 4-byte floor of its tensor's first byte and ends at the 4-byte ceiling
// of its last; wsh, ssh and bsh are the tensors' starts mod 4 inside them (the kernels' loaders,
// qword and qbf16 in kernels/00_common.metal, take them).
type qmat struct {
	w, s, b        device.Arg
	wsh, ssh, bsh  int
	out, in, bits  int
	name           string
	experts, bytes int
}

// sh is the shifts field of the kernels' dims structs: wsh | ssh<<8 | bsh<<16.
func (m *qmat) sh() int { return m.wsh | m.ssh<<8 | m.bsh<<16 }

// vec is a float32 vector in the engine's vector arena (a pointer: its Buf is set once the arena
// is uploaded).
type vec = *device.Arg

// deviceWeights are the model's tensors as kernel arguments.
type deviceWeights struct {
	embed, lmHead *qmat
	final         vec
	layers        []deviceLayer
}

type deviceLayer struct {
	kind             checkpoint.LayerKind
	inNorm, postNorm vec
	qkv, z, b, a     *qmat // DeltaNet
	out              *qmat
	conv, aLog, dtb  vec
	gnorm            vec
	q, k, v, o       *qmat // attention
	qn, kn           vec
	router, seg      *qmat
	gate, up, down   *qmat // stacked experts
	sg, su, sd       *qmat
}

// span is the memory of one mapped file that the weights use: [start, end) as addresses, widened to
// whole 4-byte words (so that every tensor's window, from the floor of its start to the ceiling of
// its end, lies inside it).
type span struct {
	start, end uintptr
	base       unsafe.Pointer // the address start
	buf        device.Buffer
	off        int // where start sits in buf
}

// quantTensors calls f with every quantized tensor of w.
func quantTensors(w *checkpoint.Weights, f func(t *checkpoint.Tensor)) {
	each(w, func(m *checkpoint.Matrix) {
		f(&m.W)
		f(&m.Scales)
		f(&m.Biases)
	})
}

// WeightBytes says how the quantized weights reached the device: bytes bound in place inside the
// wraps of their mapped files, and bytes copied (only tensors that live in no file, as tests build
// them). Misaligned counts the shards whose data does not start at a multiple of 4 (MLX's
// unpadded headers): they are bound in place too, with per-tensor byte shifts.
type WeightBytes struct {
	Wrapped, Copied    int64
	Shards, Misaligned int
}

// upload binds every quantized tensor and copies the float vectors into one arena. Each mapped file
// is wrapped in place once (zero-copy, whatever the alignment of its data: see qmat), and every
// tensor is a window of that wrap.
func (e *Model) upload(w *checkpoint.Weights) error {
	spans := map[string]*span{}
	var files []string
	misaligned := map[string]bool{}
	quantTensors(w, func(t *checkpoint.Tensor) {
		if t.File == "" || len(t.Data) == 0 {
			return
		}
		p := unsafe.Pointer(unsafe.SliceData(t.Data))
		a := uintptr(p)
		if a%4 != 0 {
			misaligned[t.File] = true
		}
		// lo is a's 4-byte floor, which lies in the same mapping: a tensor's data follows the 8-byte
		// length and the header of its file.
		lo, hi := a&^3, (a+uintptr(len(t.Data))+3)&^3
		sp := spans[t.File]
		if sp == nil {
			sp = &span{start: lo, end: hi, base: unsafe.Add(p, -int(a-lo))}
			spans[t.File] = sp
			files = append(files, t.File)
		}
		if lo < sp.start {
			sp.start, sp.base = lo, unsafe.Add(p, -int(a-lo))
		}
		sp.end = max(sp.end, hi)
	})
	for _, f := range files {
		sp := spans[f]
		// The span may end up to 3 bytes past its last tensor, and so past the end of the file: those
		// bytes are in the file mapping's last page, which the OS maps whole (they read as zero), and
		// the kernels never use them.
		mem := unsafe.Slice((*byte)(sp.base), int(sp.end-sp.start))
		buf, off, err := e.dev.Wrap(mem, true)
		if err != nil {
			return fmt.Errorf("metal: weights of %s: %w", f, err)
		}
		sp.buf, sp.off = buf, off
		e.wbufs = append(e.wbufs, buf)
		e.loaded.Shards++
		e.loaded.Wrapped += int64(len(mem))
		if misaligned[f] {
			e.loaded.Misaligned++
		}
	}
	// tensor is t's window inside its file's buffer (from the 4-byte floor of its start to the ceiling
	// of its end) and its start's shift in it; a tensor of no file is copied.
	tensor := func(t *checkpoint.Tensor) (device.Arg, int, error) {
		if sp := spans[t.File]; t.File != "" && sp != nil {
			off := sp.off + int(uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))-sp.start)
			lo, hi := off&^3, (off+len(t.Data)+3)&^3
			return device.Arg{Buf: sp.buf, Off: lo, Len: hi - lo}, off - lo, nil
		}
		buf, off, err := e.dev.Wrap(t.Data, false)
		if err != nil {
			return device.Arg{}, 0, fmt.Errorf("metal: tensor %s: %w", t.Name, err)
		}
		e.wbufs = append(e.wbufs, buf)
		e.loaded.Copied += int64(len(t.Data))
		return device.Arg{Buf: buf, Off: off, Len: len(t.Data)}, 0, nil
	}
	var err error
	mat := func(m *checkpoint.Matrix) *qmat {
		if err != nil {
			return nil
		}
		q := &qmat{out: m.Out, in: m.In, bits: m.Bits, name: m.Name, experts: m.Experts}
		for _, p := range []struct {
			dst *device.Arg
			sh  *int
			t   *checkpoint.Tensor
		}{{&q.w, &q.wsh, &m.W}, {&q.s, &q.ssh, &m.Scales}, {&q.b, &q.bsh, &m.Biases}} {
			if *p.dst, *p.sh, err = tensor(p.t); err != nil {
				return nil
			}
			q.bytes += len(p.t.Data)
		}
		return q
	}
	var ar arena
	dw := &e.w
	dw.embed, dw.lmHead, dw.final = mat(&w.Embed), mat(&w.LMHead), ar.add(w.FinalNorm)
	for i := range w.Layers {
		wl := &w.Layers[i]
		l := deviceLayer{kind: wl.Kind, inNorm: ar.add(wl.InputNorm), postNorm: ar.add(wl.PostNorm)}
		if g := wl.DeltaNet; g != nil {
			l.qkv, l.z, l.b, l.a, l.out = mat(&g.QKV), mat(&g.Z), mat(&g.B), mat(&g.A), mat(&g.Out)
			l.conv, l.aLog, l.dtb, l.gnorm = ar.add(g.Conv), ar.add(g.ALog), ar.add(g.DtBias), ar.add(g.Norm)
		}
		if a := wl.Attn; a != nil {
			l.q, l.k, l.v, l.o = mat(&a.Q), mat(&a.K), mat(&a.V), mat(&a.O)
			l.qn, l.kn = ar.add(a.QNorm), ar.add(a.KNorm)
		}
		m := &wl.MoE
		l.router, l.seg = mat(&m.Router), mat(&m.SharedEG)
		l.gate, l.up, l.down = mat(&m.Gate), mat(&m.Up), mat(&m.Down)
		l.sg, l.su, l.sd = mat(&m.SharedGate), mat(&m.SharedUp), mat(&m.SharedDown)
		dw.layers = append(dw.layers, l)
	}
	if err != nil {
		return err
	}
	buf, err := e.dev.Alloc(len(ar.data), device.Shared)
	if err != nil {
		return fmt.Errorf("metal: %w", err)
	}
	e.wbufs = append(e.wbufs, buf)
	if err := e.dev.Upload(buf, 0, ar.data); err != nil {
		return fmt.Errorf("metal: %w", err)
	}
	for _, p := range ar.refs {
		p.Buf = buf
	}
	return nil
}

// arena packs float32 vectors into one buffer; the Args it hands out get their Buf once the
// buffer exists.
type arena struct {
	data []byte
	refs []*device.Arg
}

// add appends v (256-byte aligned) and returns its window; its Buf is filled in later.
func (a *arena) add(v []float32) vec {
	for len(a.data)%256 != 0 {
		a.data = append(a.data, 0)
	}
	off := len(a.data)
	for _, x := range v {
		a.data = binary.LittleEndian.AppendUint32(a.data, math.Float32bits(x))
	}
	arg := &device.Arg{Off: off, Len: 4 * len(v)}
	a.refs = append(a.refs, arg)
	return arg
}

// vectors lists the float vectors of w that upload packs into the arena.
func vectors(w *checkpoint.Weights) [][]float32 {
	vs := [][]float32{w.FinalNorm}
	for i := range w.Layers {
		wl := &w.Layers[i]
		vs = append(vs, wl.InputNorm, wl.PostNorm)
		if g := wl.DeltaNet; g != nil {
			vs = append(vs, g.Conv, g.ALog, g.DtBias, g.Norm)
		}
		if a := wl.Attn; a != nil {
			vs = append(vs, a.QNorm, a.KNorm)
		}
	}
	return vs
}
