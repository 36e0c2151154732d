package metal

import (
	"github.com/lily-engine/lily/metal/device"
)

// The MoE block on the device: router, experts (decode mat-vecs, prefill grouped GEMMs) and the
// combine, and its place in the plans.

// routeTokensPerGroup bounds the tokens (one SIMD group each) of a router_softmax_topk
// threadgroup, so a prefill chunk spreads over the GPU's cores.
const routeTokensPerGroup = 8

// RouteTopKRoofline is the fraction of the roofline router_softmax_topk reaches, for the
// performance model: one SIMD group per token over 1 KB of logits and k dependent simd_max /
// simd_min rounds, a latency-bound kernel (as deltanet_conv's decode estimate).
const RouteTopKRoofline = 0.25

// routeTopK: ids, wts [t, k] from logits [t, E]: softmax, top-k, renormalised. One SIMD group per
// token, as many per threadgroup as the pipeline allows (routerLanes), at most routeTokensPerGroup.
func routeTopK(s *sizes, t int, logits, ids, wts device.Arg) *device.Dispatch {
	per := max(1, min(t, s.routerLanes/32, routeTokensPerGroup))
	return &device.Dispatch{Kernel: "router_softmax_topk", Groups: grid(cdiv(t, per), 1, 1), Threads: grid(32*per, 1, 1),
		Args: []device.Arg{logits, ids, wts, inline(PackDims(s.e, s.k, t))}}
}

// moeDims is the MoEDims struct of layer l (act rows are max(I, Is) wide).
func (s *sizes) moeDims(l *deviceLayer, actStride int) []byte {
	return PackDims(s.h, s.inter, s.shared, s.k, l.gate.bits, actStride,
		l.gate.sh(), l.up.sh(), l.sg.sh(), l.su.sh(), l.down.sh(), l.sd.sh())
}

// moeDecode: act [k+1, max(I,Is)] = the k routed experts' and the shared expert's SwiGLU, then
// h [H] += Σ wts·down + sigmoid(sgate)·shared down. ids, wts [k]; sgate [1]; x the block's input,
// whose norm gate/up compute from the residual (moeGateUpNorm). Both on the qmv_fast design: 8
// rows per threadgroup of 64 threads.
func moeDecode(s *sizes, l *deviceLayer, ids, wts, sgate device.Arg, x normIn, act, h device.Arg) []device.Command {
	d := s.moeDims(l, max(s.inter, s.shared))
	return []device.Command{
		moeGateUpNorm(s, l, ids, x, act),
		&device.Dispatch{Kernel: byBits(l.down.bits, "moe_down_4", "moe_down_8"), Groups: grid(cdiv(s.h, qmvRows), 1, 1),
			Threads: grid(qmvThreads, 1, 1),
			Args:    []device.Arg{l.down.w, l.down.s, l.down.b, l.sd.w, l.sd.s, l.sd.b, ids, wts, sgate, act, h, inline(d)}},
	}
}

// moeGroup: counts [E] (reset from zeroes), offsets [E+1], cursor [E], order [n] for n = t*k slots,
// and tiles [E+1], the (expert, 32-slot tile) work list of the tile32 expert GEMMs.
func moeGroup(s *sizes, n int, zeroes device.Buffer, ids, counts, offsets, cursor, order, tiles device.Arg) []device.Command {
	d := inline(PackDims(n, s.e))
	return []device.Command{
		&device.Copy{Src: zeroes, Dst: counts.Buf, DstOff: counts.Off, N: 4 * s.e},
		&device.Dispatch{Kernel: "moe_count", Groups: grid(cdiv(n, 256), 1, 1), Threads: grid(256, 1, 1),
			Args: []device.Arg{ids, counts, d}},
		&device.Dispatch{Kernel: "moe_scan", Groups: grid(1, 1, 1), Threads: grid(lanes(s.e, 1024), 1, 1),
			Args: []device.Arg{counts, offsets, cursor, d}},
		&device.Dispatch{Kernel: "moe_scatter", Groups: grid(cdiv(n, 256), 1, 1), Threads: grid(256, 1, 1),
			Args: []device.Arg{ids, cursor, order, d}},
		&device.Dispatch{Kernel: "moe_tiles", Groups: grid(1, 1, 1), Threads: grid(lanes(s.e, 1024), 1, 1),
			Args: []device.Arg{offsets, tiles, d}},
	}
}

// moeTileBound bounds the tile32 work list of n slots over E experts: Σ_e cdiv(c_e, 32) ≤
// n/32 + (experts with slots) ≤ cdiv(n, 32) + min(E, n). The expert GEMMs' grids are sized by it
// and the threadgroups past the list's real length (tiles[E], on the GPU) return at once.
func moeTileBound(n, e int) int { return cdiv(n, gemmTile) + min(e, n) }

// moeGemm: act [t*k, I] = SwiGLU of each slot's expert, out [t*k, H] = down of it, over the
// tile32 work list (expert, 32-slot tile) of the grouped slots. x [t, H].
func moeGemm(s *sizes, l *deviceLayer, t int, x, order, offsets, tiles, act, out device.Arg) []device.Command {
	d := inline(PackDims(s.k, s.h, s.inter, l.gate.bits, s.e, l.gate.sh(), l.up.sh(), l.down.sh()))
	y := moeTileBound(t*s.k, s.e)
	return []device.Command{
		&device.Dispatch{Kernel: "moe_gemm_t32_gate_up", Groups: grid(cdiv(s.inter, gemmTile), y, 1), Threads: grid(gemmThreads, 1, 1),
			Args: []device.Arg{l.gate.w, l.gate.s, l.gate.b, l.up.w, l.up.s, l.up.b, x, order, offsets, tiles, act, d}},
		&device.Dispatch{Kernel: "moe_gemm_t32_down", Groups: grid(cdiv(s.h, gemmTile), y, 1), Threads: grid(gemmThreads, 1, 1),
			Args: []device.Arg{l.down.w, l.down.s, l.down.b, act, order, offsets, tiles, out, d}},
	}
}

// swiglu: g [n] = silu(g) · u.
func swiglu(n int, g, u device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "swiglu", Groups: grid(cdiv(n, 256), 1, 1), Threads: grid(256, 1, 1),
		Args: []device.Arg{g, u, inline(PackDims(n))}}
}

// moeCombine: y [t, H] += Σ_j wts·out[t*k+j] + sigmoid(sgate[t])·shared[t].
func moeCombine(s *sizes, l *deviceLayer, t int, out, wts, sgate, shared, y device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "moe_combine", Groups: grid(cdiv(s.h, 256), t, 1), Threads: grid(256, 1, 1),
		Args: []device.Arg{out, wts, sgate, shared, y, inline(s.moeDims(l, max(s.inter, s.shared)))}}
}

// moePlan is layer i's MoE block for step p on in (the post-attention norm of h), added to
// the residual h [t, H]: the router's logits and shared gate (decode: one router_qmv_norm; prefill: two
// GEMMs) and their top-k, then in decode the k experts' and the shared expert's
// mat-vecs with the ids left on the GPU; in prefill the t·k slots grouped by expert on the GPU
// (moe_count/scan/scatter), grouped GEMMs, the shared expert as GEMMs, and moe_combine.
func (s *Session) moePlan(p step, i int, in normIn, h device.Arg) []device.Command {
	e, sz, sc, l := s.e, &s.e.sizes, s.sc, &s.e.w.layers[i]
	t := p.t
	ids, wts, sg, rl := sc.ids.first(t), sc.wts.first(t), sc.sgate.first(t), sc.rlogits.first(t)
	a := in.a
	var cmds []device.Command
	if p.decode {
		cmds = append(cmds, routerQMVNorm(sz, l, t, in, rl, sg))
	} else {
		cmds = append(cmds, qmm(l.router, t, a, rl, false), qmm(l.seg, t, a, sg, false))
	}
	cmds = append(cmds, routeTopK(sz, t, rl, ids, wts))
	if p.decode {
		stride := max(sz.inter, sz.shared)
		act := device.Arg{Buf: sc.act.buf, Off: sc.act.off, Len: 4 * (sz.k + 1) * stride}
		return append(cmds, moeDecode(sz, l, ids, wts, sg, in, act, h)...)
	}
	cmds = append(cmds, moeGroup(sz, t*sz.k, e.zeroes, ids, sc.counts.first(1), sc.offsets.first(1),
		sc.cursor.first(1), sc.order.first(t), sc.tiles.first(1))...)
	out := sc.out.first(t * sz.k)
	act := device.Arg{Buf: sc.act.buf, Off: sc.act.off, Len: 4 * t * sz.k * sz.inter}
	cmds = append(cmds, moeGemm(sz, l, t, a, sc.order.first(t), sc.offsets.first(1), sc.tiles.first(1), act, out)...)
	sact, su, shared := sc.sact.first(t), sc.su.first(t), sc.shared.first(t)
	return append(cmds, qmm(l.sg, t, a, sact, false), qmm(l.su, t, a, su, false), swiglu(t*sz.shared, sact, su),
		qmm(l.sd, t, sact, shared, false), moeCombine(sz, l, t, out, wts, sg, shared, h))
}
