package metal

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lily-engine/lily/metal/device"
)

// The host side of each kernel: its grid and its buffer order, written down once, matching the
// header comment of the kernel in kernels/*.metal. Activation arguments are windows of float32
// (int32 for ids) rows; shapes are in the comments as [rows, cols].

func cdiv(a, b int) int { return (a + b - 1) / b }

func inline(b []byte) device.Arg { return device.Arg{Bytes: b} }

func grid(x, y, z int) [3]int { return [3]int{x, y, z} }

// lanes is the threadgroup size of a kernel whose threads stride over n items (or one SIMD group
// per item): n rounded up to whole SIMD groups, at most limit. Small models then do not pay for
// idle SIMD groups; the real model's widths reach the limit the kernel headers give.
func lanes(n, limit int) int { return min(max(cdiv(n, 32), 1)*32, limit) }

// qmv: y [out] = W x [in] (add: y += W x). One SIMD group per row, 8 rows per threadgroup.
func qmv(m *qmat, x, y device.Arg, add bool) *device.Dispatch {
	k := "qmv"
	if add {
		k = "qmv_add"
	}
	return &device.Dispatch{Kernel: k, Groups: grid(cdiv(m.out, 8), 1, 1), Threads: grid(256, 1, 1),
		Args: []device.Arg{m.w, m.s, m.b, x, y, inline(dims(m.out, m.in, m.bits))}}
}

// qmm: Y [t, out] = X [t, in] · Wᵀ (add: Y +=). One SIMD group per 8×8 output tile.
func qmm(m *qmat, t int, x, y device.Arg, add bool) *device.Dispatch {
	a := 0
	if add {
		a = 1
	}
	return &device.Dispatch{Kernel: "qmm", Groups: grid(cdiv(m.out, 8), cdiv(t, 8), 1), Threads: grid(32, 1, 1),
		Args: []device.Arg{m.w, m.s, m.b, x, y, inline(dims(t, m.out, m.in, m.bits, a))}}
}

// embed: out [t, H] = rows ids [t] of the quantized table.
func embedRows(m *qmat, t int, ids, out device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "embed", Groups: grid(cdiv(m.in, 256), t, 1), Threads: grid(256, 1, 1),
		Args: []device.Arg{m.w, m.s, m.b, ids, out, inline(dims(m.out, m.in, m.bits))}}
}

// rmsNorm: y [t, n] = x / rms(x) · w, one threadgroup of 256 per row.
func rmsNorm(t, n int, x device.Arg, w vec, y device.Arg, eps float32) *device.Dispatch {
	return &device.Dispatch{Kernel: "rms_norm", Groups: grid(t, 1, 1), Threads: grid(lanes(n, 256), 1, 1),
		Args: []device.Arg{x, *w, y, inline(dims(n, eps))}}
}

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

// attnDims is the AttnDims struct: t new tokens at pos0, n visible keys, split keys per split.
func (s *sizes) attnDims(pos0, t, n, split int) []byte {
	return dims(s.hq, s.hkv, s.d, s.rot, pos0, t, n, split, s.eps, float32(1/math.Sqrt(float64(s.d))))
}

// attnPrep: norm + RoPE the t new queries and keys, append keys and values to the cache.
// q2 [t, Hq*2D], k, v [t, Hkv*D], cs [t, rot] → q, gate [t, Hq*D]; kc, vc [cap, Hkv*D].
func attnPrep(s *sizes, l *deviceLayer, pos0, t int, q2, k, v, cs, q, gate, kc, vc device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "attn_prep", Groups: grid(s.hq+s.hkv, t, 1), Threads: grid(32, 1, 1),
		Args: []device.Arg{q2, k, v, *l.qn, *l.kn, cs, q, gate, kc, vc, inline(s.attnDims(pos0, t, pos0+t, 1))}}
}

// attnDecodeSplit and attnDecodeCombine: one query over n keys, split along the sequence.
// part [Hq, splits, D+2]; out [Hq*D] = attention · sigmoid(gate).
func attnDecode(s *sizes, n, split int, q, kc, vc, part, gate, out device.Arg) []device.Command {
	d := s.attnDims(n-1, 1, n, split)
	return []device.Command{
		&device.Dispatch{Kernel: "attn_decode_split", Groups: grid(s.hq, cdiv(n, split), 1), Threads: grid(32, 1, 1),
			Args: []device.Arg{q, kc, vc, part, inline(d)}},
		&device.Dispatch{Kernel: "attn_decode_combine", Groups: grid(s.hq, 1, 1), Threads: grid(32, 1, 1),
			Args: []device.Arg{part, gate, out, inline(d)}},
	}
}

// attnPrefill: causal attention of t new queries at pos0 over the cache, gated. q, gate, out [t, Hq*D].
func attnPrefill(s *sizes, pos0, t int, q, kc, vc, gate, out device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "attn_prefill", Groups: grid(s.hq, t, 1), Threads: grid(32, 1, 1),
		Args: []device.Arg{q, kc, vc, gate, out, inline(s.attnDims(pos0, t, pos0+t, 1))}}
}

// routerTopK: for t tokens x [t, H], ids, wts [t, k] and the shared expert gate logit sgate [t].
func routerTopK(s *sizes, l *deviceLayer, t int, x, ids, wts, sgate device.Arg) *device.Dispatch {
	r := l.router
	return &device.Dispatch{Kernel: "router_topk", Groups: grid(t, 1, 1), Threads: grid(lanes(32*(s.e+1), s.routerLanes), 1, 1),
		Args: []device.Arg{r.w, r.s, r.b, l.seg.w, l.seg.s, l.seg.b, x, ids, wts, sgate, inline(dims(s.e, s.h, s.k, r.bits))}}
}

// moeDims is the MoEDims struct (act rows are max(I, Is) wide).
func (s *sizes) moeDims(bits, actStride int) []byte {
	return dims(s.h, s.inter, s.shared, s.k, bits, actStride)
}

// moeDecode: act [k+1, max(I,Is)] = the k routed experts' and the shared expert's SwiGLU, then
// h [H] += Σ wts·down + sigmoid(sgate)·shared down. ids, wts [k]; sgate [1]; x [H].
func moeDecode(s *sizes, l *deviceLayer, ids, wts, sgate, x, act, h device.Arg) []device.Command {
	st := max(s.inter, s.shared)
	d := s.moeDims(l.gate.bits, st)
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
	d := inline(dims(t, s.k, s.h, s.inter, l.gate.bits))
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
		Args: []device.Arg{out, wts, sgate, shared, y, inline(s.moeDims(l.gate.bits, max(s.inter, s.shared)))}}
}

// logitsTopK: ids, vals [k] and lse [1] of x [V].
func logitsTopK(s *sizes, k int, x, ids, vals, lse device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "logits_topk", Groups: grid(1, 1, 1), Threads: grid(lanes(s.v, s.topkLanes), 1, 1),
		Args: []device.Arg{x, ids, vals, lse, inline(dims(s.v, k))}}
}

// pipelineLanes sets the threadgroup sizes of the kernels that stride over any number of SIMD groups
// (router_topk, logits_topk) to what their pipelines allow on dev, in whole SIMD groups: up to
// 1,024, fewer where a pipeline's maxTotalThreadsPerThreadgroup is lower.
func (s *sizes) pipelineLanes(dev device.Device) error {
	for _, p := range []struct {
		kernel string
		lanes  *int
	}{{"router_topk", &s.routerLanes}, {"logits_topk", &s.topkLanes}} {
		n, err := dev.MaxThreads(p.kernel)
		if err != nil {
			return fmt.Errorf("metal: %w", err)
		}
		if n < 32 {
			return fmt.Errorf("metal: %s allows %d threads per threadgroup; it needs at least one SIMD group of 32", p.kernel, n)
		}
		*p.lanes = min(n, device.MaxThreadgroup) / 32 * 32
	}
	return nil
}

// dims packs a kernel's dims struct: each value as a little-endian uint32 (int, uint32) or
// float32 (float32, float64), in field order.
func dims(vals ...any) []byte {
	b := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		switch v := v.(type) {
		case int:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		case float64:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
		default:
			panic(fmt.Sprintf("metal: dims: unsupported field type %T", v)) // programming error in a plan
		}
	}
	return b
}
