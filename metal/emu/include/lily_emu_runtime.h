// Fiber scheduler for one threadgroup on one OS thread, the SIMD-group collectives built on it, and
// the dispatch-wide error state. Several OS threads each run their own threadgroups (main.h).
#pragma once
#include <sys/mman.h>
#include <ucontext.h>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace lily_emu {

// Builtins of one thread (the attribute names of MSL kernel parameters).
struct Builtins {
  uint3 thread_position_in_grid, thread_position_in_threadgroup, threadgroup_position_in_grid;
  uint3 threads_per_threadgroup, threadgroups_per_grid, threads_per_grid;
  uint thread_index_in_threadgroup, thread_index_in_simdgroup, simdgroup_index_in_threadgroup;
  uint threads_per_simdgroup, simdgroups_per_threadgroup;
};

// Context switching: a dozen instructions on x86-64 (ucontext's swapcontext makes a system call
// per switch, which dominated real-size runs); ucontext elsewhere.
#if defined(__x86_64__)
extern "C" void lily_emu_switch(void** save_sp, void* load_sp);
asm(".text\n.globl lily_emu_switch\n.type lily_emu_switch,@function\nlily_emu_switch:\n"
    "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
    "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
    "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n");
struct Ctx {
  void* sp = nullptr;
};
inline void ctx_switch(Ctx& from, Ctx& to) { lily_emu_switch(&from.sp, to.sp); }
// ctx_make prepares c to start fn (which never returns) on the stack [stack, stack+size): a return
// address 16-byte aligned as the ABI expects at a call, under six zeroed callee-saved registers.
inline void ctx_make(Ctx& c, char* stack, size_t size, void (*fn)()) {
  uintptr_t top = uintptr_t(stack + size) & ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top - 16);
  sp[0] = reinterpret_cast<void*>(fn);
  sp -= 6;
  for (int i = 0; i < 6; i++) sp[i] = nullptr;
  c.sp = sp;
}
#else
struct Ctx {
  ucontext_t uc;
};
inline void ctx_switch(Ctx& from, Ctx& to) { swapcontext(&from.uc, &to.uc); }
inline void ctx_make(Ctx& c, char* stack, size_t size, void (*fn)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, fn, 0);
}
#endif

enum Wait { kRunnable, kBarrier, kSimd, kDone };

constexpr size_t kStack = 128 * 1024;

struct Fiber {
  Ctx ctx;
  char* stack = nullptr;  // kStack bytes, mapped lazily (untouched pages cost nothing)
  Builtins b;
  Wait wait = kRunnable;
  unsigned simd_gen = 0, wait_gen = 0;
  unsigned mat_seq = 0;  // simdgroup matrix products this thread has made
};

// A simdgroup matrix product one lane computed, for the other lanes of its SIMD group: MSL makes the
// simdgroup_matrix functions collective with uniform arguments, so the n-th product of every lane is
// the same, and 31 of 32 lanes copy it instead of recomputing it.
struct MatSlot {
  unsigned seq = 0;  // 1 + the product's index, 0 when empty
  alignas(16) unsigned char data[256];
};

// A SIMD group's rendezvous slots, double-buffered by generation parity: a lane cannot reach
// generation g+2 before every lane has read generation g.
struct SimdGroup {
  unsigned size = 0;
  unsigned arrived[2] = {0, 0}, read[2] = {0, 0};
  alignas(16) unsigned char slot[2][32][16];
  MatSlot mats[4];
};

// Schedule orders of SIMD groups within a threadgroup (at every barrier) and of threadgroups.
enum Order : uint32_t { kInOrder = 0, kReversed = 1, kRandom = 2 };

typedef void (*EntryFn)(const Builtins&);

struct Threadgroup {
  std::vector<Fiber> fibers;  // grown to the largest threadgroup seen; the first count run
  size_t count = 0;
  std::vector<SimdGroup> simd;
  std::vector<unsigned> perm;
  unsigned live = 0, at_barrier = 0;
  int cur = -1;
  bool aborted = false;
  Ctx sched;
  EntryFn entry = nullptr;
};

// One device buffer bound at [[buffer(i)]] for the current dispatch: its window's bytes.
struct Slot {
  char* base = nullptr;
  size_t len = 0;
};

inline Slot* slots() {
  static Slot s[32];
  return s;
}

// The dispatch-wide state: the kernel's name, and the first error any thread reported.
struct DispatchState {
  const char* kernel_name = "";
  std::mutex mu;
  std::string error;
  std::atomic<bool> failed{false};
};

inline DispatchState& state() {
  static DispatchState s;
  return s;
}

inline void record_error(const std::string& msg) {
  DispatchState& s = state();
  std::lock_guard<std::mutex> l(s.mu);
  if (!s.failed) s.error = msg;
  s.failed = true;
}

inline Threadgroup*& current() {
  static thread_local Threadgroup* tg = nullptr;
  return tg;
}

inline Fiber& me() { return current()->fibers[current()->cur]; }

inline void yield() {
  Threadgroup* tg = current();
  ctx_switch(tg->fibers[tg->cur].ctx, tg->sched);
}

// fail reports msg for the current kernel and abandons the threadgroup: the fiber never resumes.
[[noreturn]] inline void fail(const std::string& msg) {
  record_error(std::string("kernel ") + state().kernel_name + ": " + msg);
  Threadgroup* tg = current();
  if (!tg || tg->cur < 0) {
    std::fprintf(stderr, "metal-emu: %s\n", msg.c_str());
    std::exit(3);
  }
  tg->aborted = true;
  ctx_switch(tg->fibers[tg->cur].ctx, tg->sched);
  std::abort();  // unreachable: an aborted threadgroup's fibers are never resumed
}

// Collective over the SIMD group: every lane contributes v; combine(vals, n, lane) gives this
// lane's result from the n lanes' values (lane order).
template <typename T, typename F> T simd_collective(T v, F combine) {
  static_assert(sizeof(T) <= 16, "simd collective value too large");
  Threadgroup* tg = current();
  Fiber& f = me();
  SimdGroup& sg = tg->simd[f.b.simdgroup_index_in_threadgroup];
  unsigned g = f.simd_gen++ & 1u;
  std::memcpy(sg.slot[g][f.b.thread_index_in_simdgroup], &v, sizeof(T));
  sg.arrived[g]++;
  f.wait = kSimd;
  f.wait_gen = g;
  yield();
  T vals[32];
  for (unsigned i = 0; i < sg.size; i++) std::memcpy(&vals[i], sg.slot[g][i], sizeof(T));
  T r = combine(vals, sg.size, me().b.thread_index_in_simdgroup);
  if (++sg.read[g] == sg.size) sg.arrived[g] = sg.read[g] = 0;
  return r;
}

// simd_rendezvous waits for every lane of the SIMD group, exchanging nothing (simdgroup_barrier).
inline void simd_rendezvous() {
  Threadgroup* tg = current();
  Fiber& f = me();
  SimdGroup& sg = tg->simd[f.b.simdgroup_index_in_threadgroup];
  unsigned g = f.simd_gen++ & 1u;
  sg.arrived[g]++;
  f.wait = kSimd;
  f.wait_gen = g;
  yield();
  if (++sg.read[g] == sg.size) sg.arrived[g] = sg.read[g] = 0;
}

inline void fiber_main() {
  Threadgroup* tg = current();
  Fiber& f = tg->fibers[tg->cur];
  tg->entry(f.b);
  f.wait = kDone;
  tg->live--;
  ctx_switch(f.ctx, tg->sched);
  std::abort();  // a finished fiber is never resumed
}

// Threadgroup memory of the kernels this OS thread has run: each array registers itself when first
// constructed, and is filled with 0xff bytes (NaN as float, half and bfloat; all ones as integers)
// at the start of every threadgroup of its kernel, so that a read before any write shows.
struct TgRegion {
  EntryFn entry;
  void* p;
  size_t n;
};

inline std::vector<TgRegion>& tg_regions() {
  static thread_local std::vector<TgRegion> r;
  return r;
}

inline void poison_threadgroup_memory(EntryFn entry) {
  for (TgRegion& r : tg_regions())
    if (r.entry == entry) std::memset(r.p, 0xff, r.n);
}

// xorshift64*: the seeded-random schedules.
inline uint64_t next_rand(uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 2685821657736338717ull;
}

// order fills p with 0..n-1 in the schedule's order.
inline void order(std::vector<unsigned>& p, unsigned n, Order o, uint64_t& rng) {
  p.resize(n);
  for (unsigned i = 0; i < n; i++) p[i] = o == kReversed ? n - 1 - i : i;
  if (o == kRandom)
    for (unsigned i = n; i > 1; i--) std::swap(p[i - 1], p[next_rand(rng) % i]);
}

inline bool simd_ready(Threadgroup& tg, const Fiber& f) {
  const SimdGroup& sg = tg.simd[f.b.simdgroup_index_in_threadgroup];
  return sg.arrived[f.wait_gen] == sg.size;
}

// run_group runs the lanes of SIMD group g, in lane order, until each has finished or waits at a
// threadgroup barrier (or at a collective that cannot complete).
inline void run_group(Threadgroup& tg, unsigned g) {
  size_t lo = size_t(g) * 32, hi = std::min(tg.count, lo + 32);
  for (bool progress = true; progress && !tg.aborted;) {
    progress = false;
    for (size_t i = lo; i < hi && !tg.aborted; i++) {
      Fiber& f = tg.fibers[i];
      if (f.wait == kRunnable || (f.wait == kSimd && simd_ready(tg, f))) {
        f.wait = kRunnable;
        tg.cur = int(i);
        ctx_switch(tg.sched, f.ctx);
        progress = true;
      }
    }
  }
}

// Runs one threadgroup (builtins prefilled per fiber) to completion: between two barriers, whole
// SIMD groups run one after another in the schedule's order, so a kernel that lets one SIMD group
// read what another writes without a barrier gets different results under different schedules.
inline bool run_threadgroup(Threadgroup& tg, EntryFn entry, Order o, uint64_t seed) {
  tg.entry = entry;
  tg.live = unsigned(tg.count);
  tg.at_barrier = 0;
  tg.aborted = false;
  current() = &tg;
  poison_threadgroup_memory(entry);
  for (size_t i = 0; i < tg.count; i++) {
    Fiber& f = tg.fibers[i];
    f.wait = kRunnable;
    f.simd_gen = 0;
    f.mat_seq = 0;
    ctx_make(f.ctx, f.stack, kStack, fiber_main);
  }
  for (SimdGroup& sg : tg.simd)
    for (MatSlot& m : sg.mats) m.seq = 0;
  unsigned nsg = unsigned((tg.count + 31) / 32);
  uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
  bool ok = true;
  for (;;) {
    order(tg.perm, nsg, o, rng);
    for (unsigned g : tg.perm) {
      run_group(tg, g);
      if (tg.aborted) break;
    }
    if (tg.aborted) { ok = false; break; }
    if (tg.live == 0) break;
    if (tg.at_barrier != tg.live) {
      record_error(std::string("kernel ") + state().kernel_name +
                   ": deadlock: a barrier or SIMD collective was not reached by every thread");
      ok = false;
      break;
    }
    for (size_t i = 0; i < tg.count; i++)
      if (tg.fibers[i].wait == kBarrier) tg.fibers[i].wait = kRunnable;
    tg.at_barrier = 0;
  }
  tg.cur = -1;
  current() = nullptr;
  return ok;
}

}  // namespace lily_emu

inline void threadgroup_barrier(mem_flags) {
  using namespace lily_emu;
  Threadgroup* tg = current();
  Fiber& f = me();
  tg->at_barrier++;
  f.wait = kBarrier;
  yield();
}

inline void simdgroup_barrier(mem_flags) { lily_emu::simd_rendezvous(); }
