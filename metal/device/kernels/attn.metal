// Gated full attention: q/k norm + partial RoPE + KV-cache append (attn_prep), decode attention
// split along the sequence (attn_decode_split + attn_decode_combine), and causal prefill attention
// as flash attention (attn_prefill). D <= 256 (8 values per lane in the decode kernels).

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

// Prefill: flash attention (causal, GQA, gated) of the T new tokens at pos0 over the cache. One
// threadgroup of 4 SIMD groups per (block of FA_BQ = 32 tokens, query head h = tg.y); SIMD group sg
// owns tokens [r0, r0+8). Keys go in blocks of FA_BK = 16, staged in threadgroup memory as float (K
// transposed, then V in the same space); per block a SIMD group forms S = Q·Kᵀ [8, 16] with 8×8
// simdgroup_matrix products (fp32 accumulation), applies scale and the causal mask, updates its rows'
// running max and sum (online softmax), and adds P·V into its O [8, D] held as D/8 matrices. Blocks
// after the threadgroup's last token are never loaded; a SIMD group skips the blocks after its own
// last token. Memory is O(block), never O(T·n). O is rescaled (a diagonal-matrix product, as
// llama.cpp's flash_attn_ext does) only when a row's block maximum exceeds its running one by
// FA_TAU: the result is the same softmax, with every exp(s - m) at most e^FA_TAU.
// q, gate, out: [T, Hq*D]; kc, vc: [n, Hkv*D] half. D a multiple of 8, at most 256.
// Grid (ceil(T/32), Hq) threadgroups of 128 threads.
#define FA_BQ 32u
#define FA_BK 16u
#define FA_SG 192u // per-SIMD-group scratch: S/P [8, FA_BK] then one 8×8 tile
#define FA_TAU 8.0f
kernel void attn_prefill(device const float* q [[buffer(0)]], device const kv_t* kc [[buffer(1)]],
                         device const kv_t* vc [[buffer(2)]], device const float* gate [[buffer(3)]],
                         device float* out [[buffer(4)]], constant AttnDims& d [[buffer(5)]],
                         uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                         uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float kv[FA_BK * 256u]; // the K block as [D, FA_BK], then the V block as [FA_BK, D]
  threadgroup float scr[4u * FA_SG];
  uint h = tg.y, kvh = h / (d.hq / d.hkv), nd = d.d / 8u, ld = d.hq * d.d;
  uint r0 = tg.x * FA_BQ + sg * 8u;                   // this SIMD group's first token
  uint kend = d.pos0 + min(d.t, tg.x * FA_BQ + FA_BQ); // keys the threadgroup's tokens see
  uint sgend = d.pos0 + min(d.t, r0 + 8u);            // keys this SIMD group's tokens see
  bool live = r0 < d.t, full = r0 + 8u <= d.t;
  uint sb = sg * FA_SG, tb = sb + 8u * FA_BK;         // S/P at scr[sb...], the 8×8 tile at scr[tb...]
  uint rr = lane / 4u, cc = (lane % 4u) * 4u;         // softmax: the lane's row and its 4 columns
  uint qpos = d.pos0 + r0 + rr;
  bool rowok = r0 + rr < d.t;
  device const float* qs = q + r0 * ld + h * d.d;
  simdgroup_float8x8 o[32];
  for (uint dt = 0; dt < 32u; dt++) o[dt] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  float m = -INFINITY, l = 0.0f; // the lane's row: running max (reference) and sum
  for (uint kb = 0; kb < kend; kb += FA_BK) {
    uint nk = min(FA_BK, kend - kb);
    bool act = live && kb < sgend; // uniform per SIMD group
    threadgroup_barrier(mem_flags::mem_threadgroup); // the previous V block is consumed
    for (uint e = tid; e < FA_BK * d.d; e += 128u) {
      uint key = e / d.d, i = e - key * d.d;
      kv[i * FA_BK + key] = key < nk ? float(kc[((kb + key) * d.hkv + kvh) * d.d + i]) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (act) {
      for (uint kt = 0; kt < FA_BK / 8u; kt++) {
        simdgroup_float8x8 s = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        for (uint dt = 0; dt < 32u; dt++) {
          if (dt >= nd) break;
          simdgroup_float8x8 qf, kf;
          if (full) {
            simdgroup_load(qf, qs + dt * 8u, ld);
          } else { // the last tokens: stage the tile with zero rows past T (never read past q)
            for (uint e = lane * 2u; e < lane * 2u + 2u; e++)
              scr[tb + e] = r0 + e / 8u < d.t ? qs[(e / 8u) * ld + dt * 8u + e % 8u] : 0.0f;
            simdgroup_barrier(mem_flags::mem_threadgroup);
            simdgroup_load(qf, scr, 8, ulong2(0, tb / 8u));
            simdgroup_barrier(mem_flags::mem_threadgroup);
          }
          simdgroup_load(kf, kv, FA_BK, ulong2(kt * 8u, dt * 8u));
          simdgroup_multiply_accumulate(s, qf, kf, s);
        }
        simdgroup_store(s, scr, FA_BK, ulong2(kt * 8u, sb / FA_BK));
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      float sv[4], mx = -INFINITY;
      for (uint c = 0; c < 4u; c++) {
        bool vis = rowok && cc + c < nk && kb + cc + c <= qpos;
        sv[c] = vis ? scr[sb + rr * FA_BK + cc + c] * d.scale : -INFINITY;
        mx = max(mx, sv[c]);
      }
      mx = max(mx, simd_shuffle_xor(mx, 1));
      mx = max(mx, simd_shuffle_xor(mx, 2));
      float f = 1.0f;
      if (m == -INFINITY) {
        m = mx; // O and l of the row are still zero
      } else if (mx > m + FA_TAU) {
        f = exp(m - mx);
        m = mx;
      }
      if (simd_any(f != 1.0f)) { // O = diag(f)·O; lane writes row rr of the diagonal tile
        for (uint e = lane * 2u; e < lane * 2u + 2u; e++) scr[tb + e] = e / 8u == e % 8u ? f : 0.0f;
        simdgroup_barrier(mem_flags::mem_threadgroup);
        simdgroup_float8x8 dg;
        simdgroup_load(dg, scr, 8, ulong2(0, tb / 8u));
        for (uint dt = 0; dt < 32u; dt++)
          if (dt < nd) simdgroup_multiply(o[dt], dg, o[dt]);
        l *= f;
      }
      float ps = 0.0f;
      for (uint c = 0; c < 4u; c++) {
        float p = sv[c] == -INFINITY ? 0.0f : exp(sv[c] - m);
        scr[sb + rr * FA_BK + cc + c] = p;
        ps += p;
      }
      ps += simd_shuffle_xor(ps, 1);
      ps += simd_shuffle_xor(ps, 2);
      l += ps;
      simdgroup_barrier(mem_flags::mem_threadgroup);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup); // every SIMD group is done with the K block
    for (uint e = tid; e < FA_BK * d.d; e += 128u) {
      uint key = e / d.d;
      kv[e] = key < nk ? float(vc[((kb + key) * d.hkv + kvh) * d.d + e - key * d.d]) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (act) {
      for (uint kt = 0; kt < FA_BK / 8u; kt++) {
        simdgroup_float8x8 pf;
        simdgroup_load(pf, scr, FA_BK, ulong2(kt * 8u, sb / FA_BK));
        for (uint dt = 0; dt < 32u; dt++) {
          if (dt >= nd) break;
          simdgroup_float8x8 vf;
          simdgroup_load(vf, kv, d.d, ulong2(dt * 8u, kt * 8u));
          simdgroup_multiply_accumulate(o[dt], pf, vf, o[dt]);
        }
      }
    }
  }
  if (!live) return;
  // out = O / l · sigmoid(gate), one 8×8 tile at a time through the scratch; lane e/8 = its row.
  for (uint dt = 0; dt < 32u; dt++) {
    if (dt >= nd) break;
    simdgroup_store(o[dt], scr, 8, ulong2(0, tb / 8u));
    simdgroup_barrier(mem_flags::mem_threadgroup);
    for (uint e = lane * 2u; e < lane * 2u + 2u; e++) {
      uint t = r0 + e / 8u, at = t * ld + h * d.d + dt * 8u + e % 8u;
      if (t < d.t) out[at] = scr[tb + e] / l * sigmoid_f(gate[at]);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
  }
}
