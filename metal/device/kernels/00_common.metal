// lily's Metal kernels for Qwen3.6-35B-A3B. All files in this folder are concatenated, in name order,
// into one library source (the real device compiles it at run time; the emulator compiles the same
// text as C++). Conventions:
//   - activations are float32 device buffers; weights stay in their stored MLX form: packed uint32
//     words (element k of a word in bits [k*bits, (k+1)*bits)), bf16 scales and biases per group of 64;
//   - every dims struct holds only 4-byte uint/float fields, in the order the host writes them;
//   - threadgroup arrays are declared at kernel scope only (helpers never take threadgroup pointers);
//   - a SIMD group is 32 lanes; "one SIMD group per row" means the 32 lanes split the row's words.
#include <metal_stdlib>
using namespace metal;

#define LILY_GROUP 64u

// One quantized matrix W: [out, in] (for stacked experts, rows of all experts follow each other).
struct QDims {
  uint out;
  uint in;
  uint bits;
};

inline float silu_f(float x) { return x / (1.0f + exp(-x)); }
inline float sigmoid_f(float x) { return 1.0f / (1.0f + exp(-x)); }
inline float softplus_f(float x) { return x > 20.0f ? x : log(1.0f + exp(x)); }

// The quantized element W[row][i] (any bit width), dequantized: scale*q + bias.
inline float qget(device const uint* w, device const bfloat* s, device const bfloat* b, uint row, uint i, uint in, uint bits) {
  uint per = 32u / bits;
  uint word = w[row * (in / per) + i / per];
  uint q = (word >> ((i % per) * bits)) & ((1u << bits) - 1u);
  uint g = row * (in / LILY_GROUP) + i / LILY_GROUP;
  return float(s[g]) * float(q) + float(b[g]);
}

// W[row] · x with dequantization fused into the dot product: Σ_g s_g·Σ q_i x_i + b_g·Σ x_i.
// Called by all 32 lanes of a SIMD group; lane l takes words l, l+32, ... Returns the sum to every lane.
inline float qrow_dot(device const uint* w, device const bfloat* s, device const bfloat* b, uint row, uint in, uint bits,
                      device const float* x, uint lane) {
  uint per = 32u / bits;
  uint words = in / per;
  uint mask = (1u << bits) - 1u;
  device const uint* wr = w + row * words;
  float acc = 0.0f;
  for (uint wi = lane; wi < words; wi += 32u) {
    uint word = wr[wi];
    uint base = wi * per;
    float qx = 0.0f, sx = 0.0f;
    for (uint k = 0; k < per; k++) {
      float xv = x[base + k];
      qx += float((word >> (k * bits)) & mask) * xv;
      sx += xv;
    }
    uint g = row * (in / LILY_GROUP) + base / LILY_GROUP;
    acc += float(s[g]) * qx + float(b[g]) * sx;
  }
  return simd_sum(acc);
}
