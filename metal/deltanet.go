package metal

import (
	"github.com/lily-engine/lily/metal/device"
)

// The DeltaNet mixer on the device: its kernel's host side and its place in the decode and prefill plans.

// deltanetDims is the DeltaNetDims struct for t tokens.
func (s *sizes) deltanetDims(t int) []byte {
	return dims(s.hk, s.hv, s.dk, s.dv, s.conv, s.c, t, float32(1e-6), s.eps)
}

// deltanetScan: the fused DeltaNet mixer over t tokens. qkv [t, C], z [t, Hv*Dv], a, b [t, Hv];
// cst [K-1, C] and state [Hv, Dk, Dv] are updated; y [t, Hv*Dv]. One threadgroup of 128 per key head.
func deltanetScan(s *sizes, l *deviceLayer, t int, qkv, z, a, b, cst, state, y device.Arg) *device.Dispatch {
	w := max(s.dk, s.dv, s.hv/s.hk*s.dv)
	return &device.Dispatch{Kernel: "deltanet_scan", Groups: grid(s.hk, 1, 1), Threads: grid(lanes(w, 128), 1, 1),
		Args: []device.Arg{qkv, z, a, b, *l.conv, cst, *l.aLog, *l.dtb, *l.gnorm, state, y, inline(s.deltanetDims(t))}}
}

// deltanetPlan is layer i's DeltaNet mixer for step p: a [t, H] (normed input) → in_proj_qkv, z, b,
// a → the fused conv + delta rule + gated norm over the t tokens (its conv and recurrent state
// carried in the session) → out_proj added to the residual h [t, H].
func (s *Session) deltanetPlan(p step, i int, a, h device.Arg) []device.Command {
	sz, sc, st, l := &s.e.sizes, s.sc, s.st, &s.e.w.layers[i]
	qkv, z, y := sc.qkv.first(p.t), sc.z.first(p.t), sc.y.first(p.t)
	bb, aa := sc.bb.first(p.t), sc.aa.first(p.t)
	return []device.Command{p.linear(l.qkv, a, qkv, false), p.linear(l.z, a, z, false), p.linear(l.b, a, bb, false),
		p.linear(l.a, a, aa, false),
		deltanetScan(sz, l, p.t, qkv, z, aa, bb, st.conv[i].first(st.conv[i].n), st.ssm[i].first(sz.hv), y),
		p.linear(l.out, y, h, true)}
}
