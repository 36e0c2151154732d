// Gated full attention: q/k norm + partial RoPE + KV-cache append, decode attention split along the
// sequence, and causal prefill attention with GQA. One SIMD group per (head, query): the 32 lanes
// split the head dimension (D <= 256, so at most 8 values per lane) and simd_sum forms each score.

// The KV cache holds keys and values as IEEE half (fp16): after q/k RMSNorm and RoPE they are O(1),
// where fp16's 11-bit significand rounds 8× finer than bf16's 8 bits and its range is ample.
typedef half kv_t;

struct AttnDims {
  uint hq, hkv, d, rot;
  uint pos0;   // position of the first new token
  uint t;      // new tokens
  uint n;      // keys visible to the last new token (pos0 + t)
  uint split;  // keys per split in decode
  float eps;   // q_norm/k_norm epsilon
  float scale; // D^-1/2
};

// For new token t = tg.y and head h = tg.x (query heads, then kv heads): RMSNorm the head with its
// weight, rotate its first rot dims (rotate-half) with cs[t] = [cos(rot/2) | sin(rot/2)], and write
// the query (and its gate) or append the key and value to the cache at position pos0 + t.
// q2: [T, Hq*2D] per-head interleaved query|gate; k, v: [T, Hkv*D]; q, gate: [T, Hq*D];
// kc, vc: [cap, Hkv*D] half. Grid (Hq+Hkv, T) threadgroups of 32 threads.
kernel void attn_prep(device const float* q2 [[buffer(0)]], device const float* k [[buffer(1)]],
                      device const float* v [[buffer(2)]], device const float* qn [[buffer(3)]],
                      device const float* kn [[buffer(4)]], device const float* cs [[buffer(5)]],
                      device float* q [[buffer(6)]], device float* gate [[buffer(7)]],
                      device kv_t* kc [[buffer(8)]], device kv_t* vc [[buffer(9)]],
                      constant AttnDims& d [[buffer(10)]], uint2 tg [[threadgroup_position_in_grid]],
                      uint lane [[thread_index_in_simdgroup]]) {
  uint h = tg.x, t = tg.y, pos = d.pos0 + t, hr = d.rot / 2u;
  device const float* src;
  device const float* nw;
  device float* dq = q;     // the query row (h < hq)
  device kv_t* dk = kc;     // else the key row in the cache
  bool isq = h < d.hq;
  if (isq) {
    src = q2 + (t * d.hq + h) * 2u * d.d;
    dq = q + (t * d.hq + h) * d.d;
    nw = qn;
    for (uint i = lane; i < d.d; i += 32u) gate[(t * d.hq + h) * d.d + i] = src[d.d + i];
  } else {
    uint kh = h - d.hq;
    src = k + (t * d.hkv + kh) * d.d;
    dk = kc + (pos * d.hkv + kh) * d.d;
    nw = kn;
    for (uint i = lane; i < d.d; i += 32u) vc[(pos * d.hkv + kh) * d.d + i] = kv_t(v[(t * d.hkv + kh) * d.d + i]);
  }
  float ss = 0.0f;
  for (uint i = lane; i < d.d; i += 32u) ss += src[i] * src[i];
  float r = rsqrt(simd_sum(ss) / float(d.d) + d.eps);
  for (uint i = lane; i < d.d; i += 32u) {
    float lo, hi; // the rotated (or only normed) values of dims i and i + hr
    if (i < hr) {
      float a = src[i] * r * nw[i], bb = src[i + hr] * r * nw[i + hr];
      float c = cs[t * d.rot + i], sn = cs[t * d.rot + hr + i];
      lo = a * c - bb * sn;
      hi = bb * c + a * sn;
    } else if (i >= d.rot) {
      lo = src[i] * r * nw[i];
    } else {
      continue;
    }
    if (isq) {
      dq[i] = lo;
      if (i < hr) dq[i + hr] = hi;
    } else {
      dk[i] = kv_t(lo);
      if (i < hr) dk[i + hr] = kv_t(hi);
    }
  }
}

// Decode, step 1: the online-softmax partials of one query over the keys of split sp = tg.y, for
// the G = Hq/Hkv query heads of kv head g = tg.x at once: part[h, sp] = (Σ e^{s-m} v, m, Σ e^{s-m})
// over keys [sp*split, min(n, (sp+1)*split)). The threadgroup (G SIMD groups, one per query head)
// stages each block of AD_BK keys and values in threadgroup memory once, so the G heads sharing a
// kv head read it from device memory once (the host picks split so that Hkv × splits threadgroups
// fill the GPU at every length). In a SIMD group the 32 lanes split the head dimension (8 values
// each at D = 256) and one simd_sum forms each score; the softmax is rescaled once per block.
// q: [Hq*D]; kc, vc: [n, Hkv*D] half; part: [Hq, splits, D+2]. Grid (Hkv, splits) × 32G threads.
#define AD_BK 16u
kernel void attn_decode_split(device const float* q [[buffer(0)]], device const kv_t* kc [[buffer(1)]],
                              device const kv_t* vc [[buffer(2)]], device float* part [[buffer(3)]],
                              constant AttnDims& d [[buffer(4)]], uint2 tg [[threadgroup_position_in_grid]],
                              uint tid [[thread_index_in_threadgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                              uint lane [[thread_index_in_simdgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup kv_t ks[AD_BK * 256u];
  threadgroup kv_t vs[AD_BK * 256u];
  uint g = tg.x, sp = tg.y, h = g * (d.hq / d.hkv) + sg, nt = nsg * 32u;
  uint splits = (d.n + d.split - 1u) / d.split, k0 = sp * d.split, k1 = min(d.n, k0 + d.split);
  float qr[8], acc[8];
  for (uint j = 0; j < 8u; j++) {
    uint i = lane + 32u * j;
    qr[j] = i < d.d ? q[h * d.d + i] * d.scale : 0.0f;
    acc[j] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (uint kb = k0; kb < k1; kb += AD_BK) {
    uint nk = min(AD_BK, k1 - kb);
    threadgroup_barrier(mem_flags::mem_threadgroup); // the previous block is consumed
    for (uint e = tid; e < nk * d.d; e += nt) {
      uint key = e / d.d, i = e - key * d.d, at = ((kb + key) * d.hkv + g) * d.d + i;
      ks[e] = kc[at];
      vs[e] = vc[at];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float sc[AD_BK], mb = -INFINITY;
    for (uint key = 0; key < AD_BK; key++) {
      if (key >= nk) break; // uniform
      float dp = 0.0f;
      for (uint j = 0; j < 8u; j++) {
        uint i = lane + 32u * j;
        if (i < d.d) dp += qr[j] * float(ks[key * d.d + i]);
      }
      sc[key] = simd_sum(dp);
      mb = max(mb, sc[key]);
    }
    float mn = max(m, mb), f = exp(m - mn); // m = -inf on the first block: f = 0
    l *= f;
    for (uint j = 0; j < 8u; j++) acc[j] *= f;
    for (uint key = 0; key < AD_BK; key++) {
      if (key >= nk) break;
      float e = exp(sc[key] - mn);
      l += e;
      for (uint j = 0; j < 8u; j++) {
        uint i = lane + 32u * j;
        if (i < d.d) acc[j] += e * float(vs[key * d.d + i]);
      }
    }
    m = mn;
  }
  device float* p = part + (h * splits + sp) * (d.d + 2u);
  for (uint j = 0; j < 8u; j++)
    if (lane + 32u * j < d.d) p[lane + 32u * j] = acc[j];
  if (lane == 0) {
    p[d.d] = m;
    p[d.d + 1u] = l;
  }
}

// Decode, step 2: merge the splits of head h = threadgroup index and apply the output gate:
// out[h] = (Σ_sp e^{m_sp-M} acc_sp) / (Σ_sp e^{m_sp-M} l_sp) · sigmoid(gate[h]). Grid Hq × 32 threads.
kernel void attn_decode_combine(device const float* part [[buffer(0)]], device const float* gate [[buffer(1)]],
                                device float* out [[buffer(2)]], constant AttnDims& d [[buffer(3)]],
                                uint h [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  uint splits = (d.n + d.split - 1u) / d.split;
  device const float* p = part + h * splits * (d.d + 2u);
  float m = -INFINITY;
  for (uint sp = 0; sp < splits; sp++) m = max(m, p[sp * (d.d + 2u) + d.d]);
  float l = 0.0f;
  for (uint sp = 0; sp < splits; sp++) l += p[sp * (d.d + 2u) + d.d + 1u] * exp(p[sp * (d.d + 2u) + d.d] - m);
  for (uint i = lane; i < d.d; i += 32u) {
    float a = 0.0f;
    for (uint sp = 0; sp < splits; sp++) a += p[sp * (d.d + 2u) + i] * exp(p[sp * (d.d + 2u) + d.d] - m);
    out[h * d.d + i] = a / l * sigmoid_f(gate[h * d.d + i]);
  }
}

// Prefill: causal attention of new token t = tg.y (position pos0+t), head h = tg.x, over keys
// [0, pos0+t], online softmax, times sigmoid(gate). q, gate, out: [T, Hq*D]. Grid (Hq, T) × 32.
kernel void attn_prefill(device const float* q [[buffer(0)]], device const kv_t* kc [[buffer(1)]],
                         device const kv_t* vc [[buffer(2)]], device const float* gate [[buffer(3)]],
                         device float* out [[buffer(4)]], constant AttnDims& d [[buffer(5)]],
                         uint2 tg [[threadgroup_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  uint h = tg.x, t = tg.y, kvh = h / (d.hq / d.hkv);
  device const float* qh = q + (t * d.hq + h) * d.d;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  float m = -INFINITY, l = 0.0f;
  for (uint p = 0; p <= d.pos0 + t; p++) {
    device const kv_t* kt = kc + (p * d.hkv + kvh) * d.d;
    device const kv_t* vt = vc + (p * d.hkv + kvh) * d.d;
    float dp = 0.0f;
    for (uint j = 0; lane + 32u * j < d.d; j++) dp += qh[lane + 32u * j] * float(kt[lane + 32u * j]);
    float s = simd_sum(dp) * d.scale;
    float mn = max(m, s), f = exp(m - mn), e = exp(s - mn);
    l = l * f + e;
    for (uint j = 0; lane + 32u * j < d.d; j++) acc[j] = acc[j] * f + e * float(vt[lane + 32u * j]);
    m = mn;
  }
  for (uint j = 0; lane + 32u * j < d.d; j++) {
    uint i = lane + 32u * j;
    out[(t * d.hq + h) * d.d + i] = acc[j] / l * sigmoid_f(gate[(t * d.hq + h) * d.d + i]);
  }
}
