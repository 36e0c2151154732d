// Decode mat-vecs on the qmv_fast design (the shape of MLX's qmv_fast; our own code), specialised
// per bit width at compile time (qmv_4, qmv_8, ...), group size 64:
//   - a threadgroup is QF_SG = 2 SIMD groups of QF_ROWS = 4 rows each: 8 rows, 64 threads;
//   - per step each lane reads QF_WPT = 2 consecutive packed words of a row (16 4-bit or 8 8-bit
//     values, always inside one group of 64), so a SIMD group walks a block of 512 (4-bit) or 256
//     (8-bit) columns per step, coalesced;
//   - x is loaded once per step for all the SIMD group's rows, pre-scaled by 2^-(bits·j) for the
//     j-th value of a word, so dequantisation is (word & (mask << bits·j)) times that: a mask and an
//     FMA, no variable shifts; the lane also keeps Σx of its values for the bias term;
//   - scale and bias are read once per row per step (a lane's values lie in one group);
//   - tails: rows past `out` are skipped (uniform per SIMD group), and lanes whose column block
//     starts past `in` (in a multiple of 64, not necessarily of the block) do no work.
// The per-lane partial sums are reduced with one simd_sum per row at the end.

#define QF_SG 2u
#define QF_ROWS 4u
#define QF_WPT 2u

// A lane's slice of x for columns [k0, k0 + VPT): xs[j] = x[k0 + j] · 2^-(BITS·(j mod PER)).
// Returns Σ x over the slice.
template <uint BITS>
inline float qf_load_x(device const float* x, uint k0, thread float* xs) {
  constexpr uint PER = 32u / BITS;
  float sum = 0.0f;
  for (uint p = 0; p < QF_WPT; p++) {
    for (uint j = 0; j < PER; j++) {
      float v = x[k0 + p * PER + j];
      sum += v;
      xs[p * PER + j] = v * (1.0f / float(1u << (BITS * j)));
    }
  }
  return sum;
}

// One lane's part of row `row` · x over its slice starting at column k0: s·Σ q·x + b·Σ x, with
// the row's words, scales and biases at byte shifts sh (as in QDims).
template <uint BITS>
inline float qf_part(device const uint* w, device const ushort* s, device const ushort* b, uint sh, uint row,
                     uint in, uint k0, thread const float* xs, float xsum) {
  constexpr uint PER = 32u / BITS;
  constexpr uint MASK = (1u << BITS) - 1u;
  uint wi = row * (in / PER) + k0 / PER;
  float acc = 0.0f;
  for (uint p = 0; p < QF_WPT; p++) {
    uint word = qword(w, wi + p, wshift(sh));
    for (uint j = 0; j < PER; j++) acc += xs[p * PER + j] * float(word & (MASK << (BITS * j)));
  }
  uint g = row * (in / LILY_GROUP) + k0 / LILY_GROUP;
  return qbf16(s, g, sshift(sh)) * acc + qbf16(b, g, bshift(sh)) * xsum;
}

// res[r] = W[row0 + r] · x for the SIMD group's QF_ROWS rows (rows >= out left 0), summed over
// the SIMD group: every lane gets the totals.
template <uint BITS>
inline void qf_rows(device const uint* w, device const ushort* s, device const ushort* b, uint sh, uint out,
                    uint in, uint row0, device const float* x, uint lane, thread float* res) {
  constexpr uint VPT = QF_WPT * 32u / BITS;
  for (uint r = 0; r < QF_ROWS; r++) res[r] = 0.0f;
  for (uint k0 = lane * VPT; k0 < in; k0 += 32u * VPT) {
    float xs[VPT];
    float xsum = qf_load_x<BITS>(x, k0, xs);
    for (uint r = 0; r < QF_ROWS; r++)
      if (row0 + r < out) res[r] += qf_part<BITS>(w, s, b, sh, row0 + r, in, k0, xs, xsum);
  }
  for (uint r = 0; r < QF_ROWS; r++) res[r] = simd_sum(res[r]);
}

// y = W x (add: y += W x) for the threadgroup's 8 rows.
template <uint BITS>
inline void qf_qmv(device const uint* w, device const ushort* s, device const ushort* b, device const float* x,
                   device float* y, constant QDims& d, uint tg, uint sg, uint lane, bool add) {
  uint row0 = (tg * QF_SG + sg) * QF_ROWS;
  if (row0 >= d.out) return;
  float res[QF_ROWS];
  qf_rows<BITS>(w, s, b, d.sh, d.out, d.in, row0, x, lane, res);
  if (lane != 0) return;
  for (uint r = 0; r < QF_ROWS; r++)
    if (row0 + r < d.out) y[row0 + r] = add ? y[row0 + r] + res[r] : res[r];
}

// y: [out] = W: [out, in] · x: [in]. Grid ceil(out/8) threadgroups of 64 threads.
kernel void qmv_4(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                  device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                  device float* y [[buffer(4)]], constant QDims& d [[buffer(5)]],
                  uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                  uint lane [[thread_index_in_simdgroup]]) {
  qf_qmv<4>(w, s, b, x, y, d, tg, sg, lane, false);
}

kernel void qmv_8(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                  device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                  device float* y [[buffer(4)]], constant QDims& d [[buffer(5)]],
                  uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                  uint lane [[thread_index_in_simdgroup]]) {
  qf_qmv<8>(w, s, b, x, y, d, tg, sg, lane, false);
}

// y: [out] += W · x — the residual add fused into an output projection. Grid as qmv_4.
kernel void qmv_add_4(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                      device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                      device float* y [[buffer(4)]], constant QDims& d [[buffer(5)]],
                      uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                      uint lane [[thread_index_in_simdgroup]]) {
  qf_qmv<4>(w, s, b, x, y, d, tg, sg, lane, true);
}

kernel void qmv_add_8(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                      device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                      device float* y [[buffer(4)]], constant QDims& d [[buffer(5)]],
                      uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                      uint lane [[thread_index_in_simdgroup]]) {
  qf_qmv<8>(w, s, b, x, y, d, tg, sg, lane, true);
}

struct RouterQDims {
  uint experts;  // E: router rows
  uint in;       // H
  uint rsh, gsh; // router and shared-expert-gate shifts as in QDims
};

// For token t = threadgroup y (x: [T, H]): logits [T, E] = router · x and sgate [T] = the shared
// expert gate's one row · x, as one mat-vec over E+1 rows (row E is the gate). Grid
// (ceil((E+1)/8), T) threadgroups of 64 threads.
template <uint BITS>
inline void qf_router(device const uint* w, device const ushort* s, device const ushort* b, device const uint* gw,
                      device const ushort* gs, device const ushort* gb, device const float* x, device float* logits,
                      device float* sgate, constant RouterQDims& d, uint2 tg, uint sg, uint lane) {
  constexpr uint VPT = QF_WPT * 32u / BITS;
  uint row0 = (tg.x * QF_SG + sg) * QF_ROWS, t = tg.y;
  if (row0 > d.experts) return;
  device const float* xt = x + t * d.in;
  float res[QF_ROWS];
  for (uint r = 0; r < QF_ROWS; r++) res[r] = 0.0f;
  for (uint k0 = lane * VPT; k0 < d.in; k0 += 32u * VPT) {
    float xs[VPT];
    float xsum = qf_load_x<BITS>(xt, k0, xs);
    for (uint r = 0; r < QF_ROWS; r++) {
      uint row = row0 + r;
      if (row < d.experts) res[r] += qf_part<BITS>(w, s, b, d.rsh, row, d.in, k0, xs, xsum);
      else if (row == d.experts) res[r] += qf_part<BITS>(gw, gs, gb, d.gsh, 0, d.in, k0, xs, xsum);
    }
  }
  for (uint r = 0; r < QF_ROWS; r++) res[r] = simd_sum(res[r]);
  if (lane != 0) return;
  for (uint r = 0; r < QF_ROWS; r++) {
    uint row = row0 + r;
    if (row < d.experts) logits[t * d.experts + row] = res[r];
    else if (row == d.experts) sgate[t] = res[r];
  }
}

kernel void router_qmv_4(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                         device const ushort* b [[buffer(2)]], device const uint* gw [[buffer(3)]],
                         device const ushort* gs [[buffer(4)]], device const ushort* gb [[buffer(5)]],
                         device const float* x [[buffer(6)]], device float* logits [[buffer(7)]],
                         device float* sgate [[buffer(8)]], constant RouterQDims& d [[buffer(9)]],
                         uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]]) {
  qf_router<4>(w, s, b, gw, gs, gb, x, logits, sgate, d, tg, sg, lane);
}

kernel void router_qmv_8(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                         device const ushort* b [[buffer(2)]], device const uint* gw [[buffer(3)]],
                         device const ushort* gs [[buffer(4)]], device const ushort* gb [[buffer(5)]],
                         device const float* x [[buffer(6)]], device float* logits [[buffer(7)]],
                         device float* sgate [[buffer(8)]], constant RouterQDims& d [[buffer(9)]],
                         uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]]) {
  qf_router<8>(w, s, b, gw, gs, gb, x, logits, sgate, d, tg, sg, lane);
}
