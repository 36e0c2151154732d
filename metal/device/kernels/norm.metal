// RMSNorm and embedding gather.

struct NormDims {
  uint n;
  float eps;
};

// y[t] = x[t] / sqrt(mean(x[t]²) + eps) * w, for row t = threadgroup index. 256 threads per row:
// each thread sums a strided slice, SIMD groups reduce with simd_sum, then across groups.
kernel void rms_norm(device const float* x [[buffer(0)]], device const float* w [[buffer(1)]],
                     device float* y [[buffer(2)]], constant NormDims& d [[buffer(3)]],
                     uint t [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float part[32];
  device const float* xr = x + t * d.n;
  float ss = 0.0f;
  for (uint i = tid; i < d.n; i += nsg * 32u) ss += xr[i] * xr[i];
  ss = simd_sum(ss);
  if (lane == 0) part[sg] = ss;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float v = lane < nsg ? part[lane] : 0.0f;
    v = simd_sum(v);
    if (lane == 0) part[0] = v;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float r = rsqrt(part[0] / float(d.n) + d.eps);
  for (uint i = tid; i < d.n; i += nsg * 32u) y[t * d.n + i] = xr[i] * r * w[i];
}

// out: [T, in] rows of the quantized embedding table for ids: [T]. One thread per element;
// grid = (ceil(in/256), T) threadgroups of 256.
kernel void embed(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                  device const ushort* b [[buffer(2)]], device const int* ids [[buffer(3)]],
                  device float* out [[buffer(4)]], constant QDims& d [[buffer(5)]],
                  uint2 gid [[thread_position_in_grid]]) {
  uint i = gid.x, t = gid.y;
  if (i >= d.in) return;
  out[t * d.in + i] = qget(w, s, b, uint(ids[t]), i, d.in, d.bits, d.sh);
}
