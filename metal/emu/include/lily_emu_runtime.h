// Fiber scheduler for one threadgroup at a time, and the collectives built on it.
#pragma once
#include <ucontext.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace lily_emu {

// Builtins of one thread (the attribute names of MSL kernel parameters).
struct Builtins {
  uint3 thread_position_in_grid, thread_position_in_threadgroup, threadgroup_position_in_grid;
  uint3 threads_per_threadgroup, threadgroups_per_grid, threads_per_grid;
  uint thread_index_in_threadgroup, thread_index_in_simdgroup, simdgroup_index_in_threadgroup;
  uint threads_per_simdgroup, simdgroups_per_threadgroup;
};

enum Wait { kRunnable, kBarrier, kSimd, kDone };

struct Fiber {
  ucontext_t ctx;
  std::vector<char> stack;
  Builtins b;
  Wait wait = kRunnable;
  unsigned barrier_gen = 0, simd_gen = 0, wait_gen = 0;
};

// A SIMD group's rendezvous slots, double-buffered by generation parity: a lane cannot reach
// generation g+2 before every lane has read generation g.
struct SimdGroup {
  unsigned size = 0;
  unsigned arrived[2] = {0, 0}, read[2] = {0, 0};
  alignas(16) unsigned char slot[2][32][16];
};

struct Threadgroup {
  std::vector<Fiber> fibers;  // grown to the largest threadgroup seen; the first count run
  size_t count = 0;
  std::vector<SimdGroup> simd;
  unsigned barrier_arrived[2] = {0, 0}, barrier_read[2] = {0, 0};
  bool barrier_released[2] = {false, false};
  unsigned live = 0;
  int cur = -1;
  ucontext_t sched;
  void (*entry)(const Builtins&) = nullptr;
};

// The buffers bound for the current dispatch, by [[buffer(i)]] index.
inline void*& buffer_slot(int i) {
  static void* slots[32];
  return slots[i];
}

inline Threadgroup*& current() {
  static thread_local Threadgroup* tg = nullptr;
  return tg;
}

inline Fiber& me() { return current()->fibers[current()->cur]; }

inline void yield() {
  Threadgroup* tg = current();
  swapcontext(&tg->fibers[tg->cur].ctx, &tg->sched);
}

[[noreturn]] inline void fail(const char* msg) {
  std::fprintf(stderr, "metal-emu: %s\n", msg);
  std::exit(3);
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

inline bool runnable(Threadgroup& tg, const Fiber& f) {
  switch (f.wait) {
    case kRunnable: return true;
    case kBarrier:
      // Released once every live thread has arrived; threads that then finish do not un-release it.
      if (!tg.barrier_released[f.wait_gen] && tg.barrier_arrived[f.wait_gen] == tg.live)
        tg.barrier_released[f.wait_gen] = true;
      return tg.barrier_released[f.wait_gen];
    case kSimd: return tg.simd[f.b.simdgroup_index_in_threadgroup].arrived[f.wait_gen] ==
                       tg.simd[f.b.simdgroup_index_in_threadgroup].size;
    case kDone: return false;
  }
  return false;
}

inline void fiber_main() {
  Threadgroup* tg = current();
  Fiber& f = tg->fibers[tg->cur];
  tg->entry(f.b);
  f.wait = kDone;
  tg->live--;
  swapcontext(&f.ctx, &tg->sched);
}

// Runs one threadgroup of n threads (builtins prefilled per fiber) to completion.
inline void run_threadgroup(Threadgroup& tg, void (*entry)(const Builtins&)) {
  tg.entry = entry;
  tg.live = unsigned(tg.count);
  for (int g = 0; g < 2; g++) {
    tg.barrier_arrived[g] = tg.barrier_read[g] = 0;
    tg.barrier_released[g] = false;
  }
  current() = &tg;
  for (size_t i = 0; i < tg.count; i++) {
    Fiber& f = tg.fibers[i];
    f.wait = kRunnable;
    f.barrier_gen = f.simd_gen = 0;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_main, 0);
  }
  for (;;) {
    bool progress = false, all_done = true;
    for (size_t i = 0; i < tg.count; i++) {
      Fiber& f = tg.fibers[i];
      if (f.wait == kDone) continue;
      all_done = false;
      if (!runnable(tg, f)) continue;
      if (f.wait == kBarrier && ++tg.barrier_read[f.wait_gen] == tg.barrier_arrived[f.wait_gen]) {
        tg.barrier_arrived[f.wait_gen] = tg.barrier_read[f.wait_gen] = 0;
        tg.barrier_released[f.wait_gen] = false;
      }
      f.wait = kRunnable;
      tg.cur = int(i);
      swapcontext(&tg.sched, &f.ctx);
      progress = true;
    }
    if (all_done) break;
    if (!progress) fail("deadlock: a barrier or SIMD collective was not reached by every thread");
  }
  current() = nullptr;
}

}  // namespace lily_emu

inline void threadgroup_barrier(mem_flags) {
  using namespace lily_emu;
  Threadgroup* tg = current();
  Fiber& f = me();
  unsigned g = f.barrier_gen++ & 1u;
  tg->barrier_arrived[g]++;
  f.wait = kBarrier;
  f.wait_gen = g;
  yield();
}

inline void simdgroup_barrier(mem_flags) {
  lily_emu::simd_collective<int>(0, [](int*, unsigned, unsigned) { return 0; });
}
