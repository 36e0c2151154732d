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
type qmat struct {
	w, s, b        device.Arg
	out, in, bits  int
	name           string
	experts, bytes int
}

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

// span is the memory of one mapped file that the weights use: [start, end) as addresses.
type span struct {
	start, end uintptr
	first      []byte // the tensor that starts at start
	buf        device.Buffer
	off        int  // where start sits in buf
	copied     bool // buf is one copy of the span (its tensors are misaligned in the file)
}

// quantTensors calls f with every quantized tensor of w and the alignment its kernels load it at
// (packed words 4 bytes, bf16 scales and biases 2).
func quantTensors(w *checkpoint.Weights, f func(t *checkpoint.Tensor, align uintptr)) {
	each(w, func(m *checkpoint.Matrix) {
		f(&m.W, 4)
		f(&m.Scales, 2)
		f(&m.Biases, 2)
	})
}

// WeightBytes says how the quantized weights reached the device: bytes bound in place inside the
// wraps of their mapped files, and bytes copied (a shard whose data start is misaligned, as MLX's
// unpadded headers leave it, is copied once, whole, and never also wrapped).
type WeightBytes struct {
	Wrapped, Copied    int64
	Shards, Misaligned int
}

// upload binds every quantized tensor (one buffer per mapped file: the file mapping wrapped in
// place where the kernels' loads are aligned in it, else one copy of the file's span) and copies
// the float vectors into one arena.
func (e *Model) upload(w *checkpoint.Weights) error {
	spans := map[string]*span{}
	var files []string
	misaligned := map[string]bool{}
	quantTensors(w, func(t *checkpoint.Tensor, align uintptr) {
		if t.File == "" || len(t.Data) == 0 {
			return
		}
		a := uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))
		if a%align != 0 {
			misaligned[t.File] = true
		}
		sp := spans[t.File]
		if sp == nil {
			sp = &span{start: a, end: a + uintptr(len(t.Data)), first: t.Data}
			spans[t.File] = sp
			files = append(files, t.File)
		}
		if a < sp.start {
			sp.start, sp.first = a, t.Data
		}
		sp.end = max(sp.end, a+uintptr(len(t.Data)))
	})
	for _, f := range files {
		sp := spans[f]
		mem := unsafe.Slice(unsafe.SliceData(sp.first), int(sp.end-sp.start))
		// A misaligned file is copied: the copy starts at a buffer's aligned base, so every tensor whose
		// offset from the span's start is a multiple of its alignment (all of them in an MLX shard,
		// whose tensors are whole words) is aligned in it.
		sp.copied = misaligned[f]
		buf, off, err := e.dev.Wrap(mem, !sp.copied)
		if err != nil {
			return fmt.Errorf("metal: weights of %s: %w", f, err)
		}
		sp.buf, sp.off = buf, off
		e.wbufs = append(e.wbufs, buf)
		e.loaded.Shards++
		if sp.copied {
			e.loaded.Misaligned++
			e.loaded.Copied += int64(len(mem))
		} else {
			e.loaded.Wrapped += int64(len(mem))
		}
	}
	// tensor is t's window inside its file's buffer when its offset there suits the kernels' loads,
	// else a copy of its own (a tensor that is misaligned even relative to its file's first tensor).
	tensor := func(t *checkpoint.Tensor, align uintptr) (device.Arg, error) {
		if sp := spans[t.File]; t.File != "" && sp != nil {
			off := sp.off + int(uintptr(unsafe.Pointer(unsafe.SliceData(t.Data)))-sp.start)
			if uintptr(off)%align == 0 {
				return device.Arg{Buf: sp.buf, Off: off, Len: len(t.Data)}, nil
			}
		}
		buf, off, err := e.dev.Wrap(t.Data, false)
		if err != nil {
			return device.Arg{}, fmt.Errorf("metal: tensor %s: %w", t.Name, err)
		}
		e.wbufs = append(e.wbufs, buf)
		e.loaded.Copied += int64(len(t.Data))
		return device.Arg{Buf: buf, Off: off, Len: len(t.Data)}, nil
	}
	var err error
	mat := func(m *checkpoint.Matrix) *qmat {
		if err != nil {
			return nil
		}
		q := &qmat{out: m.Out, in: m.In, bits: m.Bits, name: m.Name, experts: m.Experts}
		for _, p := range []struct {
			dst   *device.Arg
			t     *checkpoint.Tensor
			align uintptr
		}{{&q.w, &m.W, 4}, {&q.s, &m.Scales, 2}, {&q.b, &m.Biases, 2}} {
			if *p.dst, err = tensor(p.t, p.align); err != nil {
				return nil
			}
			q.bytes += p.dst.Len
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
