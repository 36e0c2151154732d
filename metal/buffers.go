package metal

import (
	"fmt"

	"github.com/lily-engine/lily/internal/checkpoint"
	"github.com/lily-engine/lily/metal/device"
)

// rows is a [n, width] region of 4-byte elements (float32 or int32) inside a buffer.
type rows struct {
	buf      device.Buffer
	off      int
	width, n int
}

// first is the window of rows [0, t).
func (r rows) first(t int) device.Arg {
	return device.Arg{Buf: r.buf, Off: r.off, Len: 4 * t * r.width}
}

// row is the window of row i.
func (r rows) row(i int) device.Arg {
	return device.Arg{Buf: r.buf, Off: r.off + 4*i*r.width, Len: 4 * r.width}
}

// layout hands out 256-byte aligned regions of one buffer before it is allocated.
type layout struct {
	n    int
	regs []*rows
}

func (l *layout) take(width, n int) *rows {
	r := &rows{off: l.n, width: width, n: n}
	l.n += (4*width*n + 255) &^ 255
	l.regs = append(l.regs, r)
	return r
}

// alloc allocates the buffer and points every region at it.
func (l *layout) alloc(dev device.Device, s device.Storage) (device.Buffer, error) {
	b, err := dev.Alloc(max(l.n, 256), s)
	if err != nil {
		return nil, err
	}
	for _, r := range l.regs {
		r.buf = b
	}
	return b, nil
}

// scratch is one session's activations for a chunk of up to t tokens (decode uses row 0).
type scratch struct {
	h, a, qkv, z, bb, aa, y            *rows
	q2, kk, vv, qh, gate, ao, part     *rows
	ids, wts, sgate, rlogits           *rows // router: [t, k], [t, k], [t], [t, E]
	counts, offsets, cursor, order     *rows // expert grouping
	tiles                              *rows // [E+1]: the tile32 expert GEMMs' work list
	act, out, sact, su, shared         *rows // MoE
	tpids, tpvals, tpstat              *rows // logits top-k parts: [parts, k], [parts, k], [parts, 2]
	tokIDs, cs, logits, top, topv, lse *rows // device.Shared: per-call inputs and readback
}

// newScratch allocates the chunk activations (private) and the inputs/readback (shared).
func (e *Model) newScratch() (*scratch, []device.Buffer, error) {
	sc, p, io := e.scratchLayout()
	pb, err := p.alloc(e.dev, device.Private)
	if err != nil {
		return nil, nil, fmt.Errorf("metal: activations: %w", err)
	}
	ib, err := io.alloc(e.dev, device.Shared)
	if err != nil {
		e.dev.Free(pb)
		return nil, nil, fmt.Errorf("metal: io buffers: %w", err)
	}
	return sc, []device.Buffer{pb, ib}, nil
}

// scratchLayout lays out the chunk activations (p) and the inputs/readback (io) without
// allocating them.
func (e *Model) scratchLayout() (sc *scratch, p, io *layout) {
	s, t := &e.sizes, e.chunk
	p, io = &layout{}, &layout{}
	sc = &scratch{}
	sc.h, sc.a = p.take(s.h, t), p.take(s.h, t)
	sc.qkv, sc.z, sc.y = p.take(s.c, t), p.take(s.hv*s.dv, t), p.take(s.hv*s.dv, t)
	sc.bb, sc.aa = p.take(s.hv, t), p.take(s.hv, t)
	sc.q2, sc.kk, sc.vv = p.take(2*s.hq*s.d, t), p.take(s.hkv*s.d, t), p.take(s.hkv*s.d, t)
	sc.qh, sc.gate, sc.ao = p.take(s.hq*s.d, t), p.take(s.hq*s.d, t), p.take(s.hq*s.d, t)
	sc.part = p.take(s.hq*(s.d+2), decodeMaxSplits(e.maxCtx, s.hkv))
	sc.ids, sc.wts, sc.sgate, sc.rlogits = p.take(s.k, t), p.take(s.k, t), p.take(1, t), p.take(s.e, t)
	sc.counts, sc.offsets, sc.cursor, sc.order = p.take(s.e, 1), p.take(s.e+1, 1), p.take(s.e, 1), p.take(s.k, t)
	sc.tiles = p.take(s.e+1, 1)
	st := max(s.inter, s.shared)
	sc.act = p.take(1, max((s.k+1)*st, t*s.k*s.inter))
	sc.out = p.take(s.h, t*s.k)
	sc.sact, sc.su, sc.shared = p.take(s.shared, t), p.take(s.shared, t), p.take(s.h, t)
	parts := s.logitParts()
	sc.tpids, sc.tpvals, sc.tpstat = p.take(e.topK, parts), p.take(e.topK, parts), p.take(2, parts)
	sc.tokIDs, sc.cs = io.take(1, t), io.take(max(s.rot, 1), t)
	sc.logits, sc.top, sc.topv, sc.lse = io.take(s.v, 1), io.take(e.topK, 1), io.take(e.topK, 1), io.take(1, 1)
	return sc, p, io
}

// state is one sequence's recurrent memory: conv and DeltaNet state of every DeltaNet layer in one
// buffer, and a KV cache per attention layer allocated once to the engine's context limit (so a
// session never grows, copies or reallocates it, and what it holds was checked against the
// device's working set before loading).
type state struct {
	rec    device.Buffer
	conv   []*rows // per layer (DeltaNet only): [K-1, C]
	ssm    []*rows // per layer (DeltaNet only): [Hv, Dk*Dv]
	k, v   []device.Buffer
	kvRow  int // bytes per cached token per layer (Hkv*D fp16)
	layers []checkpoint.LayerKind
}

// kvElem is the size of one cached key or value element: IEEE half (kv_t in attn.metal).
const kvElem = 2

func (e *Model) newState() (*state, error) {
	s := &e.sizes
	st := &state{kvRow: kvElem * s.hkv * s.d}
	var l layout
	for _, dl := range e.w.layers {
		st.layers = append(st.layers, dl.kind)
		var c, m *rows
		if dl.kind == checkpoint.LinearAttention {
			c, m = l.take(s.c, s.conv-1), l.take(s.dk*s.dv, s.hv)
		}
		st.conv, st.ssm = append(st.conv, c), append(st.ssm, m)
	}
	b, err := l.alloc(e.dev, device.Private)
	if err != nil {
		return nil, fmt.Errorf("metal: recurrent state: %w", err)
	}
	st.rec = b
	st.k, st.v = make([]device.Buffer, len(st.layers)), make([]device.Buffer, len(st.layers))
	for i, kind := range st.layers {
		if kind != checkpoint.FullAttention {
			continue
		}
		for _, p := range []*device.Buffer{&st.k[i], &st.v[i]} {
			if *p, err = e.dev.Alloc(e.maxCtx*st.kvRow, device.Private); err != nil {
				st.free(e.dev)
				return nil, fmt.Errorf("metal: KV cache of %d tokens: %w", e.maxCtx, err)
			}
		}
	}
	return st, nil
}

// kv is the window of layer i's keys or values for tokens [0, n).
func (st *state) kv(b device.Buffer, n int) device.Arg {
	return device.Arg{Buf: b, Off: 0, Len: n * st.kvRow}
}

func (st *state) free(dev device.Device) {
	if st.rec != nil {
		dev.Free(st.rec)
	}
	for i := range st.k {
		if st.k[i] != nil {
			dev.Free(st.k[i])
		}
		if st.v[i] != nil {
			dev.Free(st.v[i])
		}
	}
	st.rec, st.k, st.v = nil, nil, nil
}
