// Mixture of experts: GPU-side grouping of tokens by expert for prefill and the combine. Routing
// and the decode experts are in qmv_fast_moe.metal (ids never leave the GPU).

struct MoEDims {
  uint hidden;  // H
  uint inter;   // I, routed expert width
  uint shared;  // Is, shared expert width
  uint k;       // experts per token
  uint bits;
  uint act_stride;  // row stride of act: max(I, Is)
  uint gsh, ush, sgsh, sush, dsh, sdsh;  // shifts as in QDims: gate, up, shared gate/up, down, shared down
};

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
