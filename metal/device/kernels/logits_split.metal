// Next-token selection where the logits live, split over the GPU: logits_topk_part gives each
// threadgroup a chunk of the vocabulary (its log-sum-exp terms and its own top k), then
// logits_topk_merge merges the chunks' sorted lists into the top k (k = 1 is argmax) and the
// log-sum-exp. Ties go to the lower id; a NaN logit ranks as -inf.
// Only k ids, k logits and one float come back to the CPU.

#define LT_ELEMS 16u  // logits per thread of logits_topk_part, held in registers

struct TopKDims {
  uint n;      // vocabulary
  uint k;      // <= 64
  uint chunk;  // logits per part: LT_ELEMS × the part kernel's threads
  uint parts;  // ceil(n / chunk) <= 1024
};

// The better of two (value, id) candidates: the larger value, then the lower id; id 0xffffffff is
// no candidate.
inline bool lt_better(float v, uint i, float bv, uint bi) {
  return i != 0xffffffffu && (bi == 0xffffffffu || v > bv || (v == bv && i < bi));
}

// Part p = threadgroup over x [p·chunk, min(n, (p+1)·chunk)) with chunk / LT_ELEMS threads (whole
// SIMD groups, up to 1024): pstat [parts, 2] = (max, Σ exp(x − max)) of the chunk (0 sum for a
// chunk without a finite max); pids, pvals [parts, k] = the chunk's top k in order (id 0xffffffff
// past the chunk's end).
kernel void logits_topk_part(device const float* x [[buffer(0)]], device uint* pids [[buffer(1)]],
                             device float* pvals [[buffer(2)]], device float* pstat [[buffer(3)]],
                             constant TopKDims& d [[buffer(4)]], uint p [[threadgroup_position_in_grid]],
                             uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                             uint lane [[thread_index_in_simdgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float tv[32];
  threadgroup uint ti[32];
  uint nt = nsg * 32u, base = p * d.chunk;
  // Thread tid holds logits base + tid + e·nt, e < LT_ELEMS (coalesced); bit e of taken: picked.
  float v[LT_ELEMS];
  float raw_max = -INFINITY;
  for (uint e = 0; e < LT_ELEMS; e++) {
    uint i = base + tid + e * nt;
    float xi = i < d.n ? x[i] : -INFINITY;
    raw_max = max(raw_max, xi);
    v[e] = isnan(xi) ? -INFINITY : xi;
  }
  float m = simd_max(raw_max);
  if (lane == 0) tv[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float M = -INFINITY;
  for (uint s = 0; s < nsg; s++) M = max(M, tv[s]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float z = 0.0f;
  if (M != -INFINITY)
    for (uint e = 0; e < LT_ELEMS; e++) {
      uint i = base + tid + e * nt;
      if (i < d.n) z += exp(x[i] - M);  // x itself: a NaN logit makes the sum NaN, as it should
    }
  z = simd_sum(z);
  if (lane == 0) tv[sg] = z;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    float t = 0.0f;
    for (uint s = 0; s < nsg; s++) t += tv[s];
    pstat[2 * p] = M;
    pstat[2 * p + 1] = t;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint taken = 0u;
  for (uint j = 0; j < d.k; j++) {
    float best = -INFINITY;
    uint bi = 0xffffffffu;
    for (uint e = 0; e < LT_ELEMS; e++) {
      uint i = base + tid + e * nt;
      if (i < d.n && ((taken >> e) & 1u) == 0u && lt_better(v[e], i, best, bi)) {
        best = v[e];
        bi = i;
      }
    }
    float bm = simd_max(bi != 0xffffffffu ? best : -INFINITY);
    uint w = simd_min(bi != 0xffffffffu && best == bm ? bi : 0xffffffffu);
    if (lane == 0) {
      tv[sg] = bm;
      ti[sg] = w;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float gv = -INFINITY;
    uint gi = 0xffffffffu;
    for (uint s = 0; s < nsg; s++)
      if (lt_better(tv[s], ti[s], gv, gi)) {
        gv = tv[s];
        gi = ti[s];
      }
    if (gi != 0xffffffffu && gi >= base + tid && (gi - base - tid) % nt == 0u) taken |= 1u << ((gi - base - tid) / nt);
    if (tid == 0) {
      pids[p * d.k + j] = gi;
      pvals[p * d.k + j] = gv;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

// One threadgroup of any whole number of SIMD groups up to 1024: merges the parts' sorted lists
// (pids, pvals [parts, k], pstat [parts, 2]) into ids, vals [k] and lse [1], k rounds of picking
// the best head among the parts.
kernel void logits_topk_merge(device const uint* pids [[buffer(0)]], device const float* pvals [[buffer(1)]],
                              device const float* pstat [[buffer(2)]], device int* ids [[buffer(3)]],
                              device float* vals [[buffer(4)]], device float* lse [[buffer(5)]],
                              constant TopKDims& d [[buffer(6)]], uint tid [[thread_index_in_threadgroup]],
                              uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                              uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float tv[32];
  threadgroup uint ti[32];
  threadgroup uint head[1024];  // per part: how many of its list the merge has taken
  uint nt = nsg * 32u;
  float m = -INFINITY;
  for (uint p = tid; p < d.parts; p += nt) {
    m = max(m, pstat[2 * p]);
    head[p] = 0u;
  }
  m = simd_max(m);
  if (lane == 0) tv[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float M = -INFINITY;
  for (uint s = 0; s < nsg; s++) M = max(M, tv[s]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float z = 0.0f;
  for (uint p = tid; p < d.parts; p += nt) {
    float pm = pstat[2 * p], pz = pstat[2 * p + 1];
    if (pm != -INFINITY) z += pz * exp(pm - M);
  }
  z = simd_sum(z);
  if (lane == 0) tv[sg] = z;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    float t = 0.0f;
    for (uint s = 0; s < nsg; s++) t += tv[s];
    lse[0] = M + log(t);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint j = 0; j < d.k; j++) {
    float best = -INFINITY;
    uint bi = 0xffffffffu;
    for (uint p = tid; p < d.parts; p += nt) {
      uint h = head[p];
      if (h < d.k) {
        uint i = pids[p * d.k + h];
        float v = pvals[p * d.k + h];
        if (lt_better(v, i, best, bi)) {
          best = v;
          bi = i;
        }
      }
    }
    float bm = simd_max(bi != 0xffffffffu ? best : -INFINITY);
    uint w = simd_min(bi != 0xffffffffu && best == bm ? bi : 0xffffffffu);
    if (lane == 0) {
      tv[sg] = bm;
      ti[sg] = w;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float gv = -INFINITY;
    uint gi = 0xffffffffu;
    for (uint s = 0; s < nsg; s++)
      if (lt_better(tv[s], ti[s], gv, gi)) {
        gv = tv[s];
        gi = ti[s];
      }
    // The part holding the winner (its chunk, by id) advances its head.
    if (gi != 0xffffffffu && (gi / d.chunk) % nt == tid) head[gi / d.chunk]++;
    if (tid == 0) {
      ids[j] = int(gi);
      vals[j] = gv;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}
