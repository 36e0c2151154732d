// Decode MoE on the qmv_fast design (qmv_fast.metal): the routing top-k after router_qmv_*, and
// the routed + shared experts' gate/up and down mat-vecs, specialised per bit width.

struct RouteDims {
  uint experts;  // E <= 1024
  uint k;        // top-k <= 32
  uint tokens;   // T
};

// For each token t (one SIMD group per token, any number of SIMD groups per threadgroup, so the
// host fits the pipeline's thread limit): logits [T, E] → fp32 softmax, top-k (ties to the lower
// id), weights renormalised over the k; ids, wts: [T, k]. A NaN logit ranks as -inf, and every pick
// is an expert not picked before (k <= E): never id -1, never a repeat. All logits -inf or NaN give
// equal weights 1/k. Grid ceil(T / SIMD groups per threadgroup) threadgroups.
kernel void router_softmax_topk(device const float* logits [[buffer(0)]], device int* ids [[buffer(1)]],
                                device float* wts [[buffer(2)]], constant RouteDims& d [[buffer(3)]],
                                uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                                uint lane [[thread_index_in_simdgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  uint t = tg * nsg + sg;
  if (t >= d.tokens) return;
  device const float* lt = logits + t * d.experts;
  // Lane l owns experts l, l+32, ...: at most 32 each (E <= 1024), held in registers.
  float v[32];
  uint n = 0;
  float mx = -INFINITY;
  for (uint e = lane; e < d.experts; e += 32u, n++) {
    float x = lt[e];
    v[n] = isnan(x) ? -INFINITY : x;
    mx = max(mx, v[n]);
  }
  mx = simd_max(mx);
  float z = 0.0f;
  for (uint i = 0; i < n; i++) z += exp(v[i] - mx);
  z = simd_sum(z);
  bool undefined = mx == -INFINITY;  // no finite logit: the softmax is undefined
  float mine = 0.0f, total = 0.0f;
  uint taken = 0u;  // bit i: expert lane + 32i already picked
  for (uint j = 0; j < d.k; j++) {
    float best = -INFINITY;
    uint bi = 0xffffffffu;
    for (uint i = 0; i < n; i++)
      if (((taken >> i) & 1u) == 0u && (bi == 0xffffffffu || v[i] > best)) {
        best = v[i];
        bi = lane + 32u * i;
      }
    float m = simd_max(best);
    uint win = simd_min(bi != 0xffffffffu && best == m ? bi : 0xffffffffu);
    float p = undefined ? 1.0f : exp(m - mx) / z;
    total += p;
    if (lane == j) mine = p;
    if (lane == 0) ids[t * d.k + j] = int(win);
    if (lane == win % 32u) taken |= 1u << (win / 32u);
  }
  if (lane < d.k) wts[t * d.k + lane] = mine / total;
}

// Decode gate/up: act[j] = silu(Wg[e_j] x) * (Wu[e_j] x) for slot j < k (e_j = ids[j]) and, for
// slot k, the shared expert; x: [H], act: [k+1, act_stride]. Each SIMD group takes QF_ROWS rows of
// gate and of up over one x slice per step. Grid (ceil(max(I, Is)/8), k+1) threadgroups of 64.
template <uint BITS>
inline void qf_gate_up(device const uint* gw, device const ushort* gs, device const ushort* gb, device const uint* uw,
                       device const ushort* us, device const ushort* ub, device const uint* sgw,
                       device const ushort* sgs, device const ushort* sgb, device const uint* suw,
                       device const ushort* sus, device const ushort* sub, device const int* ids,
                       device const float* x, device float* act, constant MoEDims& d, uint2 tg, uint sg, uint lane) {
  constexpr uint VPT = QF_WPT * 32u / BITS;
  uint slot = tg.y, r0 = (tg.x * QF_SG + sg) * QF_ROWS;
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
  float g[QF_ROWS], u[QF_ROWS];
  for (uint r = 0; r < QF_ROWS; r++) g[r] = u[r] = 0.0f;
  for (uint k0 = lane * VPT; k0 < d.hidden; k0 += 32u * VPT) {
    float xs[VPT];
    float xsum = qf_load_x<BITS>(x, k0, xs);
    for (uint r = 0; r < QF_ROWS; r++) {
      if (r0 + r >= width) break;
      g[r] += qf_part<BITS>(w1, s1, b1, sh1, base + r0 + r, d.hidden, k0, xs, xsum);
      u[r] += qf_part<BITS>(w2, s2, b2, sh2, base + r0 + r, d.hidden, k0, xs, xsum);
    }
  }
  for (uint r = 0; r < QF_ROWS; r++) {
    g[r] = simd_sum(g[r]);
    u[r] = simd_sum(u[r]);
  }
  if (lane != 0) return;
  for (uint r = 0; r < QF_ROWS; r++)
    if (r0 + r < width) act[slot * d.act_stride + r0 + r] = silu_f(g[r]) * u[r];
}

// Decode down: h[row] += Σ_j wts[j]·(Wd[e_j] act[j])[row] + sigmoid(sgate)·(Wsd act[k])[row] — the
// weighted sum, the gated shared expert and the residual add in one pass over the down weights;
// each lane weights its partial sums before the one simd_sum per row. Grid ceil(H/8) threadgroups
// of 64.
template <uint BITS>
inline void qf_down(device const uint* dw, device const ushort* ds, device const ushort* db, device const uint* sdw,
                    device const ushort* sds, device const ushort* sdb, device const int* ids,
                    device const float* wts, device const float* sgate, device const float* act, device float* h,
                    constant MoEDims& d, uint tg, uint sg, uint lane) {
  constexpr uint VPT = QF_WPT * 32u / BITS;
  uint r0 = (tg * QF_SG + sg) * QF_ROWS;
  if (r0 >= d.hidden) return;
  float res[QF_ROWS];
  for (uint r = 0; r < QF_ROWS; r++) res[r] = 0.0f;
  for (uint j = 0; j <= d.k; j++) {
    bool routed = j < d.k;
    uint in = routed ? d.inter : d.shared;
    uint base = routed ? uint(ids[j]) * d.hidden : 0u;
    float wj = routed ? wts[j] : sigmoid_f(sgate[0]);
    device const uint* w = routed ? dw : sdw;
    device const ushort* s = routed ? ds : sds;
    device const ushort* b = routed ? db : sdb;
    uint sh = routed ? d.dsh : d.sdsh;
    device const float* x = act + j * d.act_stride;
    for (uint k0 = lane * VPT; k0 < in; k0 += 32u * VPT) {
      float xs[VPT];
      float xsum = qf_load_x<BITS>(x, k0, xs);
      for (uint r = 0; r < QF_ROWS; r++) {
        if (r0 + r >= d.hidden) break;
        res[r] += wj * qf_part<BITS>(w, s, b, sh, base + r0 + r, in, k0, xs, xsum);
      }
    }
  }
  for (uint r = 0; r < QF_ROWS; r++) res[r] = simd_sum(res[r]);
  if (lane != 0) return;
  for (uint r = 0; r < QF_ROWS; r++)
    if (r0 + r < d.hidden) h[r0 + r] += res[r];
}

kernel void moe_gate_up_4(device const uint* gw [[buffer(0)]], device const ushort* gs [[buffer(1)]],
                          device const ushort* gb [[buffer(2)]], device const uint* uw [[buffer(3)]],
                          device const ushort* us [[buffer(4)]], device const ushort* ub [[buffer(5)]],
                          device const uint* sgw [[buffer(6)]], device const ushort* sgs [[buffer(7)]],
                          device const ushort* sgb [[buffer(8)]], device const uint* suw [[buffer(9)]],
                          device const ushort* sus [[buffer(10)]], device const ushort* sub [[buffer(11)]],
                          device const int* ids [[buffer(12)]], device const float* x [[buffer(13)]],
                          device float* act [[buffer(14)]], constant MoEDims& d [[buffer(15)]],
                          uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]]) {
  qf_gate_up<4>(gw, gs, gb, uw, us, ub, sgw, sgs, sgb, suw, sus, sub, ids, x, act, d, tg, sg, lane);
}

kernel void moe_gate_up_8(device const uint* gw [[buffer(0)]], device const ushort* gs [[buffer(1)]],
                          device const ushort* gb [[buffer(2)]], device const uint* uw [[buffer(3)]],
                          device const ushort* us [[buffer(4)]], device const ushort* ub [[buffer(5)]],
                          device const uint* sgw [[buffer(6)]], device const ushort* sgs [[buffer(7)]],
                          device const ushort* sgb [[buffer(8)]], device const uint* suw [[buffer(9)]],
                          device const ushort* sus [[buffer(10)]], device const ushort* sub [[buffer(11)]],
                          device const int* ids [[buffer(12)]], device const float* x [[buffer(13)]],
                          device float* act [[buffer(14)]], constant MoEDims& d [[buffer(15)]],
                          uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]]) {
  qf_gate_up<8>(gw, gs, gb, uw, us, ub, sgw, sgs, sgb, suw, sus, sub, ids, x, act, d, tg, sg, lane);
}

kernel void moe_down_4(device const uint* dw [[buffer(0)]], device const ushort* ds [[buffer(1)]],
                       device const ushort* db [[buffer(2)]], device const uint* sdw [[buffer(3)]],
                       device const ushort* sds [[buffer(4)]], device const ushort* sdb [[buffer(5)]],
                       device const int* ids [[buffer(6)]], device const float* wts [[buffer(7)]],
                       device const float* sgate [[buffer(8)]], device const float* act [[buffer(9)]],
                       device float* h [[buffer(10)]], constant MoEDims& d [[buffer(11)]],
                       uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]]) {
  qf_down<4>(dw, ds, db, sdw, sds, sdb, ids, wts, sgate, act, h, d, tg, sg, lane);
}

kernel void moe_down_8(device const uint* dw [[buffer(0)]], device const ushort* ds [[buffer(1)]],
                       device const ushort* db [[buffer(2)]], device const uint* sdw [[buffer(3)]],
                       device const ushort* sds [[buffer(4)]], device const ushort* sdb [[buffer(5)]],
                       device const int* ids [[buffer(6)]], device const float* wts [[buffer(7)]],
                       device const float* sgate [[buffer(8)]], device const float* act [[buffer(9)]],
                       device float* h [[buffer(10)]], constant MoEDims& d [[buffer(11)]],
                       uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]]) {
  qf_down<8>(dw, ds, db, sdw, sds, sdb, ids, wts, sgate, act, h, d, tg, sg, lane);
}
