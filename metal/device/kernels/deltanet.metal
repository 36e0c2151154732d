// Gated DeltaNet: the token mixer after the input projections, for T tokens in order (T = 1 is the
// decode step; prefill passes a chunk), in two dispatches:
//   deltanet_conv: the causal depthwise conv + SiLU of every channel, in place, and the conv state;
//   deltanet_scan: q/k L2 norm, gates, the delta-rule update, the output and the gated RMSNorm.
// The conv is its own dispatch because a value head's threadgroup reads the q/k channels of its
// key head, which it shares with Hv/Hk - 1 other threadgroups: updating that conv state inside the
// scan would race with their reads (threadgroups are unordered). One thread per channel makes the
// conv race-free and computes each channel once, not once per value head.
//
// The scan keeps the recurrent state in registers (the mapping of MLX's gated_delta kernel, with
// several value columns per SIMD group): one threadgroup per value head h, SIMD group sg owns value
// columns [8sg, 8sg+8) of S_h: [Dk, Dv], and lane l holds rows l, l+32, l+64, l+96 of them (Dk <= 128):
// 32 floats per lane. The state is read once before the first token and written once after the
// last; per token each column costs two simd_sums (S^T k and S^T q). The gated RMSNorm needs all Dv
// columns of the head: each SIMD group adds its columns' squares and the SIMD groups meet once per
// token through threadgroup memory (fused, rather than a second kernel that would re-read the
// output and cost one more dispatch per layer and token).

struct DeltaNetDims {
  uint hk, hv, dk, dv;
  uint kconv;     // conv taps K
  uint c;         // conv channels 2*Hk*Dk + Hv*Dv
  uint t;         // tokens
  float l2eps;    // inside the q/k L2 norm sum
  float normeps;  // gated RMSNorm epsilon
};

#define DN_MAXK 8u   // conv taps a thread keeps in registers
#define DN_ROWS 4u   // state rows per lane: Dk <= 32*DN_ROWS
#define DN_COLS 8u   // state columns per SIMD group: Dv <= 32*DN_COLS (1,024 threads)

// For channel ch = thread: x(t) the pre-conv input, xc(t) = SiLU(Σ_j w[ch,j]·x(t-K+1+j)), with
// x(p<0) from the conv state; then the state becomes the last K-1 inputs. xqkv: [T, C] pre-conv
// projections, overwritten with xc (each thread reads its channel's inputs before it writes them);
// cw: [C, K]; cst: [K-1, C] (updated). Grid ceil(C/256) threadgroups of 256. K <= DN_MAXK.
kernel void deltanet_conv(device float* xqkv [[buffer(0)]], device const float* cw [[buffer(1)]],
                          device float* cst [[buffer(2)]], constant DeltaNetDims& d [[buffer(3)]],
                          uint ch [[thread_position_in_grid]]) {
  if (ch >= d.c) return;
  uint k = d.kconv;
  float win[DN_MAXK]; // win[j] = x(t-K+1+j) for the token t being computed
  float w[DN_MAXK];
  for (uint j = 0; j < DN_MAXK; j++) {
    w[j] = j < k ? cw[ch * k + j] : 0.0f;
    win[j] = j + 1u < k ? cst[j * d.c + ch] : 0.0f;
  }
  for (uint t = 0; t < d.t; t++) {
    device float* x = xqkv + t * d.c + ch;
    float acc = 0.0f;
    for (uint j = 0; j < DN_MAXK; j++) {
      if (j + 1u == k) win[j] = *x;
      if (j < k) acc += w[j] * win[j];
    }
    *x = silu_f(acc);
    for (uint j = 0; j + 1u < DN_MAXK; j++) win[j] = win[j + 1u];
  }
  for (uint j = 0; j + 1u < DN_MAXK; j++)
    if (j + 1u < k) cst[j * d.c + ch] = win[j];
}

// xc: [T, C] conv outputs (q | k | v channels); z: [T, Hv*Dv]; a, b: [T, Hv]; alog, dtb: [Hv];
// nw: [Dv]; state: [Hv, Dk, Dv] (updated); y: [T, Hv*Dv]. Grid Hv threadgroups of 32*ceil(Dv/8).
kernel void deltanet_scan(device const float* xc [[buffer(0)]], device const float* z [[buffer(1)]],
                          device const float* a [[buffer(2)]], device const float* b [[buffer(3)]],
                          device const float* alog [[buffer(4)]], device const float* dtb [[buffer(5)]],
                          device const float* nw [[buffer(6)]], device float* state [[buffer(7)]],
                          device float* y [[buffer(8)]], constant DeltaNetDims& d [[buffer(9)]],
                          uint h [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float part[64]; // per token parity, per SIMD group: Σ o² over its columns
  uint kh = h / (d.hv / d.hk), j0 = sg * DN_COLS;
  device float* S = state + h * d.dk * d.dv;
  float s[DN_ROWS][DN_COLS];
  for (uint r = 0; r < DN_ROWS; r++) {
    uint i = lane + 32u * r;
    for (uint c = 0; c < DN_COLS; c++) s[r][c] = (i < d.dk && j0 + c < d.dv) ? S[i * d.dv + j0 + c] : 0.0f;
  }
  float alh = -exp(alog[h]), dth = dtb[h], wn = 0.0f;
  if (j0 + lane < d.dv && lane < DN_COLS) wn = nw[j0 + lane];
  for (uint t = 0; t < d.t; t++) {
    device const float* row = xc + t * d.c;
    float q[DN_ROWS], k[DN_ROWS], sq = 0.0f, sk = 0.0f;
    for (uint r = 0; r < DN_ROWS; r++) {
      uint i = lane + 32u * r;
      q[r] = i < d.dk ? row[kh * d.dk + i] : 0.0f;
      k[r] = i < d.dk ? row[(d.hk + kh) * d.dk + i] : 0.0f;
      sq += q[r] * q[r];
      sk += k[r] * k[r];
    }
    float rq = rsqrt(simd_sum(sq) + d.l2eps) * rsqrt(float(d.dk)), rk = rsqrt(simd_sum(sk) + d.l2eps);
    for (uint r = 0; r < DN_ROWS; r++) {
      q[r] *= rq;
      k[r] *= rk;
    }
    float decay = exp(alh * softplus_f(a[t * d.hv + h] + dth)), beta = sigmoid_f(b[t * d.hv + h]);
    device const float* v = row + 2u * d.hk * d.dk + h * d.dv;
    float mine = 0.0f, oo = 0.0f; // mine: lane c's column output; oo: Σ o² over this SIMD group's columns
    for (uint c = 0; c < DN_COLS; c++) {
      if (j0 + c >= d.dv) break; // uniform: the same for every lane
      float kv = 0.0f;
      for (uint r = 0; r < DN_ROWS; r++) kv += s[r][c] * k[r];
      float delta = beta * (v[j0 + c] - decay * simd_sum(kv));
      float o = 0.0f;
      for (uint r = 0; r < DN_ROWS; r++) {
        s[r][c] = decay * s[r][c] + k[r] * delta;
        o += s[r][c] * q[r];
      }
      o = simd_sum(o);
      oo += o * o;
      if (lane == c) mine = o;
    }
    // Parity-indexed slots: token t+2 rewrites part[t&1] only after every SIMD group passed token
    // t+1's barrier, so after all reads of token t's sums.
    if (lane == 0) part[(t & 1u) * 32u + sg] = oo;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float to = 0.0f;
    for (uint g = 0; g < nsg; g++) to += part[(t & 1u) * 32u + g];
    float rn = rsqrt(to / float(d.dv) + d.normeps);
    uint j = j0 + lane;
    if (lane < DN_COLS && j < d.dv) y[(t * d.hv + h) * d.dv + j] = mine * rn * wn * silu_f(z[(t * d.hv + h) * d.dv + j]);
  }
  for (uint r = 0; r < DN_ROWS; r++) {
    uint i = lane + 32u * r;
    for (uint c = 0; c < DN_COLS; c++)
      if (i < d.dk && j0 + c < d.dv) S[i * d.dv + j0 + c] = s[r][c];
  }
}
