// Decode mat-vec with fused dequantization.
// Thread mapping: one SIMD group per output row, 8 rows (256 threads) per threadgroup;
// grid = ceil(out/8) threadgroups.

// y: [out] = W: [out, in] · x: [in].
kernel void qmv(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                device float* y [[buffer(4)]], constant QDims& d [[buffer(5)]],
                uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                uint lane [[thread_index_in_simdgroup]]) {
  uint row = tg * 8u + sg;
  if (row >= d.out) return;
  float v = qrow_dot(w, s, b, row, d.in, d.bits, d.sh, x, lane);
  if (lane == 0) y[row] = v;
}

// y: [out] += W · x — the residual add fused into the output projection.
kernel void qmv_add(device const uint* w [[buffer(0)]], device const ushort* s [[buffer(1)]],
                    device const ushort* b [[buffer(2)]], device const float* x [[buffer(3)]],
                    device float* y [[buffer(4)]], constant QDims& d [[buffer(5)]],
                    uint tg [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                    uint lane [[thread_index_in_simdgroup]]) {
  uint row = tg * 8u + sg;
  if (row >= d.out) return;
  float v = qrow_dot(w, s, b, row, d.in, d.bits, d.sh, x, lane);
  if (lane == 0) y[row] += v;
}
