// The address spaces, checked. The emulator rewrites kernel sources before compiling them (see
// metal/emu/strict.go): `device T*` becomes dptr<T>, a pointer into one bound buffer that checks
// every access against the buffer's window, and `threadgroup T a[N];` becomes a tgarray<T, N>,
// bounds-checked and poisoned at the start of every threadgroup. The two are distinct types that do
// not convert to each other or to a plain pointer, so passing threadgroup memory where device memory
// is declared (or the reverse) fails to compile, as Metal's compiler rejects it. `constant` is
// `const`: writing through a constant reference fails to compile.
#pragma once
#include <type_traits>

namespace lily_emu {

template <typename T> struct dptr {
  T* p = nullptr;
  const Slot* s = nullptr;
  const char* name = "";

  dptr() = default;
  dptr(T* p, const Slot* s, const char* name) : p(p), s(s), name(name) {}
  // A pointer to T converts to a pointer to const T, as in C++.
  template <typename U, typename = std::enable_if_t<std::is_same<const U, T>::value && !std::is_same<U, T>::value>>
  dptr(const dptr<U>& o) : p(o.p), s(o.s), name(o.name) {}

  // bind is the kernel argument at [[buffer(i)]].
  static dptr bind(int i, const char* name) {
    Slot& sl = slots()[i];
    return dptr(reinterpret_cast<T*>(sl.base), &sl, name);
  }

  T* at(const T* q) const {
    const char* c = reinterpret_cast<const char*>(q);
    if (__builtin_expect(!s || c < s->base || c + sizeof(T) > s->base + s->len, 0)) out_of_bounds(c);
    return const_cast<T*>(q);
  }
  [[noreturn, gnu::noinline, gnu::cold]] void out_of_bounds(const char* c) const {
    long long el = s ? (long long)((c - s->base) / (long long)sizeof(T)) : 0;
    fail(std::string("buffer ") + std::to_string(s ? int(s - slots()) : -1) + " (" + name + "): element " +
         std::to_string(el) + " of " + std::to_string(sizeof(T)) + " bytes is outside its " +
         std::to_string(s ? s->len : 0) + "-byte window");
  }
  template <typename I, typename = std::enable_if_t<std::is_integral<I>::value>> T& operator[](I i) const {
    return *at(p + i);
  }
  T& operator*() const { return *at(p); }
  T* operator->() const { return at(p); }
  template <typename I, typename = std::enable_if_t<std::is_integral<I>::value>> dptr operator+(I i) const {
    return dptr(p + i, s, name);
  }
  template <typename I, typename = std::enable_if_t<std::is_integral<I>::value>> dptr operator-(I i) const {
    return dptr(p - i, s, name);
  }
  template <typename I, typename = std::enable_if_t<std::is_integral<I>::value>> dptr& operator+=(I i) {
    p += i;
    return *this;
  }
  dptr& operator++() {
    ++p;
    return *this;
  }
  long operator-(const dptr& o) const { return p - o.p; }
};

// bind_constant is the `constant T&` argument at [[buffer(i)]]: the bound bytes must hold a T.
template <typename T> const T& bind_constant(int i, const char* name) {
  Slot& sl = slots()[i];
  if (sl.len < sizeof(T))
    fail(std::string("buffer ") + std::to_string(i) + " (" + name + "): " + std::to_string(sl.len) +
         " bytes bound for a constant of " + std::to_string(sizeof(T)));
  return *reinterpret_cast<const T*>(sl.base);
}

template <typename T, size_t N> struct tgarray {
  T v[N];
  const char* name;
  explicit tgarray(const char* name) : name(name) {
    tg_regions().push_back(TgRegion{current()->entry, v, sizeof v});
    std::memset(v, 0xff, sizeof v);
  }
  tgarray(const tgarray&) = delete;
  template <typename I, typename = std::enable_if_t<std::is_integral<I>::value>> T& operator[](I i) const {
    if (__builtin_expect((unsigned long long)(i) >= N, 0)) out_of_bounds((long long)i);
    return const_cast<T&>(v[i]);
  }
  [[noreturn, gnu::noinline, gnu::cold]] void out_of_bounds(long long i) const {
    fail(std::string("threadgroup array ") + name + ": index " + std::to_string(i) + " outside [0, " +
         std::to_string(N) + ")");
  }
};

}  // namespace lily_emu

#define LILY_TG_ARRAY(T, name, n) static thread_local lily_emu::tgarray<T, (n)> name(#name)
