// The emulator process: reads requests on stdin, runs them, answers on stdout. All integers are
// little-endian.
//
// Map:      u32 0x50414d4c ("LMAP"), u32 id, u64 length, u32 path length, path: map the file's first
//           length bytes shared (both processes see each other's writes). Answer: u32 status.
// MapFile:  u32 0x46504d4c ("LMPF"), u32 id, u64 file offset, u64 length, u32 path length, path: map
//           length bytes of a file from that offset read-only (a checkpoint wrapped in place).
//           Answer: u32 status.
// Unmap:    u32 0x504d4e55 ("UNMP"), u32 id. No answer.
// Dispatch: u32 0x554d454c ("LEMU"), u32 name length, name, u32 grid[3] (threadgroups), u32
//           group[3] (threads per threadgroup), u32 order, u64 seed, u32 argument count, then per
//           argument u32 slot, u32 kind, and for kind 0 (inline) u64 length and the bytes, for kind 1
//           (mapped) u32 id, u64 offset, u64 length. Answer: u32 status (0 ok), then per inline
//           argument u64 length and its bytes as the kernel left them; on an error, status 1, u32
//           message length, message.
#pragma once
// The kernels are compiled by now: the address-space macros would only break std::thread here.
#undef kernel
#undef device
#undef constant
#undef thread
#undef threadgroup

namespace lily_emu {

struct Entry {
  const char* name;
  EntryFn fn;
};

inline bool read_all(void* p, size_t n) { return std::fread(p, 1, n, stdin) == n; }
inline void write_all(const void* p, size_t n) { std::fwrite(p, 1, n, stdout); }

inline void answer_error(const std::string& msg) {
  uint32_t st = 1, n = uint32_t(msg.size());
  write_all(&st, 4);
  write_all(&n, 4);
  write_all(msg.data(), n);
  std::fflush(stdout);
}

// One dispatch, shared by the OS threads that run its threadgroups.
struct Job {
  EntryFn fn = nullptr;
  uint32_t grid[3], group[3];
  Order order = kInOrder;
  uint64_t seed = 0;
  std::vector<unsigned> tgs;  // threadgroup linear indices in the schedule's order
  std::atomic<size_t> next{0};
};

// prepare sizes the calling OS thread's threadgroup for job and fills in the builtins that do not
// depend on the threadgroup's position.
inline Threadgroup& prepare(const Job& j) {
  static thread_local Threadgroup tg;
  unsigned n = j.group[0] * j.group[1] * j.group[2];
  if (tg.fibers.size() < n) tg.fibers.resize(n);
  for (unsigned i = 0; i < n; i++) {
    Fiber& f = tg.fibers[i];
    if (!f.stack) {
      void* m = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) fail("cannot map a fiber stack");
      f.stack = static_cast<char*>(m);
    }
  }
  tg.count = n;
  unsigned nsg = (n + 31) / 32;
  tg.simd.assign(nsg, SimdGroup{});
  for (unsigned s = 0; s < nsg; s++) tg.simd[s].size = std::min(32u, n - s * 32);
  return tg;
}

// work runs threadgroups of j until none is left or one failed.
inline void work(Job& j) {
  Threadgroup& tg = prepare(j);
  const uint32_t* grid = j.grid;
  const uint32_t* group = j.group;
  unsigned nsg = unsigned(tg.simd.size());
  for (;;) {
    size_t k = j.next.fetch_add(1);
    if (k >= j.tgs.size() || state().failed) return;
    unsigned lin = j.tgs[k];
    uint32_t gx = lin % grid[0], gy = (lin / grid[0]) % grid[1], gz = lin / (grid[0] * grid[1]);
    for (unsigned i = 0; i < tg.count; i++) {
      Builtins& b = tg.fibers[i].b;
      uint tx = i % group[0], ty = (i / group[0]) % group[1], tz = i / (group[0] * group[1]);
      b.thread_position_in_threadgroup = uint3(tx, ty, tz);
      b.threadgroup_position_in_grid = uint3(gx, gy, gz);
      b.threads_per_threadgroup = uint3(group[0], group[1], group[2]);
      b.threadgroups_per_grid = uint3(grid[0], grid[1], grid[2]);
      b.threads_per_grid = uint3(grid[0] * group[0], grid[1] * group[1], grid[2] * group[2]);
      b.thread_position_in_grid = uint3(gx * group[0] + tx, gy * group[1] + ty, gz * group[2] + tz);
      b.thread_index_in_threadgroup = i;
      b.thread_index_in_simdgroup = i % 32;
      b.simdgroup_index_in_threadgroup = i / 32;
      b.threads_per_simdgroup = 32;
      b.simdgroups_per_threadgroup = nsg;
    }
    if (!run_threadgroup(tg, j.fn, j.order, j.seed ^ lin)) return;
  }
}

// Pool is the OS threads beyond the main one; each dispatch wakes them all.
struct Pool {
  std::vector<std::thread> threads;
  std::mutex mu;
  std::condition_variable wake, idle;
  Job* job = nullptr;
  uint64_t gen = 0;
  unsigned busy = 0;

  explicit Pool(unsigned extra) {
    for (unsigned i = 0; i < extra; i++) threads.emplace_back([this] { loop(); });
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      Job* j;
      {
        std::unique_lock<std::mutex> l(mu);
        wake.wait(l, [&] { return gen != seen; });
        seen = gen;
        j = job;
      }
      work(*j);
      std::lock_guard<std::mutex> l(mu);
      if (--busy == 0) idle.notify_all();
    }
  }
  void run(Job& j) {
    if (threads.empty() || j.tgs.size() == 1) {
      work(j);
      return;
    }
    {
      std::lock_guard<std::mutex> l(mu);
      job = &j;
      busy = unsigned(threads.size());
      gen++;
    }
    wake.notify_all();
    work(j);
    std::unique_lock<std::mutex> l(mu);
    idle.wait(l, [&] { return busy == 0; });
  }
};

inline unsigned pool_threads() {
  const char* s = std::getenv("LILY_EMU_THREADS");
  unsigned n = s ? unsigned(std::atoi(s)) : std::thread::hardware_concurrency();
  return n < 1 ? 1 : n > 256 ? 256 : n;
}

struct Mapping {
  char* p;       // the buffer's first byte
  size_t len;    // the buffer's length
  char* base;    // what mmap returned (p, or the page below it for a file mapped at an offset)
  size_t maplen; // what was mapped
};

// do_map_file maps a window of a read-only file (MapFile); kernels only read such buffers.
inline bool do_map_file(std::map<uint32_t, Mapping>& maps) {
  uint32_t id, plen;
  uint64_t off, len;
  if (!read_all(&id, 4) || !read_all(&off, 8) || !read_all(&len, 8) || !read_all(&plen, 4) || plen > 4096) return false;
  std::string path(plen, '\0');
  if (!read_all(&path[0], plen)) return false;
  uint32_t st = 1;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd >= 0 && len > 0 && !maps.count(id)) {
    uint64_t page = uint64_t(sysconf(_SC_PAGESIZE)), delta = off % page;
    void* m = mmap(nullptr, len + delta, PROT_READ, MAP_SHARED, fd, off_t(off - delta));
    if (m != MAP_FAILED) {
      maps[id] = Mapping{static_cast<char*>(m) + delta, len, static_cast<char*>(m), len + delta};
      st = 0;
    }
  }
  if (fd >= 0) close(fd);
  write_all(&st, 4);
  std::fflush(stdout);
  return true;
}

inline bool do_map(std::map<uint32_t, Mapping>& maps) {
  uint32_t id, plen;
  uint64_t len;
  if (!read_all(&id, 4) || !read_all(&len, 8) || !read_all(&plen, 4) || plen > 4096) return false;
  std::string path(plen, '\0');
  if (!read_all(&path[0], plen)) return false;
  uint32_t st = 1;
  int fd = open(path.c_str(), O_RDWR);
  if (fd >= 0 && len > 0 && !maps.count(id)) {
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      maps[id] = Mapping{static_cast<char*>(m), len, static_cast<char*>(m), len};
      st = 0;
    }
  }
  if (fd >= 0) close(fd);
  write_all(&st, 4);
  std::fflush(stdout);
  return true;
}

// do_dispatch reads one dispatch request and answers it; false when the request is malformed.
inline bool do_dispatch(const Entry* table, size_t n, std::map<uint32_t, Mapping>& maps, Pool& pool) {
  uint32_t len;
  if (!read_all(&len, 4) || len > 4096) return false;
  std::string name(len, '\0');
  Job j;
  uint32_t ord, nargs;
  if (!read_all(&name[0], len) || !read_all(j.grid, 12) || !read_all(j.group, 12) || !read_all(&ord, 4) ||
      !read_all(&j.seed, 8) || !read_all(&nargs, 4) || nargs > 32)
    return false;
  std::vector<std::vector<char>> inl;
  std::vector<size_t> inl_slot;
  std::string err;
  for (int i = 0; i < 32; i++) slots()[i] = Slot{};
  for (uint32_t a = 0; a < nargs; a++) {
    uint32_t slot, kind;
    if (!read_all(&slot, 4) || slot >= 32 || !read_all(&kind, 4)) return false;
    if (kind == 0) {
      uint64_t bl;
      if (!read_all(&bl, 8)) return false;
      inl.emplace_back(bl + 16);  // zero bytes past the end: a stray read stays in memory
      if (bl && !read_all(inl.back().data(), bl)) return false;
      inl.back().resize(bl);
      inl_slot.push_back(slot);
      slots()[slot] = Slot{inl.back().data(), bl};
    } else if (kind == 1) {
      uint32_t id;
      uint64_t off, bl;
      if (!read_all(&id, 4) || !read_all(&off, 8) || !read_all(&bl, 8)) return false;
      auto m = maps.find(id);
      if (m == maps.end() || off > m->second.len || bl > m->second.len - off)
        err = "argument " + std::to_string(slot) + ": window outside mapped buffer " + std::to_string(id);
      else
        slots()[slot] = Slot{m->second.p + off, bl};
    } else {
      return false;
    }
  }
  const Entry* e = nullptr;
  for (size_t i = 0; i < n; i++)
    if (name == table[i].name) e = &table[i];
  unsigned threads = j.group[0] * j.group[1] * j.group[2];
  uint64_t groups = uint64_t(j.grid[0]) * j.grid[1] * j.grid[2];
  if (!e) err = "unknown kernel " + name;
  else if (threads == 0 || threads > 1024) err = "threadgroup size must be 1..1024";
  else if (groups == 0 || groups > (1u << 31)) err = "bad grid";
  if (!err.empty()) {
    answer_error(err);
    return true;
  }
  DispatchState& s = state();
  s.kernel_name = e->name;
  s.error.clear();
  s.failed = false;
  j.fn = e->fn;
  j.order = ord <= kRandom ? Order(ord) : kInOrder;
  uint64_t rng = j.seed * 0x9e3779b97f4a7c15ull + 7;
  order(j.tgs, unsigned(groups), j.order, rng);
  pool.run(j);
  if (s.failed) {
    answer_error(s.error);
    return true;
  }
  uint32_t st = 0;
  write_all(&st, 4);
  for (auto& b : inl) {
    uint64_t bl = b.size();
    write_all(&bl, 8);
    write_all(b.data(), bl);
  }
  std::fflush(stdout);
  return true;
}

inline int serve(const Entry* table, size_t n) {
  std::map<uint32_t, Mapping> maps;
  Pool* pool = new Pool(pool_threads() - 1);  // never destroyed: its threads run until exit
  for (;;) {
    uint32_t magic;
    if (!read_all(&magic, 4)) std::_Exit(0);
    bool ok = false;
    if (magic == 0x554d454cu) {
      ok = do_dispatch(table, n, maps, *pool);
    } else if (magic == 0x50414d4cu) {
      ok = do_map(maps);
    } else if (magic == 0x46504d4cu) {
      ok = do_map_file(maps);
    } else if (magic == 0x504d4e55u) {
      uint32_t id;
      ok = read_all(&id, 4);
      auto m = maps.find(id);
      if (ok && m != maps.end()) {
        munmap(m->second.base, m->second.maplen);
        maps.erase(m);
      }
    }
    if (!ok) {
      answer_error("malformed request");
      return 2;
    }
  }
}

}  // namespace lily_emu
