package metal

import (
	"github.com/lily-engine/lily/metal/device"
)

// The decode RMSNorms fused into their consumers (kernels/qmv_fast_norm.metal): each mat-vec that
// reads a normed vector recomputes the norm of the residual from the residual itself, so a decode
// layer has no rms_norm dispatch, and no dependent step, between the residual add and the next
// mat-vecs. Prefill keeps rms_norm (its GEMMs read the normed rows many times over). An observed
// decode (trace.go) runs the same fused plan plus an rms_norm before each block whose output only
// the observer reads, so observed and plain logits agree bit for bit; an observer's change to a
// norm row therefore does not reach the decode's fused consumers.

// normIn is the input of a mixer or MoE block: the residual h [t, H] and the norm weight w. fused
// (decode): the consumers norm h themselves (qmv_fast_norm); else the plan has written norm(h)
// into a [t, H] with rms_norm and the consumers read a.
type normIn struct {
	h, a  device.Arg
	w     vec
	eps   float32
	fused bool
}

// qmvNorm: y [out] = W · (h / rms(h) ⊙ w), h [in] the residual. Grid and threadgroup as qmv.
func qmvNorm(m *qmat, h device.Arg, w vec, y device.Arg, eps float32) *device.Dispatch {
	return &device.Dispatch{Kernel: byBits(m.bits, "qmv_norm_4", "qmv_norm_8"), Groups: grid(cdiv(m.out, qmvRows), 1, 1),
		Threads: grid(qmvThreads, 1, 1),
		Args:    []device.Arg{m.w, m.s, m.b, h, *w, y, inline(PackDims(m.out, m.in, m.sh(), eps))}}
}

// linearIn is the step's linear Y = norm(H) · Wᵀ from a block's input: the fused mat-vec when in is
// fused (decode only), else p.linear over the normed rows.
func (p step) linearIn(m *qmat, in normIn, y device.Arg) device.Command {
	if in.fused {
		return qmvNorm(m, in.h, in.w, y, in.eps)
	}
	return p.linear(m, in.a, y, false)
}

// routerQMVNorm: for t tokens, logits [t, E] = router · norm(h) and the shared expert gate logit
// sgate [t], one qmv_fast mat-vec over E+1 rows (row E is the gate) per token; h [t, H] the residual.
func routerQMVNorm(s *sizes, l *deviceLayer, t int, in normIn, logits, sgate device.Arg) *device.Dispatch {
	r, g := l.router, l.seg
	return &device.Dispatch{Kernel: byBits(r.bits, "router_qmv_norm_4", "router_qmv_norm_8"), Groups: grid(cdiv(s.e+1, qmvRows), t, 1),
		Threads: grid(qmvThreads, 1, 1),
		Args:    []device.Arg{r.w, r.s, r.b, g.w, g.s, g.b, in.h, *in.w, logits, sgate, inline(PackDims(s.e, s.h, r.sh(), g.sh(), in.eps))}}
}

// moeGateUpNorm: act [k+1, max(I, Is)] = the k routed experts' (ids [k]) and the shared expert's
// SwiGLU of norm(h), h [H] the residual. Grid (ceil(max(I, Is)/8), k+1) threadgroups of 64.
func moeGateUpNorm(s *sizes, l *deviceLayer, ids device.Arg, in normIn, act device.Arg) *device.Dispatch {
	st := max(s.inter, s.shared)
	return &device.Dispatch{Kernel: byBits(l.gate.bits, "moe_gate_up_norm_4", "moe_gate_up_norm_8"),
		Groups: grid(cdiv(st, qmvRows), s.k+1, 1), Threads: grid(qmvThreads, 1, 1),
		Args: []device.Arg{l.gate.w, l.gate.s, l.gate.b, l.up.w, l.up.s, l.up.b, l.sg.w, l.sg.s, l.sg.b,
			l.su.w, l.su.s, l.su.b, ids, in.h, *in.w, act, inline(s.moeDims(l, st)), inline(PackDims(s.h, in.eps))}}
}

// QMVNormRoofline is the fraction of the memory roofline the fused-norm mat-vecs (qmv_norm_*,
// router_qmv_norm_*, moe_gate_up_norm_*) reach, for the performance model: the qmv_fast loop
// (QMVRoofline gives its public measurement) with one more 4-byte load (the norm weight) and one
// FMA (Σx²) per 16 or 8 weights; x and nw hit the cache after the first threadgroups, so the
// weight stream stays the bound and the fraction is QMVRoofline's.
const QMVNormRoofline = QMVRoofline
