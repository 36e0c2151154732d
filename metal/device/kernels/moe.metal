// Mixture of experts: routing on the GPU (ids never leave it), gathered experts for decode, and
// GPU-side grouping of tokens by expert for prefill.

struct RouterDims {
  uint experts;  // E <= 1024
  uint in;       // H
  uint k;        // top-k <= 32
  uint bits;     // router and shared-expert-gate bits (8 in the MLX checkpoint)
  uint rsh, gsh; // router and shared-expert-gate shifts as in QDims
};

// For token t = threadgroup index (x: [T, H]): router logits (one SIMD group per 1/32 of the rows),
// fp32 softmax, top-k (ties to the lower id), renormalised weights; and the shared expert's gate
// logit. One threadgroup per token of any whole number of SIMD groups up to 1024 threads (the host
// takes the pipeline's limit). ids, wts: [T, k]; sgate: [T].
kernel void router_topk(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                        device const ushort* b [[buffer(2)]], device const uint* gw [[buffer(3)]],
                        device const ushort* gs [[buffer(4)]], device const ushort* gb [[buffer(5)]],
                        device const float* x [[buffer(6)]], device int* ids [[buffer(7)]],
                        device float* wts [[buffer(8)]], device float* sgate [[buffer(9)]],
                        constant RouterDims& d [[buffer(10)]], uint t [[threadgroup_position_in_grid]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                        uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float logits[1024];
  device const float* xt = x + t * d.in;
  for (uint row = sg; row <= d.experts; row += nsg) {
    float v = row < d.experts ? qrow_dot(w, s, b, row, d.in, d.bits, d.rsh, xt, lane)
                              : qrow_dot(gw, gs, gb, 0, d.in, d.bits, d.gsh, xt, lane);
    if (lane == 0) {
      if (row < d.experts) logits[row] = isnan(v) ? -INFINITY : v;  // a NaN logit ranks last
      else sgate[t] = v;
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg != 0) return;
  float mx = -INFINITY;
  for (uint e = lane; e < d.experts; e += 32u) mx = max(mx, logits[e]);
  mx = simd_max(mx);
  float z = 0.0f;
  for (uint e = lane; e < d.experts; e += 32u) z += exp(logits[e] - mx);
  z = simd_sum(z);
  // Each lane owns experts lane, lane+32, ... (bit e/32 of taken marks the chosen ones), and every
  // pick is an expert not picked before (k <= E), even among -inf logits: never id -1.
  float mine = 0.0f, total = 0.0f;
  uint taken = 0u;
  for (uint j = 0; j < d.k; j++) {
    float best = -INFINITY;
    uint bi = 0xffffffffu;
    for (uint e = lane; e < d.experts; e += 32u)
      if (((taken >> (e / 32u)) & 1u) == 0u && (bi == 0xffffffffu || logits[e] > best)) { best = logits[e]; bi = e; }
    float m = simd_max(best);
    uint win = simd_min(bi != 0xffffffffu && best == m ? bi : 0xffffffffu);
    float p = exp(m - mx) / z;
    total += p;
    if (lane == j) mine = p;
    if (lane == 0) ids[t * d.k + j] = int(win);
    if (lane == win % 32u) taken |= 1u << (win / 32u);
  }
  if (lane < d.k) wts[t * d.k + lane] = mine / total;
}

struct MoEDims {
  uint hidden;  // H
  uint inter;   // I, routed expert width
  uint shared;  // Is, shared expert width
  uint k;       // experts per token
  uint bits;
  uint act_stride;  // row stride of act: max(I, Is)
  uint gsh, ush, sgsh, sush, dsh, sdsh;  // shifts as in QDims: gate, up, shared gate/up, down, shared down
};

// Decode: act[j] = silu(Wg[e_j] x) * (Wu[e_j] x) for slot j < k (e_j = ids[j]) and, for slot k,
// the shared expert. Grid (ceil(max(I,Is)/8), k+1) threadgroups of 8 SIMD groups, one row each.
kernel void moe_gate_up(device const uint* gw [[buffer(0)]], device const ushort* gs [[buffer(1)]],
                        device const ushort* gb [[buffer(2)]], device const uint* uw [[buffer(3)]],
                        device const ushort* us [[buffer(4)]], device const ushort* ub [[buffer(5)]],
                        device const uint* sgw [[buffer(6)]], device const ushort* sgs [[buffer(7)]],
                        device const ushort* sgb [[buffer(8)]], device const uint* suw [[buffer(9)]],
                        device const ushort* sus [[buffer(10)]], device const ushort* sub [[buffer(11)]],
                        device const int* ids [[buffer(12)]], device const float* x [[buffer(13)]],
                        device float* act [[buffer(14)]], constant MoEDims& d [[buffer(15)]],
                        uint2 tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]]) {
  uint slot = tg.y, r = tg.x * 8u + sg;
  float g, u;
  if (slot < d.k) {
    if (r >= d.inter) return;
    uint row = uint(ids[slot]) * d.inter + r;
    g = qrow_dot(gw, gs, gb, row, d.hidden, d.bits, d.gsh, x, lane);
    u = qrow_dot(uw, us, ub, row, d.hidden, d.bits, d.ush, x, lane);
  } else {
    if (r >= d.shared) return;
    g = qrow_dot(sgw, sgs, sgb, r, d.hidden, d.bits, d.sgsh, x, lane);
    u = qrow_dot(suw, sus, sub, r, d.hidden, d.bits, d.sush, x, lane);
  }
  if (lane == 0) act[slot * d.act_stride + r] = silu_f(g) * u;
}

// Decode: h[row] += Σ_j wts[j]·(Wd[e_j] act[j])[row] + sigmoid(sgate)·(Wsd act[k])[row] — the
// weighted sum, the gated shared expert and the residual add in one pass over the down weights.
// Grid ceil(H/8) threadgroups of 8 SIMD groups.
kernel void moe_down(device const uint* dw [[buffer(0)]], device const ushort* ds [[buffer(1)]],
                     device const ushort* db [[buffer(2)]], device const uint* sdw [[buffer(3)]],
                     device const ushort* sds [[buffer(4)]], device const ushort* sdb [[buffer(5)]],
                     device const int* ids [[buffer(6)]], device const float* wts [[buffer(7)]],
                     device const float* sgate [[buffer(8)]], device const float* act [[buffer(9)]],
                     device float* h [[buffer(10)]], constant MoEDims& d [[buffer(11)]],
                     uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]]) {
  uint row = tg * 8u + sg;
  if (row >= d.hidden) return;
  float acc = 0.0f;
  for (uint j = 0; j < d.k; j++) {
    uint e = uint(ids[j]);
    acc += wts[j] * qrow_dot(dw, ds, db, e * d.hidden + row, d.inter, d.bits, d.dsh, act + j * d.act_stride, lane);
  }
  acc += sigmoid_f(sgate[0]) * qrow_dot(sdw, sds, sdb, row, d.shared, d.bits, d.sdsh, act + d.k * d.act_stride, lane);
  if (lane == 0) h[row] += acc;
}

struct GroupDims {
  uint n;        // T*k routed slots
  uint experts;  // E
};

// Prefill grouping, step 1: counts[e] = number of slots routed to e (counts zeroed by the host).
kernel void moe_count(device const int* ids [[buffer(0)]], device atomic_uint* counts [[buffer(1)]],
                      constant GroupDims& d [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < d.n) atomic_fetch_add_explicit(&counts[ids[i]], 1u, memory_order_relaxed);
}

// Step 2: offsets[e] = Σ_{e'<e} counts[e'] (offsets[E] = n) and cursor[e] = offsets[e].
// One threadgroup of 1024 threads (E <= 1024): SIMD prefix sums, then across SIMD groups.
kernel void moe_scan(device const uint* counts [[buffer(0)]], device uint* offsets [[buffer(1)]],
                     device uint* cursor [[buffer(2)]], constant GroupDims& d [[buffer(3)]],
                     uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup uint sums[32];
  uint c = tid < d.experts ? counts[tid] : 0u;
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
  if (tid < d.experts) {
    offsets[tid] = off;
    cursor[tid] = off;
  }
  if (tid == d.experts - 1u) offsets[d.experts] = off + c;
}

// Step 3: order[cursor[e]++] = slot, so order lists the slots of expert e in
// [offsets[e], offsets[e+1]). The order within an expert is whatever the atomics give; each slot
// keeps its own output row, so results do not depend on it.
kernel void moe_scatter(device const int* ids [[buffer(0)]], device atomic_uint* cursor [[buffer(1)]],
                        device uint* order [[buffer(2)]], constant GroupDims& d [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
  if (i >= d.n) return;
  uint at = atomic_fetch_add_explicit(&cursor[ids[i]], 1u, memory_order_relaxed);
  order[at] = i;
}

// y: [T, H] += Σ_j wts[t,j]·out[t*k+j] + sigmoid(sgate[t])·shared[t]: the prefill weighted sum,
// gated shared expert and residual add. One thread per element; grid (ceil(H/256), T).
kernel void moe_combine(device const float* out [[buffer(0)]], device const float* wts [[buffer(1)]],
                        device const float* sgate [[buffer(2)]], device const float* shared [[buffer(3)]],
                        device float* y [[buffer(4)]], constant MoEDims& d [[buffer(5)]],
                        uint2 gid [[thread_position_in_grid]]) {
  uint i = gid.x, t = gid.y;
  if (i >= d.hidden) return;
  float acc = sigmoid_f(sgate[t]) * shared[t * d.hidden + i];
  for (uint j = 0; j < d.k; j++) acc += wts[t * d.k + j] * out[(t * d.k + j) * d.hidden + i];
  y[t * d.hidden + i] += acc;
}

struct EltDims {
  uint n;
};

// g = silu(g) * u, elementwise over n values.
kernel void swiglu(device float* g [[buffer(0)]], device const float* u [[buffer(1)]],
                   constant EltDims& d [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  if (i < d.n) g[i] = silu_f(g[i]) * u[i];
}
