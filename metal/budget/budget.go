// Package budget holds the error budgets of the Metal kernels against ref: the largest relative
// error (max_i |got−want| / max_i |want|) each kernel may show. The conformance emulator tests
// and `lily doctor`'s per-kernel checks (kernelcheck.CheckKernels) both read them from here.
package budget

// MatVec: the 4-bit/8-bit mat-vecs and mat-mats accumulate each dot product in float32
// (s·Σq·x + b·Σx per group), ref in float64 over dequantized weights; sums of up to 4,096 terms
// differ by tens of float32 ulps (seen: 5e-7).
const MatVec = 5e-6

// Gemm: qmm_t32 and the tile32 expert GEMMs accumulate in float32 in 8-wide fragments
// (dequantised weights times fp32 activations), ref in float64; as the mat-vecs, tens of float32
// ulps on sums of up to 4,096 terms.
const Gemm = MatVec

// Norm: rms_norm sums the mean of squares in float32 in a different order than ref's float64.
const Norm = 1e-6

// Elt: silu's exp in float32 (the emulator's std::exp) against ref's float64.
const Elt = 1e-6

// LSE: the head top-k kernels sum exp in float32 per part, then rescale the parts' sums; the oracle
// sums in float64 over up to 248,320 logits.
const LSE = 2e-6

// Route: router weights are softmax ratios of float32 logits (ref: float64 dots); the shared
// expert gate is one float32 dot product (seen: 2e-7).
const Route = 2e-6

// MoE: a MoE block chains three float32 mat-vecs, silu and a weighted sum of k+1 experts (seen: 3e-7).
const MoE = 8e-6

// Attn: q/k RMSNorm, RoPE and the online softmax in float32 against ref's float64 sums; the split
// merge rescales partial sums by exp of float32 maxima (seen: 4e-7).
const Attn = 4e-6

// AttnLayer: a whole attention layer adds the q/k/v and o projections (MatVec each) to Attn.
const AttnLayer = 8e-6

// DeltaNet: the kernel runs the recurrent delta rule in float32 (float32 sums over Dk), ref the
// chunked form with float64 contractions; over ~70 tokens the float32 state drifts by ~1e-6
// relative, and the output adds the projections (MatVec each) and the gated RMSNorm (seen: 7e-7).
const DeltaNet = 1e-5

// KVF16: the KV cache holds K and V as IEEE fp16, each element rounded to nearest, within 2^-11
// of itself; what attention computes from the rounded rows inherits that relative error.
const KVF16 = 1.0 / 2048

// KVF16Ulp: a key the kernel computes in float32 within Attn of ref's may round to the
// neighbouring fp16 value: one fp16 ulp, 2^-10 relative.
const KVF16Ulp = 1.0 / 1024
