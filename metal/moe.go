package metal

import (
	"github.com/lily-engine/lily/metal/device"
)

// The MoE block on the device: router, experts (decode mat-vecs, prefill grouped GEMMs) and the
// combine, and its place in the plans.

// routerTopK: for t tokens x [t, H], ids, wts [t, k] and the shared expert gate logit sgate [t].
func routerTopK(s *sizes, l *deviceLayer, t int, x, ids, wts, sgate device.Arg) *device.Dispatch {
	r := l.router
	return &device.Dispatch{Kernel: "router_topk", Groups: grid(t, 1, 1), Threads: grid(lanes(32*(s.e+1), s.routerLanes), 1, 1),
		Args: []device.Arg{r.w, r.s, r.b, l.seg.w, l.seg.s, l.seg.b, x, ids, wts, sgate, inline(dims(s.e, s.h, s.k, r.bits, r.sh(), l.seg.sh()))}}
}

// moeDims is the MoEDims struct of layer l (act rows are max(I, Is) wide).
func (s *sizes) moeDims(l *deviceLayer, actStride int) []byte {
	return dims(s.h, s.inter, s.shared, s.k, l.gate.bits, actStride,
		l.gate.sh(), l.up.sh(), l.sg.sh(), l.su.sh(), l.down.sh(), l.sd.sh())
}

// moeDecode: act [k+1, max(I,Is)] = the k routed experts' and the shared expert's SwiGLU, then
// h [H] += Σ wts·down + sigmoid(sgate)·shared down. ids, wts [k]; sgate [1]; x [H].
func moeDecode(s *sizes, l *deviceLayer, ids, wts, sgate, x, act, h device.Arg) []device.Command {
	st := max(s.inter, s.shared)
	d := s.moeDims(l, st)
	return []device.Command{
		&device.Dispatch{Kernel: "moe_gate_up", Groups: grid(cdiv(st, 8), s.k+1, 1), Threads: grid(256, 1, 1),
			Args: []device.Arg{l.gate.w, l.gate.s, l.gate.b, l.up.w, l.up.s, l.up.b, l.sg.w, l.sg.s, l.sg.b,
				l.su.w, l.su.s, l.su.b, ids, x, act, inline(d)}},
		&device.Dispatch{Kernel: "moe_down", Groups: grid(cdiv(s.h, 8), 1, 1), Threads: grid(256, 1, 1),
			Args: []device.Arg{l.down.w, l.down.s, l.down.b, l.sd.w, l.sd.s, l.sd.b, ids, wts, sgate, act, h, inline(d)}},
	}
}

// moeGroup: counts [E] (reset from zeroes), offsets [E+1], cursor [E], order [n] for n = t*k slots.
func moeGroup(s *sizes, n int, zeroes device.Buffer, ids, counts, offsets, cursor, order device.Arg) []device.Command {
	d := inline(dims(n, s.e))
	return []device.Command{
		&device.Copy{Src: zeroes, Dst: counts.Buf, DstOff: counts.Off, N: 4 * s.e},
		&device.Dispatch{Kernel: "moe_count", Groups: grid(cdiv(n, 256), 1, 1), Threads: grid(256, 1, 1),
			Args: []device.Arg{ids, counts, d}},
		&device.Dispatch{Kernel: "moe_scan", Groups: grid(1, 1, 1), Threads: grid(lanes(s.e, 1024), 1, 1),
			Args: []device.Arg{counts, offsets, cursor, d}},
		&device.Dispatch{Kernel: "moe_scatter", Groups: grid(cdiv(n, 256), 1, 1), Threads: grid(256, 1, 1),
			Args: []device.Arg{ids, cursor, order, d}},
	}
}

// moeGemm: act [t*k, I] = SwiGLU of each slot's expert, out [t*k, H] = down of it, expert by expert
// over the grouped slots. x [t, H].
func moeGemm(s *sizes, l *deviceLayer, t int, x, order, offsets, act, out device.Arg) []device.Command {
	d := inline(dims(t, s.k, s.h, s.inter, l.gate.bits, l.gate.sh(), l.up.sh(), l.down.sh()))
	return []device.Command{
		&device.Dispatch{Kernel: "moe_gemm_gate_up", Groups: grid(cdiv(s.inter, 8), cdiv(t, 8), s.e), Threads: grid(32, 1, 1),
			Args: []device.Arg{l.gate.w, l.gate.s, l.gate.b, l.up.w, l.up.s, l.up.b, x, order, offsets, act, d}},
		&device.Dispatch{Kernel: "moe_gemm_down", Groups: grid(cdiv(s.h, 8), cdiv(t, 8), s.e), Threads: grid(32, 1, 1),
			Args: []device.Arg{l.down.w, l.down.s, l.down.b, act, order, offsets, out, d}},
	}
}

// swiglu: g [n] = silu(g) · u.
func swiglu(n int, g, u device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "swiglu", Groups: grid(cdiv(n, 256), 1, 1), Threads: grid(256, 1, 1),
		Args: []device.Arg{g, u, inline(dims(n))}}
}

// moeCombine: y [t, H] += Σ_j wts·out[t*k+j] + sigmoid(sgate[t])·shared[t].
func moeCombine(s *sizes, l *deviceLayer, t int, out, wts, sgate, shared, y device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "moe_combine", Groups: grid(cdiv(s.h, 256), t, 1), Threads: grid(256, 1, 1),
		Args: []device.Arg{out, wts, sgate, shared, y, inline(s.moeDims(l, max(s.inter, s.shared)))}}
}

// moePlan is layer i's MoE block for step p on a [t, H] (the post-attention norm of h), added to
// the residual h [t, H]: the router's top-k, then in decode the k experts' and the shared expert's
// mat-vecs with the ids left on the GPU; in prefill the t·k slots grouped by expert on the GPU
// (moe_count/scan/scatter), grouped GEMMs, the shared expert as GEMMs, and moe_combine.
func (s *Session) moePlan(p step, i int, a, h device.Arg) []device.Command {
	e, sz, sc, l := s.e, &s.e.sizes, s.sc, &s.e.w.layers[i]
	t := p.t
	ids, wts, sg := sc.ids.first(t), sc.wts.first(t), sc.sgate.first(t)
	cmds := []device.Command{routerTopK(sz, l, t, a, ids, wts, sg)}
	if p.decode {
		stride := max(sz.inter, sz.shared)
		act := device.Arg{Buf: sc.act.buf, Off: sc.act.off, Len: 4 * (sz.k + 1) * stride}
		return append(cmds, moeDecode(sz, l, ids, wts, sg, a, act, h)...)
	}
	cmds = append(cmds, moeGroup(sz, t*sz.k, e.zeroes, ids, sc.counts.first(1), sc.offsets.first(1),
		sc.cursor.first(1), sc.order.first(t))...)
	out := sc.out.first(t * sz.k)
	act := device.Arg{Buf: sc.act.buf, Off: sc.act.off, Len: 4 * t * sz.k * sz.inter}
	cmds = append(cmds, moeGemm(sz, l, t, a, sc.order.first(t), sc.offsets.first(1), act, out)...)
	sact, su, shared := sc.sact.first(t), sc.su.first(t), sc.shared.first(t)
	return append(cmds, qmm(l.sg, t, a, sact, false), qmm(l.su, t, a, su, false), swiglu(t*sz.shared, sact, su),
		qmm(l.sd, t, sact, shared, false), moeCombine(sz, l, t, out, wts, sg, shared, h))
}
