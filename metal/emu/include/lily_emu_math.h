// Metal's math, SIMD-group, atomic and simdgroup-matrix functions over the emulator's runtime.
#pragma once

namespace metal {
using std::abs;
using std::ceil;
using std::exp;
using std::exp2;
using std::floor;
using std::fma;
using std::isinf;
using std::isnan;
using std::log;
using std::log2;
using std::pow;
using std::rint;
using std::round;
using std::sqrt;
using std::tanh;
using std::trunc;
using std::sin;
using std::cos;
// max and min are fmax and fmin in MSL: a NaN argument yields the other one.
template <typename T> T max(T a, T b) { return a != a ? b : b != b ? a : a > b ? a : b; }
template <typename T> T min(T a, T b) { return a != a ? b : b != b ? a : a < b ? a : b; }
template <typename T> T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <typename T> T select(T a, T b, bool c) { return c ? b : a; }
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline float log1p(float x) { return std::log1p(x); }
template <typename T> T precise_divide(T a, T b) { return a / b; }
namespace fast {
using std::exp;
using std::log;
using std::sqrt;
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
}  // namespace fast
namespace precise {
using std::exp;
using std::log;
using std::sqrt;
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
}  // namespace precise
template <typename T, int N> T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = T(0);
  for (int i = 0; i < N; i++) s += a.v[i] * b.v[i];
  return s;
}
template <typename To, typename From> To as_type(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
  To t;
  std::memcpy(&t, &f, sizeof(To));
  return t;
}

// SIMD-group functions (32 lanes; a partial last group has fewer).
template <typename T> T simd_sum(T v) {
  return lily_emu::simd_collective(v, [](T* x, unsigned n, unsigned) { T s = x[0]; for (unsigned i = 1; i < n; i++) s += x[i]; return s; });
}
template <typename T> T simd_max(T v) {
  return lily_emu::simd_collective(v, [](T* x, unsigned n, unsigned) { T s = x[0]; for (unsigned i = 1; i < n; i++) s = max(s, x[i]); return s; });
}
template <typename T> T simd_min(T v) {
  return lily_emu::simd_collective(v, [](T* x, unsigned n, unsigned) { T s = x[0]; for (unsigned i = 1; i < n; i++) s = min(s, x[i]); return s; });
}
template <typename T> T simd_prefix_exclusive_sum(T v) {
  return lily_emu::simd_collective(v, [](T* x, unsigned, unsigned lane) { T s = T(0); for (unsigned i = 0; i < lane; i++) s += x[i]; return s; });
}
template <typename T> T simd_prefix_inclusive_sum(T v) {
  return lily_emu::simd_collective(v, [](T* x, unsigned, unsigned lane) { T s = T(0); for (unsigned i = 0; i <= lane; i++) s += x[i]; return s; });
}
template <typename T> T simd_shuffle(T v, ushort src) {
  return lily_emu::simd_collective(v, [src](T* x, unsigned n, unsigned lane) { return src < n ? x[src] : x[lane]; });
}
template <typename T> T simd_broadcast(T v, ushort src) { return simd_shuffle(v, src); }
template <typename T> T simd_broadcast_first(T v) { return simd_shuffle(v, 0); }
template <typename T> T simd_shuffle_down(T v, ushort d) {
  return lily_emu::simd_collective(v, [d](T* x, unsigned n, unsigned lane) { return lane + d < n ? x[lane + d] : x[lane]; });
}
template <typename T> T simd_shuffle_up(T v, ushort d) {
  return lily_emu::simd_collective(v, [d](T* x, unsigned, unsigned lane) { return lane >= d ? x[lane - d] : x[lane]; });
}
template <typename T> T simd_shuffle_xor(T v, ushort m) {
  return lily_emu::simd_collective(v, [m](T* x, unsigned n, unsigned lane) { return (lane ^ m) < n ? x[lane ^ m] : x[lane]; });
}
inline bool simd_all(bool b) {
  return lily_emu::simd_collective(b, [](bool* x, unsigned n, unsigned) { for (unsigned i = 0; i < n; i++) if (!x[i]) return false; return true; });
}
inline bool simd_any(bool b) {
  return lily_emu::simd_collective(b, [](bool* x, unsigned n, unsigned) { for (unsigned i = 0; i < n; i++) if (x[i]) return true; return false; });
}

// Atomics: relaxed order only, as lily's kernels use them. Threadgroups run on several OS threads
// at once, so these are real atomic operations.
enum memory_order { memory_order_relaxed };
template <typename T> struct atomic { T v; };
typedef atomic<uint> atomic_uint;
typedef atomic<int> atomic_int;
template <typename T> T atomic_fetch_add_explicit(atomic<T>* a, T x, memory_order) { return __atomic_fetch_add(&a->v, x, __ATOMIC_RELAXED); }
template <typename T> T atomic_fetch_max_explicit(atomic<T>* a, T x, memory_order) {
  T old = __atomic_load_n(&a->v, __ATOMIC_RELAXED);
  while (x > old && !__atomic_compare_exchange_n(&a->v, &old, x, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <typename T> T atomic_load_explicit(atomic<T>* a, memory_order) { return __atomic_load_n(&a->v, __ATOMIC_RELAXED); }
template <typename T> void atomic_store_explicit(atomic<T>* a, T x, memory_order) { __atomic_store_n(&a->v, x, __ATOMIC_RELAXED); }

// simdgroup matrices (8x8), held whole by every lane.
template <typename T, int R, int C> struct simdgroup_matrix {
  T m[R][C];
  simdgroup_matrix() = default;
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;
template <typename T, int R, int C> simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T v) {
  simdgroup_matrix<T, R, C> s;
  for (int i = 0; i < R; i++) for (int j = 0; j < C; j++) s.m[i][j] = v;
  return s;
}
// src and dst are anything indexable: a checked device pointer or a threadgroup array.
template <typename T, typename P, int R, int C>
void simdgroup_load(thread simdgroup_matrix<T, R, C>& d, const P& src, ulong elements_per_row = C,
                    ulong2 origin = ulong2(0, 0), bool transpose = false) {
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      ulong r = transpose ? j : i, c = transpose ? i : j;
      d.m[i][j] = T(float(src[(origin.y + r) * elements_per_row + origin.x + c]));
    }
}
template <typename T, typename P, int R, int C>
void simdgroup_store(const simdgroup_matrix<T, R, C>& s, P&& dst, ulong elements_per_row = C,
                     ulong2 origin = ulong2(0, 0), bool transpose = false) {
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      ulong r = transpose ? j : i, c = transpose ? i : j;
      dst[(origin.y + r) * elements_per_row + origin.x + c] = float(s.m[i][j]);
    }
}
template <typename T, typename A, typename B, typename Cm, int N>
void simdgroup_multiply_accumulate(thread simdgroup_matrix<T, N, N>& d, const simdgroup_matrix<A, N, N>& a,
                                   const simdgroup_matrix<B, N, N>& b, const simdgroup_matrix<Cm, N, N>& c) {
  static_assert(sizeof(simdgroup_matrix<T, N, N>) <= sizeof(lily_emu::MatSlot::data), "matrix too large");
  lily_emu::Fiber& f = lily_emu::me();
  lily_emu::MatSlot& m = lily_emu::current()->simd[f.b.simdgroup_index_in_threadgroup].mats[f.mat_seq % 4];
  unsigned seq = ++f.mat_seq;
  if (m.seq == seq) {  // another lane of the SIMD group made this product
    std::memcpy(&d, m.data, sizeof d);
    return;
  }
  simdgroup_matrix<T, N, N> r;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float s = float(c.m[i][j]);
      for (int k = 0; k < N; k++) s += float(a.m[i][k]) * float(b.m[k][j]);
      r.m[i][j] = T(s);
    }
  if (m.seq < seq) {  // the first lane here (a lane far behind finds its slot reused, and computes)
    std::memcpy(m.data, &r, sizeof r);
    m.seq = seq;
  }
  d = r;
}
template <typename T, typename A, typename B, int N>
void simdgroup_multiply(thread simdgroup_matrix<T, N, N>& d, const simdgroup_matrix<A, N, N>& a,
                        const simdgroup_matrix<B, N, N>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<T, N, N>(T(0)));
}
}  // namespace metal

