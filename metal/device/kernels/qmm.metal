// Prefill GEMMs with dequantization fused into the tile loads. Thread mapping: one SIMD group per
// 8×8 output tile (8 token rows × 8 weight rows); the K loop stages an 8×8 tile of X and of the
// dequantized W in threadgroup memory (zero past the edges) and multiplies them with
// simdgroup_float8x8 matrices.

struct MMDims {
  uint t;    // token rows
  uint out;  // weight rows
  uint in;
  uint bits;
  uint add;  // 1: Y += X·Wᵀ (fused residual add); 0: Y = X·Wᵀ
  uint sh;   // as in QDims
};

// Y: [T, out] = X: [T, in] · Wᵀ. Grid (ceil(out/8), ceil(T/8)) threadgroups of 32 threads.
kernel void qmm(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                device float* y [[buffer(4)]], constant MMDims& d [[buffer(5)]],
                uint2 tg [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float xt[64];
  threadgroup float wt[64];
  threadgroup float ct[64];
  uint row0 = tg.x * 8u, tok0 = tg.y * 8u;
  simdgroup_float8x8 A, B, C = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k0 = 0; k0 < d.in; k0 += 8u) {
    for (uint e = lane; e < 64u; e += 32u) {
      uint r = e / 8u, c = e % 8u;
      xt[e] = tok0 + r < d.t ? x[(tok0 + r) * d.in + k0 + c] : 0.0f;
      wt[e] = row0 + r < d.out ? qget(w, s, b, row0 + r, k0 + c, d.in, d.bits, d.sh) : 0.0f;
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_load(A, xt, 8);
    simdgroup_load(B, wt, 8, ulong2(0, 0), true);
    simdgroup_multiply_accumulate(C, A, B, C);
    simdgroup_barrier(mem_flags::mem_threadgroup);
  }
  simdgroup_store(C, ct, 8);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  for (uint e = lane; e < 64u; e += 32u) {
    uint r = e / 8u, c = e % 8u;
    if (tok0 + r < d.t && row0 + c < d.out) {
      uint at = (tok0 + r) * d.out + row0 + c;
      y[at] = d.add != 0u ? y[at] + ct[e] : ct[e];
    }
  }
}

struct GroupMMDims {
  uint t;       // tokens
  uint k;       // slots per token
  uint hidden;  // H
  uint inter;   // I
  uint bits;
  uint gsh, ush, dsh;  // gate, up, down shifts as in QDims
};

// Grouped gate/up GEMM of expert e = tg.z over its slots order[offsets[e]..offsets[e+1]) in tiles
// of 8 (tg.y), weight rows in tiles of 8 (tg.x): act[slot, r] = silu(Wg[e] x_tok)[r]·(Wu[e] x_tok)[r]
// with tok = slot / k. Grid (ceil(I/8), ceil(T/8), E); tiles past an expert's slots return at once.
kernel void moe_gemm_gate_up(device const uint* gw [[buffer(0)]], device const ushort* gs [[buffer(1)]],
                             device const ushort* gb [[buffer(2)]], device const uint* uw [[buffer(3)]],
                             device const ushort* us [[buffer(4)]], device const ushort* ub [[buffer(5)]],
                             device const float* x [[buffer(6)]], device const uint* order [[buffer(7)]],
                             device const uint* offsets [[buffer(8)]], device float* act [[buffer(9)]],
                             constant GroupMMDims& d [[buffer(10)]], uint3 tg [[threadgroup_position_in_grid]],
                             uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float xt[64];
  threadgroup float gt[64];
  threadgroup float ut[64];
  threadgroup float c1[64];
  threadgroup float c2[64];
  uint e = tg.z, n0 = offsets[e] + tg.y * 8u, n1 = offsets[e + 1u];
  if (n0 >= n1) return;
  uint row0 = tg.x * 8u;
  simdgroup_float8x8 A, G, U, CG = make_filled_simdgroup_matrix<float, 8, 8>(0.0f),
                              CU = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k0 = 0; k0 < d.hidden; k0 += 8u) {
    for (uint q = lane; q < 64u; q += 32u) {
      uint r = q / 8u, c = q % 8u;
      xt[q] = n0 + r < n1 ? x[(order[n0 + r] / d.k) * d.hidden + k0 + c] : 0.0f;
      bool ok = row0 + r < d.inter;
      gt[q] = ok ? qget(gw, gs, gb, e * d.inter + row0 + r, k0 + c, d.hidden, d.bits, d.gsh) : 0.0f;
      ut[q] = ok ? qget(uw, us, ub, e * d.inter + row0 + r, k0 + c, d.hidden, d.bits, d.ush) : 0.0f;
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_load(A, xt, 8);
    simdgroup_load(G, gt, 8, ulong2(0, 0), true);
    simdgroup_load(U, ut, 8, ulong2(0, 0), true);
    simdgroup_multiply_accumulate(CG, A, G, CG);
    simdgroup_multiply_accumulate(CU, A, U, CU);
    simdgroup_barrier(mem_flags::mem_threadgroup);
  }
  simdgroup_store(CG, c1, 8);
  simdgroup_store(CU, c2, 8);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  for (uint q = lane; q < 64u; q += 32u) {
    uint r = q / 8u, c = q % 8u;
    if (n0 + r < n1 && row0 + c < d.inter) act[order[n0 + r] * d.inter + row0 + c] = silu_f(c1[q]) * c2[q];
  }
}

// Grouped down GEMM of expert e = tg.z: out[slot, r] = (Wd[e] act[slot])[r] over the expert's slots.
// Grid (ceil(H/8), ceil(T/8), E).
kernel void moe_gemm_down(device const uint* dw [[buffer(0)]], device const ushort* ds [[buffer(1)]],
                          device const ushort* db [[buffer(2)]], device const float* act [[buffer(3)]],
                          device const uint* order [[buffer(4)]], device const uint* offsets [[buffer(5)]],
                          device float* out [[buffer(6)]], constant GroupMMDims& d [[buffer(7)]],
                          uint3 tg [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float xt[64];
  threadgroup float wt[64];
  threadgroup float ct[64];
  uint e = tg.z, n0 = offsets[e] + tg.y * 8u, n1 = offsets[e + 1u];
  if (n0 >= n1) return;
  uint row0 = tg.x * 8u;
  simdgroup_float8x8 A, B, C = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  for (uint k0 = 0; k0 < d.inter; k0 += 8u) {
    for (uint q = lane; q < 64u; q += 32u) {
      uint r = q / 8u, c = q % 8u;
      xt[q] = n0 + r < n1 ? act[order[n0 + r] * d.inter + k0 + c] : 0.0f;
      wt[q] = row0 + r < d.hidden ? qget(dw, ds, db, e * d.hidden + row0 + r, k0 + c, d.inter, d.bits, d.dsh) : 0.0f;
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_load(A, xt, 8);
    simdgroup_load(B, wt, 8, ulong2(0, 0), true);
    simdgroup_multiply_accumulate(C, A, B, C);
    simdgroup_barrier(mem_flags::mem_threadgroup);
  }
  simdgroup_store(C, ct, 8);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  for (uint q = lane; q < 64u; q += 32u) {
    uint r = q / 8u, c = q % 8u;
    if (n0 + r < n1 && row0 + c < d.hidden) out[order[n0 + r] * d.hidden + row0 + c] = ct[q];
  }
}
