// Gated DeltaNet: the whole token mixer after the input projections, fused, for T tokens in order
// (T = 1 is the decode step; prefill passes a chunk). Thread mapping: one threadgroup per key head
// (128 threads) owns that head's q/k conv channels and the v channels of its Hv/Hk value heads, so
// no two threadgroups touch the same conv or recurrent state. Per token: causal conv + SiLU, q/k L2
// norm, gates, the delta-rule update in fp32 (thread j owns column j of each value head's state
// S: [Dk, Dv]), output with the updated state, and the gated RMSNorm.

struct DeltaNetDims {
  uint hk, hv, dk, dv;
  uint kconv;     // conv taps K
  uint c;         // conv channels 2*Hk*Dk + Hv*Dv
  uint t;         // tokens
  float l2eps;    // inside the q/k L2 norm sum
  float normeps;  // gated RMSNorm epsilon
};

// The conv output of channel ch at token t: Σ_j w[ch,j]·x(t-K+1+j), x(p<0) from the conv state.
inline float conv_at(device const float* qkv, device const float* cw, device const float* cst, uint ch, int t,
                     constant DeltaNetDims& d) {
  float acc = 0.0f;
  for (uint j = 0; j < d.kconv; j++) {
    int p = t - int(d.kconv) + 1 + int(j);
    float x = p >= 0 ? qkv[uint(p) * d.c + ch] : cst[uint(int(d.kconv) - 1 + p) * d.c + ch];
    acc += cw[ch * d.kconv + j] * x;
  }
  return silu_f(acc);
}

// qkv: [T, C] pre-conv projections; z: [T, Hv*Dv]; a, b: [T, Hv]; cw: [C, K]; cst: [K-1, C] conv
// state (updated); alog, dtb: [Hv]; nw: [Dv]; state: [Hv, Dk, Dv] (updated); y: [T, Hv*Dv].
// Grid Hk threadgroups of 128 threads. Dk, Dv <= 256; (Hv/Hk)*Dv <= 1024.
kernel void deltanet_scan(device const float* qkv [[buffer(0)]], device const float* z [[buffer(1)]],
                     device const float* a [[buffer(2)]], device const float* b [[buffer(3)]],
                     device const float* cw [[buffer(4)]], device float* cst [[buffer(5)]],
                     device const float* alog [[buffer(6)]], device const float* dtb [[buffer(7)]],
                     device const float* nw [[buffer(8)]], device float* state [[buffer(9)]],
                     device float* y [[buffer(10)]], constant DeltaNetDims& d [[buffer(11)]],
                     uint kh [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float qs[256];
  threadgroup float ks[256];
  threadgroup float vs[1024];
  threadgroup float os[256];
  threadgroup float part[64];
  uint nt = nsg * 32u, rep = d.hv / d.hk;
  uint qch = kh * d.dk, kch = d.hk * d.dk + kh * d.dk, vch = 2u * d.hk * d.dk + kh * rep * d.dv;
  for (uint t = 0; t < d.t; t++) {
    for (uint i = tid; i < d.dk; i += nt) {
      qs[i] = conv_at(qkv, cw, cst, qch + i, int(t), d);
      ks[i] = conv_at(qkv, cw, cst, kch + i, int(t), d);
    }
    for (uint j = tid; j < rep * d.dv; j += nt) vs[j] = conv_at(qkv, cw, cst, vch + j, int(t), d);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float sq = 0.0f, sk = 0.0f;
    for (uint i = tid; i < d.dk; i += nt) {
      sq += qs[i] * qs[i];
      sk += ks[i] * ks[i];
    }
    sq = simd_sum(sq);
    sk = simd_sum(sk);
    if (lane == 0) {
      part[sg] = sq;
      part[32u + sg] = sk;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float tq = 0.0f, tk = 0.0f;
    for (uint s = 0; s < nsg; s++) {
      tq += part[s];
      tk += part[32u + s];
    }
    float rq = rsqrt(tq + d.l2eps) * rsqrt(float(d.dk)), rk = rsqrt(tk + d.l2eps);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint r = 0; r < rep; r++) {
      uint h = kh * rep + r;
      float g = -exp(alog[h]) * softplus_f(a[t * d.hv + h] + dtb[h]);
      float beta = sigmoid_f(b[t * d.hv + h]), decay = exp(g);
      device float* S = state + h * d.dk * d.dv;
      float oo = 0.0f;
      for (uint j = tid; j < d.dv; j += nt) {
        float kv = 0.0f;
        for (uint i = 0; i < d.dk; i++) kv += S[i * d.dv + j] * ks[i];
        float delta = beta * (vs[r * d.dv + j] - decay * kv * rk);
        float o = 0.0f;
        for (uint i = 0; i < d.dk; i++) {
          float sv = decay * S[i * d.dv + j] + ks[i] * rk * delta;
          S[i * d.dv + j] = sv;
          o += sv * qs[i];
        }
        os[j] = o * rq;
        oo += os[j] * os[j];
      }
      oo = simd_sum(oo);
      if (lane == 0) part[sg] = oo;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      float to = 0.0f;
      for (uint s = 0; s < nsg; s++) to += part[s];
      float rn = rsqrt(to / float(d.dv) + d.normeps);
      for (uint j = tid; j < d.dv; j += nt)
        y[(t * d.hv + h) * d.dv + j] = os[j] * rn * nw[j] * silu_f(z[(t * d.hv + h) * d.dv + j]);
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  // The conv state becomes the last K-1 pre-conv rows (older state rows where T < K-1).
  for (uint ch = tid; ch < d.c; ch += nt) {
    bool mine = (ch >= qch && ch < qch + d.dk) || (ch >= kch && ch < kch + d.dk) || (ch >= vch && ch < vch + rep * d.dv);
    if (!mine) continue;
    for (uint i = 0; i + 1u < d.kconv; i++) {
      int p = int(d.t) - int(d.kconv) + 1 + int(i);
      cst[i * d.c + ch] = p >= 0 ? qkv[uint(p) * d.c + ch] : cst[(i + d.t) * d.c + ch];
    }
  }
}
