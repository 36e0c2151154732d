// Decode mat-vecs with the RMSNorm of their input fused in, on the qmv_fast design (see
// qmv_fast.metal; this file keeps its own copy of the inner loop so the two can change apart):
//   y = W · (x / rms(x) ⊙ nw),  rms(x) = sqrt(mean(x²) + eps).
// W · (x ⊙ nw) is linear in x, so each lane dots the rows with x ⊙ nw as it loads it and the per-row
// totals are scaled by r = rsqrt(Σx²/in + eps) after the simd_sum. Σx² comes from the same loads:
// a SIMD group's lanes read x's column slices exactly once between them (in is a multiple of 64,
// hence of the 16- or 8-value lane slice), so one more simd_sum gives every SIMD group the whole
// norm with no extra pass and no threadgroup barrier. x (the residual stream) is only read; the
// normed vector is never written. nw is the norm weight as the unfused rms_norm takes it.
//   - a threadgroup is QN_SG = 2 SIMD groups of QN_ROWS = 4 rows: 8 rows, 64 threads;
//   - per step a lane reads QN_WPT = 2 packed words of a row (one group of 64 holds them both);
//   - tails: rows past `out` are skipped (uniform per SIMD group); lanes whose slice starts past
//     `in` do no work.

#define QN_SG 2u
#define QN_ROWS 4u
#define QN_WPT 2u

// y: [out] = W: [out, in] · norm(x: [in]); eps the RMSNorm epsilon.
struct QNormDims {
  uint out;
  uint in;
  uint sh;  // byte shifts as in QDims
  float eps;
};

// The router's and the shared expert gate's E+1 rows over norm(x) (RouterQDims plus eps).
struct RouterNormDims {
  uint experts;
  uint in;
  uint rsh, gsh;
  float eps;
};

// A lane's slice of x ⊙ nw for columns [k0, k0 + VPT), pre-scaled as qmv_fast's:
// xs[j] = x[k0+j]·nw[k0+j]·2^-(BITS·(j mod PER)). Returns Σ x·nw over the slice; adds Σ x² to ss.
template <uint BITS>
inline float qn_load_x(device const float* x, device const float* nw, uint k0, thread float* xs, thread float& ss) {
  constexpr uint PER = 32u / BITS;
  float sum = 0.0f;
  for (uint i = 0; i < QN_WPT * PER; i++) {
    float v = x[k0 + i];
    ss += v * v;
    v *= nw[k0 + i];
    sum += v;
    xs[i] = v * (1.0f / float(1u << (BITS * (i % PER))));
  }
  return sum;
}

// One lane's part of row `row` · xs over its slice at column k0: s·Σ q·xs + b·Σ xs (qf_part's math).
template <uint BITS>
inline float qn_part(device const uint* w, device const ushort* s, device const ushort* b, uint sh, uint row,
                     uint in, uint k0, thread const float* xs, float xsum) {
  constexpr uint PER = 32u / BITS;
  constexpr uint MASK = (1u << BITS) - 1u;
  uint wi = row * (in / PER) + k0 / PER;
  float acc = 0.0f;
  for (uint p = 0; p < QN_WPT; p++) {
    uint word = qword(w, wi + p, wshift(sh));
    for (uint j = 0; j < PER; j++) acc += xs[p * PER + j] * float(word & (MASK << (BITS * j)));
  }
  uint g = row * (in / LILY_GROUP) + k0 / LILY_GROUP;
  return qbf16(s, g, sshift(sh)) * acc + qbf16(b, g, bshift(sh)) * xsum;
}

// r = 1/rms(x) from a lane's Σx² (a SIMD-group-wide sum: every lane of the group must call it).
inline float qn_inv_rms(float ss, uint in, float eps) { return rsqrt(simd_sum(ss) / float(in) + eps); }

// y = W · norm(x) for the threadgroup's 8 rows.
template <uint BITS>
inline void qn_qmv(device const uint* w, device const ushort* s, device const ushort* b, device const float* x,
                   device const float* nw, device float* y, constant QNormDims& d, uint tg, uint sg, uint lane) {
  constexpr uint VPT = QN_WPT * 32u / BITS;
  uint row0 = (tg * QN_SG + sg) * QN_ROWS;
  if (row0 >= d.out) return;
  float res[QN_ROWS];
  for (uint r = 0; r < QN_ROWS; r++) res[r] = 0.0f;
  float ss = 0.0f;
  for (uint k0 = lane * VPT; k0 < d.in; k0 += 32u * VPT) {
    float xs[VPT];
    float xsum = qn_load_x<BITS>(x, nw, k0, xs, ss);
    for (uint r = 0; r < QN_ROWS; r++)
      if (row0 + r < d.out) res[r] += qn_part<BITS>(w, s, b, d.sh, row0 + r, d.in, k0, xs, xsum);
  }
  float rn = qn_inv_rms(ss, d.in, d.eps);
  for (uint r = 0; r < QN_ROWS; r++) res[r] = simd_sum(res[r]) * rn;
  if (lane != 0) return;
  for (uint r = 0; r < QN_ROWS; r++)
    if (row0 + r < d.out) y[row0 + r] = res[r];
}

// y: [out] = W: [out, in] · norm(x: [in]) with norm weight nw: [in]. Grid ceil(out/8)
// threadgroups of 64 threads.
kernel void qmv_norm_4(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                       device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                       device const float* nw [[buffer(4)]], device float* y [[buffer(5)]],
                       constant QNormDims& d [[buffer(6)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  qn_qmv<4>(w, s, b, x, nw, y, d, tg, sg, lane);
}

kernel void qmv_norm_8(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                       device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                       device const float* nw [[buffer(4)]], device float* y [[buffer(5)]],
                       constant QNormDims& d [[buffer(6)]], uint tg [[threadgroup_position_in_grid]],
                       uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  qn_qmv<8>(w, s, b, x, nw, y, d, tg, sg, lane);
}

// For token t = threadgroup y (x: [T, H], the residual): logits [T, E] = router · norm(x) and
// sgate [T] = the shared expert gate's row · norm(x), one mat-vec over E+1 rows (row E the gate).
// Grid (ceil((E+1)/8), T) threadgroups of 64 threads.
template <uint BITS>
inline void qn_router(device const uint* w, device const ushort* s, device const ushort* b, device const uint* gw,
                      device const ushort* gs, device const ushort* gb, device const float* x, device const float* nw,
                      device float* logits, device float* sgate, constant RouterNormDims& d, uint2 tg, uint sg,
                      uint lane) {
  constexpr uint VPT = QN_WPT * 32u / BITS;
  uint row0 = (tg.x * QN_SG + sg) * QN_ROWS, t = tg.y;
  if (row0 > d.experts) return;
  device const float* xt = x + t * d.in;
  float res[QN_ROWS];
  for (uint r = 0; r < QN_ROWS; r++) res[r] = 0.0f;
  float ss = 0.0f;
  for (uint k0 = lane * VPT; k0 < d.in; k0 += 32u * VPT) {
    float xs[VPT];
    float xsum = qn_load_x<BITS>(xt, nw, k0, xs, ss);
    for (uint r = 0; r < QN_ROWS; r++) {
      uint row = row0 + r;
      if (row < d.experts) res[r] += qn_part<BITS>(w, s, b, d.rsh, row, d.in, k0, xs, xsum);
      else if (row == d.experts) res[r] += qn_part<BITS>(gw, gs, gb, d.gsh, 0, d.in, k0, xs, xsum);
    }
  }
  float rn = qn_inv_rms(ss, d.in, d.eps);
  for (uint r = 0; r < QN_ROWS; r++) res[r] = simd_sum(res[r]) * rn;
  if (lane != 0) return;
  for (uint r = 0; r < QN_ROWS; r++) {
    uint row = row0 + r;
    if (row < d.experts) logits[t * d.experts + row] = res[r];
    else if (row == d.experts) sgate[t] = res[r];
  }
}

kernel void router_qmv_norm_4(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                              device const ushort* b [[buffer(2)]], device const uint* gw [[buffer(3)]],
                              device const ushort* gs [[buffer(4)]], device const ushort* gb [[buffer(5)]],
                              device const float* x [[buffer(6)]], device const float* nw [[buffer(7)]],
                              device float* logits [[buffer(8)]], device float* sgate [[buffer(9)]],
                              constant RouterNormDims& d [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                              uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  qn_router<4>(w, s, b, gw, gs, gb, x, nw, logits, sgate, d, tg, sg, lane);
}

kernel void router_qmv_norm_8(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                              device const ushort* b [[buffer(2)]], device const uint* gw [[buffer(3)]],
                              device const ushort* gs [[buffer(4)]], device const ushort* gb [[buffer(5)]],
                              device const float* x [[buffer(6)]], device const float* nw [[buffer(7)]],
                              device float* logits [[buffer(8)]], device float* sgate [[buffer(9)]],
                              constant RouterNormDims& d [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                              uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  qn_router<8>(w, s, b, gw, gs, gb, x, nw, logits, sgate, d, tg, sg, lane);
}

// Decode gate/up over norm(x): act[j] = silu(Wg[e_j] n) * (Wu[e_j] n), n = norm(x) with weight nw,
// for slot j < k (e_j = ids[j]) and, for slot k, the shared expert; x: [H] (the residual), act:
// [k+1, act_stride]. nd.eps is the norm's epsilon (nd.n = H). Grid (ceil(max(I, Is)/8), k+1)
// threadgroups of 64.
template <uint BITS>
inline void qn_gate_up(device const uint* gw, device const ushort* gs, device const ushort* gb, device const uint* uw,
                       device const ushort* us, device const ushort* ub, device const uint* sgw,
                       device const ushort* sgs, device const ushort* sgb, device const uint* suw,
                       device const ushort* sus, device const ushort* sub, device const int* ids,
                       device const float* x, device const float* nw, device float* act, constant MoEDims& d,
                       constant NormDims& nd, uint2 tg, uint sg, uint lane) {
  constexpr uint VPT = QN_WPT * 32u / BITS;
  uint slot = tg.y, r0 = (tg.x * QN_SG + sg) * QN_ROWS;
  bool routed = slot < d.k;
  uint width = routed ? d.inter : d.shared;
  if (r0 >= width) return;
  // Routed experts' rows follow each other in the stacked matrices: expert e's row r is e·I + r.
  uint base = routed ? uint(ids[slot]) * d.inter : 0u;
  device const uint* w1 = routed ? gw : sgw;
  device const ushort* s1 = routed ? gs : sgs;
  device const ushort* b1 = routed ? gb : sgb;
  device const uint* w2 = routed ? uw : suw;
  device const ushort* s2 = routed ? us : sus;
  device const ushort* b2 = routed ? ub : sub;
  uint sh1 = routed ? d.gsh : d.sgsh, sh2 = routed ? d.ush : d.sush;
  float g[QN_ROWS], u[QN_ROWS];
  for (uint r = 0; r < QN_ROWS; r++) g[r] = u[r] = 0.0f;
  float ss = 0.0f;
  for (uint k0 = lane * VPT; k0 < d.hidden; k0 += 32u * VPT) {
    float xs[VPT];
    float xsum = qn_load_x<BITS>(x, nw, k0, xs, ss);
    for (uint r = 0; r < QN_ROWS; r++) {
      if (r0 + r >= width) break;
      g[r] += qn_part<BITS>(w1, s1, b1, sh1, base + r0 + r, d.hidden, k0, xs, xsum);
      u[r] += qn_part<BITS>(w2, s2, b2, sh2, base + r0 + r, d.hidden, k0, xs, xsum);
    }
  }
  float rn = qn_inv_rms(ss, d.hidden, nd.eps);
  for (uint r = 0; r < QN_ROWS; r++) {
    g[r] = simd_sum(g[r]) * rn;
    u[r] = simd_sum(u[r]) * rn;
  }
  if (lane != 0) return;
  for (uint r = 0; r < QN_ROWS; r++)
    if (r0 + r < width) act[slot * d.act_stride + r0 + r] = silu_f(g[r]) * u[r];
}

kernel void moe_gate_up_norm_4(device const uint* gw [[buffer(0)]], device const ushort* gs [[buffer(1)]],
                               device const ushort* gb [[buffer(2)]], device const uint* uw [[buffer(3)]],
                               device const ushort* us [[buffer(4)]], device const ushort* ub [[buffer(5)]],
                               device const uint* sgw [[buffer(6)]], device const ushort* sgs [[buffer(7)]],
                               device const ushort* sgb [[buffer(8)]], device const uint* suw [[buffer(9)]],
                               device const ushort* sus [[buffer(10)]], device const ushort* sub [[buffer(11)]],
                               device const int* ids [[buffer(12)]], device const float* x [[buffer(13)]],
                               device const float* nw [[buffer(14)]], device float* act [[buffer(15)]],
                               constant MoEDims& d [[buffer(16)]], constant NormDims& nd [[buffer(17)]],
                               uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]]) {
  qn_gate_up<4>(gw, gs, gb, uw, us, ub, sgw, sgs, sgb, suw, sus, sub, ids, x, nw, act, d, nd, tg, sg, lane);
}

kernel void moe_gate_up_norm_8(device const uint* gw [[buffer(0)]], device const ushort* gs [[buffer(1)]],
                               device const ushort* gb [[buffer(2)]], device const uint* uw [[buffer(3)]],
                               device const ushort* us [[buffer(4)]], device const ushort* ub [[buffer(5)]],
                               device const uint* sgw [[buffer(6)]], device const ushort* sgs [[buffer(7)]],
                               device const ushort* sgb [[buffer(8)]], device const uint* suw [[buffer(9)]],
                               device const ushort* sus [[buffer(10)]], device const ushort* sub [[buffer(11)]],
                               device const int* ids [[buffer(12)]], device const float* x [[buffer(13)]],
                               device const float* nw [[buffer(14)]], device float* act [[buffer(15)]],
                               constant MoEDims& d [[buffer(16)]], constant NormDims& nd [[buffer(17)]],
                               uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]]) {
  qn_gate_up<8>(gw, gs, gb, uw, us, ub, sgw, sgs, sgb, suw, sus, sub, ids, x, nw, act, d, nd, tg, sg, lane);
}
