package metal

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lily-engine/lily/metal/device"
)

// The host side of each kernel (its grid and its buffer order, written down once, matching the
// header comment of the kernel in kernels/*.metal) for the kernels every layer uses: quantized
// mat-vec and GEMM, embedding, RMSNorm, the head's top-k; and the helpers the per-layer files
// (deltanet.go, attention.go, moe.go) share. Activation arguments are windows of float32 (int32 for
// ids) rows; shapes are in the comments as [rows, cols].

// cdiv is a/b rounded up.
func cdiv(a, b int) int { return (a + b - 1) / b }

// inline is a kernel argument passed by value (setBytes).
func inline(b []byte) device.Arg { return device.Arg{Bytes: b} }

// grid is a 3-D size.
func grid(x, y, z int) [3]int { return [3]int{x, y, z} }

// lanes is the threadgroup size of a kernel whose threads stride over n items (or one SIMD group
// per item): n rounded up to whole SIMD groups, at most limit. Small models then do not pay for
// idle SIMD groups; the real model's widths reach the limit the kernel headers give.
func lanes(n, limit int) int { return min(max(cdiv(n, 32), 1)*32, limit) }

// qmv: y [out] = W x [in] (add: y += W x), on the qmv_fast design (kernels/qmv_fast.metal): 2 SIMD
// groups of 4 rows per threadgroup, the kernel specialised for the matrix's bit width.
func qmv(m *qmat, x, y device.Arg, add bool) *device.Dispatch {
	k := byBits(m.bits, "qmv_4", "qmv_8")
	if add {
		k = byBits(m.bits, "qmv_add_4", "qmv_add_8")
	}
	return &device.Dispatch{Kernel: k, Groups: grid(cdiv(m.out, qmvRows), 1, 1), Threads: grid(qmvThreads, 1, 1),
		Args: []device.Arg{m.w, m.s, m.b, x, y, inline(PackDims(m.out, m.in, m.bits, m.sh()))}}
}

// The qmv_fast threadgroup (QF_SG, QF_ROWS in kernels/qmv_fast.metal): 2 SIMD groups of 4 rows.
const (
	qmvRows    = 8
	qmvThreads = 64
)

// QMVRoofline is the fraction of the memory roofline the qmv_fast design's kernels (qmv_*,
// qmv_add_*, router_qmv_*, moe_gate_up_*, moe_down_*) reach on a well-filled dispatch, for the
// performance model (metal/perfmodel). Public measurement: llama.cpp's Metal q4_0 mat-vec, the same
// pre-scaled-x mask-and-FMA dequantisation with several rows per SIMD group, read 340-350 GB/s on
// an M1 Max (400 GB/s), 0.85-0.875 of peak (llama.cpp PR #2248, "metal: minor q4 optimization");
// MLX's qmv_fast follows the same structure. Taken as 0.8: fp32 activations and 8-row
// threadgroups over narrow matrices (the DeltaNet b/a projections) lose a little against it.
const QMVRoofline = 0.8

// byBits is the kernel specialised for a matrix's bit width (4 or 8: checkLimits and the
// checkpoint reject anything else).
func byBits(bits int, k4, k8 string) string {
	if bits == 8 {
		return k8
	}
	return k4
}

// qmm: Y [t, out] = X [t, in] · Wᵀ (add: Y +=), on the tile32 design (kernels/gemm_tile32.metal):
// a 32×32 output tile per threadgroup of 4 SIMD groups, K stepped by 32, fp32 operands.
func qmm(m *qmat, t int, x, y device.Arg, add bool) *device.Dispatch {
	a := 0
	if add {
		a = 1
	}
	return &device.Dispatch{Kernel: "qmm_t32", Groups: grid(cdiv(m.out, gemmTile), cdiv(t, gemmTile), 1),
		Threads: grid(gemmThreads, 1, 1), Args: []device.Arg{m.w, m.s, m.b, x, y, inline(PackDims(t, m.out, m.in, m.bits, a, m.sh()))}}
}

// The tile32 threadgroup (T32_BM, T32_BN, T32_THREADS in kernels/gemm_tile32.metal): 32 token rows
// × 32 weight rows over 4 SIMD groups.
const (
	gemmTile    = 32
	gemmThreads = 128
)

// GEMMTile32Rate is the fraction of the compute rate its operands use (fp32 simdgroup_matrix) the
// tile32 qmm_t32 reaches on a well-filled dispatch, for the performance model (metal/perfmodel).
// Public measurement: MLX's dense quantized_matmul (qmm_t, the same 32×32×32 tile over 4 SIMD
// groups, dequantised into threadgroup memory) ran 20.5 TFLOPS on an M3 Ultra of 512 GB (mlx
// issue #4246; that model has the 80-core GPU). The issue states no peak: by perfmodel's M3 Max
// arithmetic (14 TFLOPS for 40 cores) the chip has ~28, so ~0.7 of it. Taken as 0.5 here: fp32
// operands stage twice the threadgroup bytes per step, and lily's loop has no double buffering.
const GEMMTile32Rate = 0.5

// MoEGEMMTile32Rate is the same for moe_gemm_t32_gate_up / _down: in the same measurement MLX's
// sorted gather_qmm reached 0.69 of the dense kernel (14.2 vs 20.5 TFLOPS) at ~43 rows per expert,
// the partly filled 32-row tiles at each expert's end; 0.5 × 0.69.
const MoEGEMMTile32Rate = 0.35

// GEMMTile32Mem is the fraction of the memory roofline the tile32 kernels reach when a GEMM is
// bandwidth-bound (few tokens per expert). No public measurement of this design in that regime
// exists; estimated from QMVRoofline's (llama.cpp's q4 mat-vec at 0.85-0.875 of peak, the same
// coalesced packed-word reads per lane) less the stall of two threadgroup barriers per 32-wide K
// step, in which no loads are in flight: 0.6. A Mac run of `lily bench` replaces it.
const GEMMTile32Mem = 0.6

// embed: out [t, H] = rows ids [t] of the quantized table.
func embedRows(m *qmat, t int, ids, out device.Arg) *device.Dispatch {
	return &device.Dispatch{Kernel: "embed", Groups: grid(cdiv(m.in, 256), t, 1), Threads: grid(256, 1, 1),
		Args: []device.Arg{m.w, m.s, m.b, ids, out, inline(PackDims(m.out, m.in, m.bits, m.sh()))}}
}

// rmsNorm: y [t, n] = x / rms(x) · w, one threadgroup of 256 per row.
func rmsNorm(t, n int, x device.Arg, w vec, y device.Arg, eps float32) *device.Dispatch {
	return &device.Dispatch{Kernel: "rms_norm", Groups: grid(t, 1, 1), Threads: grid(lanes(n, 256), 1, 1),
		Args: []device.Arg{x, *w, y, inline(PackDims(n, eps))}}
}

// logitsTopK: ids, vals [k] and lse [1] of x [V], split over the GPU (kernels/logits_split.metal):
// logits_topk_part gives each of s.logitParts() threadgroups a chunk of the vocabulary, its lse
// terms and top k into the scratch's part rows; logits_topk_merge merges them in one threadgroup.
func logitsTopK(s *sizes, sc *scratch, k int, x, ids, vals, lse device.Arg) []device.Command {
	parts := s.logitParts()
	d := inline(PackDims(s.v, k, logitsPerThread*s.partLanes(), parts))
	pids := device.Arg{Buf: sc.tpids.buf, Off: sc.tpids.off, Len: 4 * parts * k}
	pvals := device.Arg{Buf: sc.tpvals.buf, Off: sc.tpvals.off, Len: 4 * parts * k}
	pstat := sc.tpstat.first(parts)
	return []device.Command{
		&device.Dispatch{Kernel: "logits_topk_part", Groups: grid(parts, 1, 1), Threads: grid(s.partLanes(), 1, 1),
			Args: []device.Arg{x, pids, pvals, pstat, d}},
		&device.Dispatch{Kernel: "logits_topk_merge", Groups: grid(1, 1, 1), Threads: grid(lanes(parts, s.mergeLanes), 1, 1),
			Args: []device.Arg{pids, pvals, pstat, ids, vals, lse, d}},
	}
}

// logitsPerThread is LT_ELEMS of kernels/logits_split.metal: the logits each logits_topk_part
// thread holds in registers.
const logitsPerThread = 16

// maxLogitParts bounds logits_topk_part's threadgroups (logits_topk_merge keeps a head per part in
// threadgroup memory).
const maxLogitParts = 1024

// LogitsPartRoofline is the fraction of the memory roofline logits_topk_part reaches, for the
// performance model: one coalesced pass over the logits (~1 MB) by ~60 threadgroups, then k
// barrier-separated rounds of register argmax; latency-bound at k = 8, so a third of the
// bandwidth (the deltanet_scan estimate's reasoning: dependent simd reductions per step).
const LogitsPartRoofline = 0.3

// LogitsMergeRoofline: one threadgroup over parts·k candidates (~4 KB) in k rounds: launch and
// barrier latency, a tenth of the roofline (its bytes are negligible).
const LogitsMergeRoofline = 0.1

// partLanes is logits_topk_part's threadgroup size: 256 threads (4,096 logits per part), fewer
// where its pipeline allows fewer.
func (s *sizes) partLanes() int { return min(256, s.topkLanes) }

// logitParts is the number of logits_topk_part threadgroups over the vocabulary.
func (s *sizes) logitParts() int { return cdiv(s.v, logitsPerThread*s.partLanes()) }

// pipelineLanes sets the threadgroup sizes of the kernels that stride over any number of SIMD groups
// (router_softmax_topk, logits_topk_part, logits_topk_merge) to what their pipelines allow on dev,
// in whole SIMD groups: up to 1,024, fewer where a pipeline's maxTotalThreadsPerThreadgroup is
// lower.
func (s *sizes) pipelineLanes(dev device.Device) error {
	for _, p := range []struct {
		kernel string
		lanes  *int
	}{{"router_softmax_topk", &s.routerLanes}, {"logits_topk_part", &s.topkLanes}, {"logits_topk_merge", &s.mergeLanes}} {
		n, err := dev.MaxThreads(p.kernel)
		if err != nil {
			return fmt.Errorf("metal: %w", err)
		}
		if n < 32 {
			return fmt.Errorf("metal: %s allows %d threads per threadgroup; it needs at least one SIMD group of 32", p.kernel, n)
		}
		*p.lanes = min(n, device.MaxThreadgroup) / 32 * 32
	}
	if p := s.logitParts(); p > maxLogitParts {
		return fmt.Errorf("metal: a vocabulary of %d needs %d logits_topk_part threadgroups of %d threads; the merge takes at most %d",
			s.v, p, s.partLanes(), maxLogitParts)
	}
	return nil
}

// PackDims packs a kernel's dims struct: each value as a little-endian uint32 (int, uint32) or
// float32 (float32, float64), in field order. Exported for code that dispatches kernels directly
// (metal/kernelcheck, the conformance tests), so they bind the layout the engine's plans bind.
func PackDims(vals ...any) []byte {
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

// step is what a plan is built for: one decode token (t = 1, mat-vecs) or a prefill chunk of t rows
// (GEMMs), at position pos.
type step struct {
	t, pos int
	decode bool
}

// linear is Y [t, out] = X [t, in] · Wᵀ (add: Y +=) in the step's form: qmv in decode, qmm in prefill.
func (p step) linear(m *qmat, x, y device.Arg, add bool) device.Command {
	if p.decode {
		return qmv(m, x, y, add)
	}
	return qmm(m, p.t, x, y, add)
}
