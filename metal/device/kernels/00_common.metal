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
  uint sh;  // byte shifts of the bound operands: words | scales<<8 | biases<<16 (see qword)
};

// Packed weights at any byte offset. A real MLX shard's header is not padded, so a tensor may start
// at any byte of its mapped file, and the weights stay zero-copy: the host binds every quantized
// operand (packed words, bf16 scales, bf16 biases) at the 4-byte floor of its start and passes
// sh = start mod 4 for it (wsh | ssh<<8 | bsh<<16 in the dims). The loaders below read only aligned
// uint (or ushort) words, combining two neighbours when the tensor is shifted, and never read past
// the 4-byte ceiling of the tensor's end (which the host's binding covers).
inline uint wshift(uint sh) { return sh & 0xffu; }
inline uint sshift(uint sh) { return (sh >> 8) & 0xffu; }
inline uint bshift(uint sh) { return (sh >> 16) & 0xffu; }

// qword is packed word i of a tensor that starts sh bytes into w.
inline uint qword(device const uint* w, uint i, uint sh) {
  if (sh == 0u) return w[i];
  return (w[i] >> (8u * sh)) | (w[i + 1u] << (32u - 8u * sh));
}

// qbf16 is bf16 element i, as float, of a tensor that starts sh bytes into p: element i is the
// ushort at byte sh + 2i, aligned when sh is even, else the high byte of one ushort and the low byte
// of the next.
inline float qbf16(device const ushort* p, uint i, uint sh) {
  uint o = sh + 2u * i;
  uint j = o >> 1;
  uint v = (o & 1u) == 0u ? uint(p[j]) : ((uint(p[j]) >> 8) | ((uint(p[j + 1u]) & 0xffu) << 8));
  return as_type<float>(v << 16);
}

inline float silu_f(float x) { return x / (1.0f + exp(-x)); }
inline float sigmoid_f(float x) { return 1.0f / (1.0f + exp(-x)); }
inline float softplus_f(float x) { return x > 20.0f ? x : log(1.0f + exp(x)); }

// The quantized element W[row][i] (any bit width), dequantized: scale*q + bias; sh as in QDims.
inline float qget(device const uint* w, device const ushort* s, device const ushort* b, uint row, uint i, uint in,
                  uint bits, uint sh) {
  uint per = 32u / bits;
  uint word = qword(w, row * (in / per) + i / per, wshift(sh));
  uint q = (word >> ((i % per) * bits)) & ((1u << bits) - 1u);
  uint g = row * (in / LILY_GROUP) + i / LILY_GROUP;
  return qbf16(s, g, sshift(sh)) * float(q) + qbf16(b, g, bshift(sh));
}
