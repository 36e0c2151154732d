package metal

import (
	"github.com/lily-engine/lily/metal/device"
)

// The DeltaNet mixer on the device: its kernels' host side and its place in the decode and prefill plans.

// deltanetDims is the DeltaNetDims struct for t tokens.
func (s *sizes) deltanetDims(t int) []byte {
	return PackDims(s.hk, s.hv, s.dk, s.dv, s.conv, s.c, t, float32(1e-6), s.eps)
}

// Expected fraction of the roofline (max of bytes/bandwidth, FLOPs/peak) each DeltaNet kernel
// reaches, for the performance model (metal/perfmodel).
const (
	// deltanetConvRoofline: one thread per channel streams its T inputs and outputs once, coalesced
	// across channels; at decode (T = 1) it is 8,192 threads and ~100 KB, so launch latency, not
	// bandwidth, dominates: a quarter of the roofline.
	deltanetConvRoofline = 0.25
	// deltanetScanRoofline: the state is read and written once per dispatch from registers, but each
	// token is a chain of dependent simd_sums (two per column) and one threadgroup barrier, with Hv
	// threadgroups of 512 threads: latency-bound at decode (as MLX's gated_delta kernel), so about a
	// third of the bandwidth roofline; in prefill the per-token chain is the limit.
	deltanetScanRoofline = 0.3
)

// deltanetConv: the causal conv + SiLU of t tokens in place (qkv [t, C] pre-conv → conv output)
// and the conv state cst [K-1, C]. One thread per channel.
func deltanetConv(s *sizes, l *deviceLayer, t int, qkv, cst device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "deltanet_conv", Groups: grid(cdiv(s.c, 256), 1, 1), Threads: grid(256, 1, 1),
		Args: []device.Arg{qkv, *l.conv, cst, inline(s.deltanetDims(t))}}
}

// deltanetScan: norms, gates, delta rule and gated norm over t tokens. xc [t, C] (conv output),
// z [t, Hv*Dv], a, b [t, Hv]; state [Hv, Dk, Dv] is updated; y [t, Hv*Dv]. One threadgroup per value
// head, one SIMD group per 8 value columns.
func deltanetScan(s *sizes, l *deviceLayer, t int, xc, z, a, b, state, y device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "deltanet_scan", Groups: grid(s.hv, 1, 1), Threads: grid(32*cdiv(s.dv, 8), 1, 1),
		Args: []device.Arg{xc, z, a, b, *l.aLog, *l.dtb, *l.gnorm, state, y, inline(s.deltanetDims(t))}}
}

// deltanetPlan is layer i's DeltaNet mixer for step p: in (the normed input) → in_proj_qkv, z, b,
// a → the conv (in place, its state carried in the session) → the delta rule + gated norm over the
// t tokens (its recurrent state carried in the session) → out_proj added to the residual h [t, H].
func (s *Session) deltanetPlan(p step, i int, a normIn, h device.Arg) []device.Command {
	sz, sc, st, l := &s.e.sizes, s.sc, s.st, &s.e.w.layers[i]
	qkv, z, y := sc.qkv.first(p.t), sc.z.first(p.t), sc.y.first(p.t)
	bb, aa := sc.bb.first(p.t), sc.aa.first(p.t)
	return []device.Command{p.linearIn(l.qkv, a, qkv), p.linearIn(l.z, a, z), p.linearIn(l.b, a, bb),
		p.linearIn(l.a, a, aa),
		deltanetConv(sz, l, p.t, qkv, st.conv[i].first(st.conv[i].n)),
		deltanetScan(sz, l, p.t, qkv, z, aa, bb, st.ssm[i].first(sz.hv), y),
		p.linear(l.out, y, h, true)}
}
