// The ABI probe `lily doctor` runs before any model kernel: each thread of a 2-D grid of 2-D
// threadgroups writes what it was told about its position, so the host can check that the device
// passes builtins, argument offsets and inline constants as the kernels assume.

struct ProbeDims {
  uint gx, gy; // threadgroups
  uint tx, ty; // threads per threadgroup
};

// out: [gy*ty, gx*tx, 4] of (grid x, grid y, threadgroup-derived x + y·2^16, SIMD lane) per thread.
kernel void abi_probe(device uint* out [[buffer(0)]], constant ProbeDims& d [[buffer(1)]],
                      uint2 gid [[thread_position_in_grid]], uint2 tg [[threadgroup_position_in_grid]],
                      uint2 tp [[thread_position_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  uint i = gid.y * (d.gx * d.tx) + gid.x;
  out[4u * i] = gid.x;
  out[4u * i + 1u] = gid.y;
  out[4u * i + 2u] = (tg.x * d.tx + tp.x) | ((tg.y * d.ty + tp.y) << 16u);
  out[4u * i + 3u] = lane;
}
