// Prefill GEMMs on the tile32 design (the tiling of MLX's qmm_t / gather_qmm; our own code):
//   - a threadgroup of T32_THREADS = 128 threads (4 SIMD groups) owns a 32×32 output tile: 32 token
//     rows × 32 weight rows; SIMD group sg computes the 16×16 quadrant (sg/2, sg%2) as 2×2
//     simdgroup_float8x8 fragments, accumulated in fp32;
//   - K is stepped by T32_BK = 32 (inside one quantization group of 64, so one scale and bias per
//     row per step; `in` is a multiple of 64, so there is no K tail);
//   - per step each thread stages 8 consecutive activations of one token row (X tile [32, 32]) and
//     dequantizes the 8 weights of one packed word (4-bit; two words at 8-bit) of one weight row
//     (W tile [32, 32]) into threadgroup memory; rows past the edges are staged as zeros;
//   - operands are fp32: the fp32 activations need no conversion and the fp32 simdgroup_matrix
//     product keeps the GEMMs within the float32 rounding the conformance budgets were set for;
//   - the result goes through threadgroup memory so the edge tiles store only what is inside.
// The expert GEMMs run the same tiles over expert-sorted slots (moe_count/scan/scatter): moe_tiles
// turns the per-expert slot ranges into a work list of (expert, 32-slot tile) and the GEMM grid's
// y is sized by the bound cdiv(n, 32) + min(E, n) on its length, threadgroups past the list's end
// returning at once; no threadgroup is spent on an expert without slots.

#define T32_BM 32u       // token rows per tile
#define T32_BN 32u       // weight rows per tile
#define T32_BK 32u       // K per step
#define T32_LD 36u       // threadgroup row stride (floats): 32 plus 4 of padding against bank conflicts
#define T32_THREADS 128u

// t32_dequant8: v[0..8) = W[row][k .. k+8) of a bits-wide matrix (4 or 8) with rows of `in`,
// shifts sh as in QDims. k is a multiple of 8.
inline void t32_dequant8(device const uint* w, device const ushort* s, device const ushort* b, uint sh, uint bits,
                         uint row, uint in, uint k, thread float* v) {
  uint g = row * (in / LILY_GROUP) + k / LILY_GROUP;
  float sc = qbf16(s, g, sshift(sh)), bi = qbf16(b, g, bshift(sh));
  if (bits == 4u) {
    uint word = qword(w, row * (in / 8u) + k / 8u, wshift(sh));
    for (uint j = 0; j < 8u; j++) v[j] = sc * float((word >> (4u * j)) & 0xfu) + bi;
  } else {
    uint at = row * (in / 4u) + k / 4u;
    for (uint p = 0; p < 2u; p++) {
      uint word = qword(w, at + p, wshift(sh));
      for (uint j = 0; j < 4u; j++) v[4u * p + j] = sc * float((word >> (8u * j)) & 0xffu) + bi;
    }
  }
}

// t32_mma: C[a][b] += A rows (tm + 8a) · B rows (tn + 8b) over the step's 32 columns: xs [32, LD]
// token rows, ws [32, LD] weight rows (read transposed). Written as a macro because the arrays are
// kernel-scope threadgroup arrays (00_common.metal's convention).
#define T32_MMA(xs, ws, C, tm, tn)                                                   \
  for (uint kk = 0; kk < T32_BK; kk += 8u) {                                         \
    simdgroup_float8x8 A0, A1, B0, B1;                                               \
    simdgroup_load(A0, xs, T32_LD, ulong2(kk, tm));                                  \
    simdgroup_load(A1, xs, T32_LD, ulong2(kk, tm + 8u));                             \
    simdgroup_load(B0, ws, T32_LD, ulong2(kk, tn), true);                            \
    simdgroup_load(B1, ws, T32_LD, ulong2(kk, tn + 8u), true);                       \
    simdgroup_multiply_accumulate(C[0], A0, B0, C[0]);                               \
    simdgroup_multiply_accumulate(C[1], A0, B1, C[1]);                               \
    simdgroup_multiply_accumulate(C[2], A1, B0, C[2]);                               \
    simdgroup_multiply_accumulate(C[3], A1, B1, C[3]);                               \
  }

// T32_STORE: the 2×2 fragments C of the quadrant (tm, tn) into cs [32, LD].
#define T32_STORE(C, cs, tm, tn)                                    \
  simdgroup_store(C[0], cs, T32_LD, ulong2(tn, tm));                \
  simdgroup_store(C[1], cs, T32_LD, ulong2(tn + 8u, tm));           \
  simdgroup_store(C[2], cs, T32_LD, ulong2(tn, tm + 8u));           \
  simdgroup_store(C[3], cs, T32_LD, ulong2(tn + 8u, tm + 8u));

// Y: [T, out] = X: [T, in] · Wᵀ (add: Y +=). Grid (cdiv(out, 32), cdiv(T, 32)) threadgroups of
// 128 threads. Dims as qmm's MMDims.
struct T32Dims {
  uint t;    // token rows
  uint out;  // weight rows
  uint in;
  uint bits;
  uint add;  // 1: Y += X·Wᵀ (fused residual add); 0: Y = X·Wᵀ
  uint sh;   // as in QDims
};

kernel void qmm_t32(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                    device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                    device float* y [[buffer(4)]], constant T32Dims& d [[buffer(5)]],
                    uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[T32_BM * T32_LD];
  threadgroup float ws[T32_BN * T32_LD];
  uint tok0 = tg.y * T32_BM, row0 = tg.x * T32_BN;
  uint r = tid / 4u, c = (tid % 4u) * 8u;  // this thread's staging row and column
  uint tm = (sg / 2u) * 16u, tn = (sg % 2u) * 16u;
  simdgroup_float8x8 C[4];
  for (uint i = 0; i < 4u; i++) C[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  bool xin = tok0 + r < d.t, win = row0 + r < d.out;
  for (uint k0 = 0; k0 < d.in; k0 += T32_BK) {
    float v[8];
    if (win) {
      t32_dequant8(w, s, b, d.sh, d.bits, row0 + r, d.in, k0 + c, v);
    } else {
      for (uint j = 0; j < 8u; j++) v[j] = 0.0f;
    }
    for (uint j = 0; j < 8u; j++) {
      xs[r * T32_LD + c + j] = xin ? x[(tok0 + r) * d.in + k0 + c + j] : 0.0f;
      ws[r * T32_LD + c + j] = v[j];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    T32_MMA(xs, ws, C, tm, tn)
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  T32_STORE(C, xs, tm, tn)
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint j = 0; j < 8u; j++) {
    uint n = c + j;
    if (xin && row0 + n < d.out) {
      uint at = (tok0 + r) * d.out + row0 + n;
      y[at] = d.add != 0u ? y[at] + xs[r * T32_LD + n] : xs[r * T32_LD + n];
    }
  }
}

struct T32TileDims {
  uint n;        // T*k routed slots
  uint experts;  // E
};

// moe_tiles: tiles[e] = Σ_{e'<e} cdiv(offsets[e'+1] - offsets[e'], 32), tiles[E] = the work list's
// length. One threadgroup of up to 1,024 threads (E <= 1024): SIMD prefix sums, then across SIMD
// groups (as moe_scan).
kernel void moe_tiles(device const uint* offsets [[buffer(0)]], device uint* tiles [[buffer(1)]],
                      constant T32TileDims& d [[buffer(2)]], uint tid [[thread_index_in_threadgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                      uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup uint sums[32];
  uint c = tid < d.experts ? (offsets[tid + 1u] - offsets[tid] + T32_BM - 1u) / T32_BM : 0u;
  uint pre = simd_prefix_exclusive_sum(c);
  if (lane == 31u) sums[sg] = pre + c;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    uint v = lane < nsg ? sums[lane] : 0u;
    uint p = simd_prefix_exclusive_sum(v);
    if (lane < nsg) sums[lane] = p;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint off = sums[sg] + pre;
  if (tid < d.experts) tiles[tid] = off;
  if (tid == d.experts - 1u) tiles[d.experts] = off + c;
}

// t32_work: the expert e and its slot range [n0, n1) of work-list entry y (y < tiles[E]): the
// largest e with tiles[e] <= y, which has tiles[e+1] > y and so at least one slot.
inline uint t32_work(device const uint* tiles, device const uint* offsets, uint experts, uint y, thread uint& n0,
                     thread uint& n1) {
  uint lo = 0, hi = experts;  // tiles[lo] <= y < tiles[hi]
  while (hi - lo > 1u) {
    uint mid = (lo + hi) / 2u;
    if (tiles[mid] <= y) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  n0 = offsets[lo] + (y - tiles[lo]) * T32_BM;
  n1 = offsets[lo + 1u];
  return lo;
}

struct T32MoEDims {
  uint k;       // slots per token
  uint hidden;  // H
  uint inter;   // I
  uint bits;
  uint experts;           // E
  uint gsh, ush, dsh;     // gate, up, down shifts as in QDims
};

// act [slot, I] = silu(Wg[e] x_tok) · (Wu[e] x_tok) for the slots of work-list entry tg.y (expert e,
// tok = slot / k), weight rows in 32-row tiles (tg.x). Grid (cdiv(I, 32), cdiv(n, 32) + min(E, n))
// of 128 threads; entries past tiles[E] return at once.
kernel void moe_gemm_t32_gate_up(device const uint* gw [[buffer(0)]], device const ushort* gs [[buffer(1)]],
                                 device const ushort* gb [[buffer(2)]], device const uint* uw [[buffer(3)]],
                                 device const ushort* us [[buffer(4)]], device const ushort* ub [[buffer(5)]],
                                 device const float* x [[buffer(6)]], device const uint* order [[buffer(7)]],
                                 device const uint* offsets [[buffer(8)]], device const uint* tiles [[buffer(9)]],
                                 device float* act [[buffer(10)]], constant T32MoEDims& d [[buffer(11)]],
                                 uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                                 uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[T32_BM * T32_LD];
  threadgroup float wg[T32_BN * T32_LD];
  threadgroup float wu[T32_BN * T32_LD];
  if (tg.y >= tiles[d.experts]) return;
  uint n0, n1;
  uint e = t32_work(tiles, offsets, d.experts, tg.y, n0, n1);
  uint row0 = tg.x * T32_BN;
  uint r = tid / 4u, c = (tid % 4u) * 8u;
  uint tm = (sg / 2u) * 16u, tn = (sg % 2u) * 16u;
  simdgroup_float8x8 CG[4], CU[4];
  for (uint i = 0; i < 4u; i++) {
    CG[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    CU[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  }
  bool xin = n0 + r < n1, win = row0 + r < d.inter;
  uint tok = xin ? order[n0 + r] / d.k : 0u;
  uint wrow = e * d.inter + row0 + r;
  for (uint k0 = 0; k0 < d.hidden; k0 += T32_BK) {
    float g[8], u[8];
    if (win) {
      t32_dequant8(gw, gs, gb, d.gsh, d.bits, wrow, d.hidden, k0 + c, g);
      t32_dequant8(uw, us, ub, d.ush, d.bits, wrow, d.hidden, k0 + c, u);
    } else {
      for (uint j = 0; j < 8u; j++) g[j] = u[j] = 0.0f;
    }
    for (uint j = 0; j < 8u; j++) {
      xs[r * T32_LD + c + j] = xin ? x[tok * d.hidden + k0 + c + j] : 0.0f;
      wg[r * T32_LD + c + j] = g[j];
      wu[r * T32_LD + c + j] = u[j];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    T32_MMA(xs, wg, CG, tm, tn)
    T32_MMA(xs, wu, CU, tm, tn)
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  T32_STORE(CG, wg, tm, tn)
  T32_STORE(CU, wu, tm, tn)
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (!xin) return;
  uint slot = order[n0 + r];
  for (uint j = 0; j < 8u; j++) {
    uint n = c + j;
    if (row0 + n < d.inter) act[slot * d.inter + row0 + n] = silu_f(wg[r * T32_LD + n]) * wu[r * T32_LD + n];
  }
}

// out [slot, H] = Wd[e] act[slot] for the slots of work-list entry tg.y. Grid (cdiv(H, 32),
// cdiv(n, 32) + min(E, n)) of 128 threads.
kernel void moe_gemm_t32_down(device const uint* dw [[buffer(0)]], device const ushort* ds [[buffer(1)]],
                              device const ushort* db [[buffer(2)]], device const float* act [[buffer(3)]],
                              device const uint* order [[buffer(4)]], device const uint* offsets [[buffer(5)]],
                              device const uint* tiles [[buffer(6)]], device float* out [[buffer(7)]],
                              constant T32MoEDims& d [[buffer(8)]], uint2 tg [[threadgroup_position_in_grid]],
                              uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float xs[T32_BM * T32_LD];
  threadgroup float ws[T32_BN * T32_LD];
  if (tg.y >= tiles[d.experts]) return;
  uint n0, n1;
  uint e = t32_work(tiles, offsets, d.experts, tg.y, n0, n1);
  uint row0 = tg.x * T32_BN;
  uint r = tid / 4u, c = (tid % 4u) * 8u;
  uint tm = (sg / 2u) * 16u, tn = (sg % 2u) * 16u;
  simdgroup_float8x8 C[4];
  for (uint i = 0; i < 4u; i++) C[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  bool xin = n0 + r < n1, win = row0 + r < d.hidden;
  uint slot = xin ? order[n0 + r] : 0u;
  uint wrow = e * d.hidden + row0 + r;
  for (uint k0 = 0; k0 < d.inter; k0 += T32_BK) {
    float v[8];
    if (win) {
      t32_dequant8(dw, ds, db, d.dsh, d.bits, wrow, d.inter, k0 + c, v);
    } else {
      for (uint j = 0; j < 8u; j++) v[j] = 0.0f;
    }
    for (uint j = 0; j < 8u; j++) {
      xs[r * T32_LD + c + j] = xin ? act[slot * d.inter + k0 + c + j] : 0.0f;
      ws[r * T32_LD + c + j] = v[j];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    T32_MMA(xs, ws, C, tm, tn)
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  T32_STORE(C, xs, tm, tn)
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (!xin) return;
  for (uint j = 0; j < 8u; j++) {
    uint n = c + j;
    if (row0 + n < d.hidden) out[slot * d.hidden + row0 + n] = xs[r * T32_LD + n];
  }
}
