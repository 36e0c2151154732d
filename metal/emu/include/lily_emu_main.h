// The emulator process: reads dispatch requests on stdin, runs them, answers on stdout.
//
// Request (little-endian): u32 magic 0x554d454c ("LEMU"), u32 name length, name, u32 grid[3]
// (threadgroups), u32 group[3] (threads per threadgroup), u32 buffer count, then per buffer u32
// index, u64 length, bytes. Answer: u32 status (0 ok), then per buffer u64 length and bytes; on an
// error, status 1, u32 message length, message.
#pragma once
#include <string>

namespace lily_emu {

struct Entry {
  const char* name;
  void (*fn)(const Builtins&);
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

inline void dispatch(void (*fn)(const Builtins&), const uint32_t grid[3], const uint32_t group[3]) {
  unsigned n = group[0] * group[1] * group[2];
  static thread_local Threadgroup tg;
  // Fibers (and their stacks) are kept across dispatches: reallocating 256 KiB stacks whenever
  // the threadgroup size changes made alternating dispatches ten times slower.
  if (tg.fibers.size() < n) tg.fibers.resize(n);
  for (unsigned i = 0; i < n; i++)
    if (tg.fibers[i].stack.size() != 256 * 1024) tg.fibers[i].stack.assign(256 * 1024, 0);
  tg.count = n;
  unsigned nsg = (n + 31) / 32;
  tg.simd.assign(nsg, SimdGroup{});
  for (unsigned s = 0; s < nsg; s++) tg.simd[s].size = std::min(32u, n - s * 32);
  for (uint32_t gz = 0; gz < grid[2]; gz++)
    for (uint32_t gy = 0; gy < grid[1]; gy++)
      for (uint32_t gx = 0; gx < grid[0]; gx++) {
        for (unsigned i = 0; i < n; i++) {
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
        run_threadgroup(tg, fn);
      }
}

inline int serve(const Entry* table, size_t n) {
  for (;;) {
    uint32_t magic;
    if (!read_all(&magic, 4)) return 0;
    if (magic != 0x554d454cu) { answer_error("bad magic"); return 2; }
    uint32_t len;
    if (!read_all(&len, 4) || len > 4096) { answer_error("bad name"); return 2; }
    std::string name(len, '\0');
    uint32_t grid[3], group[3], nbuf;
    if (!read_all(&name[0], len) || !read_all(grid, 12) || !read_all(group, 12) || !read_all(&nbuf, 4) || nbuf > 32) {
      answer_error("truncated request");
      return 2;
    }
    std::vector<std::vector<unsigned char>> bufs(nbuf);
    std::vector<uint32_t> idx(nbuf);
    for (uint32_t i = 0; i < nbuf; i++) {
      uint64_t bl;
      if (!read_all(&idx[i], 4) || idx[i] >= 32 || !read_all(&bl, 8)) { answer_error("truncated buffer"); return 2; }
      bufs[i].resize(bl + 16);
      if (bl && !read_all(bufs[i].data(), bl)) { answer_error("truncated buffer data"); return 2; }
      bufs[i].resize(bl);
      buffer_slot(idx[i]) = bufs[i].data();
    }
    const Entry* e = nullptr;
    for (size_t i = 0; i < n; i++)
      if (name == table[i].name) e = &table[i];
    if (!e) { answer_error("unknown kernel " + name); continue; }
    unsigned threads = group[0] * group[1] * group[2];
    if (threads == 0 || threads > 1024) { answer_error("threadgroup size must be 1..1024"); continue; }
    dispatch(e->fn, grid, group);
    uint32_t st = 0;
    write_all(&st, 4);
    for (auto& b : bufs) {
      uint64_t bl = b.size();
      write_all(&bl, 8);
      write_all(b.data(), bl);
    }
    std::fflush(stdout);
  }
}

}  // namespace lily_emu
