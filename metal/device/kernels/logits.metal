// Next-token selection where the logits live: log-sum-exp, and the top k (k = 1 is argmax) with ties
// to the lower id, so only k ids, k logits and one float come back to the CPU.

struct TopKDims {
  uint n;  // vocabulary
  uint k;  // <= 64
};

// One threadgroup of any whole number of SIMD groups up to 1024 threads (the host takes the
// pipeline's limit). x: [n]; ids, vals: [k]; lse: [1].
kernel void logits_topk(device const float* x [[buffer(0)]], device int* ids [[buffer(1)]],
                        device float* vals [[buffer(2)]], device float* lse [[buffer(3)]],
                        constant TopKDims& d [[buffer(4)]], uint tid [[thread_index_in_threadgroup]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                        uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float pm[32];
  threadgroup uint pi[32];
  threadgroup uint chosen[64];
  uint nt = nsg * 32u;
  float m = -INFINITY;
  for (uint i = tid; i < d.n; i += nt) m = max(m, x[i]);
  m = simd_max(m);
  if (lane == 0) pm[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float M = -INFINITY;
  for (uint s = 0; s < nsg; s++) M = max(M, pm[s]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float z = 0.0f;
  for (uint i = tid; i < d.n; i += nt) z += exp(x[i] - M);
  z = simd_sum(z);
  if (lane == 0) pm[sg] = z;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    float t = 0.0f;
    for (uint s = 0; s < nsg; s++) t += pm[s];
    lse[0] = M + log(t);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint j = 0; j < d.k; j++) {
    float best = -INFINITY;
    uint bi = 0xffffffffu;
    for (uint i = tid; i < d.n; i += nt) {
      bool taken = false;
      for (uint c = 0; c < j; c++) taken = taken || chosen[c] == i;
      if (!taken && (x[i] > best || bi == 0xffffffffu)) {
        best = x[i];
        bi = i;
      }
    }
    float bm = simd_max(best);
    uint w = simd_min(best == bm ? bi : 0xffffffffu);
    if (lane == 0) {
      pm[sg] = bm;
      pi[sg] = w;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) {
      float vb = -INFINITY;
      uint wb = 0xffffffffu;
      for (uint s = 0; s < nsg; s++)
        if (pi[s] != 0xffffffffu && (pm[s] > vb || (pm[s] == vb && pi[s] < wb) || wb == 0xffffffffu)) {
          vb = pm[s];
          wb = pi[s];
        }
      chosen[j] = wb;
      ids[j] = int(wb);
      vals[j] = vb;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}
