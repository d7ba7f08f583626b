// HostColumn's memory (declared in core's <mgjoin/types.hpp>): pageable with huge pages, or pinned
// through a cache of pinned blocks. It lives in alloc/, the one module that calls CUDA's allocators.
#include "alloc/host_memory.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/types.hpp>

#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>

namespace mgjoin {

namespace {

/// Large pageable columns are 2 MiB aligned and ask for transparent huge pages: first touch of fresh
/// memory costs a page fault per 4 KiB page, which on virtual machines caps filling a new column at
/// ~0.6 GB/s; huge pages cut the faults 512-fold (a hint: madvise errors are ignored).
constexpr std::size_t kHugePage = std::size_t{2} << 20;

/// `bytes` rounded up to whole huge pages.
std::size_t huge_pages_of(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

void* allocate_pageable(std::size_t bytes) {
  if (bytes < 2 * kHugePage) return std::aligned_alloc(64, bytes);
  const std::size_t rounded = huge_pages_of(bytes);
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p) ::madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

/// Pinned blocks from alloc::kRegisteredPinnedBytes up are mapped, touched by every thread and then
/// registered with CUDA: cudaMallocHost faults and zeroes every page on one thread (1.3 GB/s measured
/// for 15 GiB on the H100 machine), while the kernel zeroes huge pages faulted by many threads at once,
/// and registering pages already present only pins them.
using alloc::kRegisteredPinnedBytes;

/// Frees a block of allocate_pinned (by the same size rule that chose how it was made).
void free_pinned(void* p, std::size_t bytes) {
  if (bytes < kRegisteredPinnedBytes) {
    cudaFreeHost(p);
    return;
  }
  cudaHostUnregister(p);
  ::munmap(p, huge_pages_of(bytes));
}

/// Pinned blocks freed by columns, kept for the next pinned allocation (types.hpp says why). A block
/// serves a request of at least half its size, so a small column does not hold a large block.
class PinnedCache {
 public:
  /// The process's cache. It is never destroyed, so that no block is freed after CUDA has shut down;
  /// its blocks are freed at exit by drain(), which runs before CUDA's own teardown (below).
  static PinnedCache& instance() {
    static PinnedCache* cache = new PinnedCache(limit_from_environment());
    return *cache;
  }

  /// Registers drain() to run at exit. Called after the first pinned allocation, when the CUDA runtime
  /// has registered its teardown; exit handlers run in reverse order, so drain() runs before it, and
  /// the cached blocks are freed while CUDA can still free them (compute-sanitizer's leak check sees
  /// none).
  static void drain_at_exit() {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit([] { instance().drain(); }); });
  }

  /// Frees the cached blocks; blocks given back afterwards are freed at once.
  void drain() {
    release();
    const std::lock_guard lock(mutex_);
    limit_ = 0;
  }

  std::size_t bytes() {
    const std::lock_guard lock(mutex_);
    return cached_;
  }

  /// Frees the cached blocks (host memory is short); returns the bytes freed.
  std::size_t release() {
    const std::lock_guard lock(mutex_);
    for (const auto& [bytes, p] : blocks_) free_pinned(p, bytes);
    blocks_.clear();
    return std::exchange(cached_, 0);
  }

  /// Whether take(bytes) would find a block.
  bool serves(std::size_t bytes) {
    const std::lock_guard lock(mutex_);
    return serving(bytes) != blocks_.end();
  }

  /// A cached block of at least `bytes` (its size in *size), or nullptr.
  void* take(std::size_t bytes, std::size_t* size) {
    const std::lock_guard lock(mutex_);
    const auto it = serving(bytes);
    if (it == blocks_.end()) return nullptr;
    void* p = it->second;
    *size = it->first;
    cached_ -= it->first;
    blocks_.erase(it);
    return p;
  }

  void give(void* p, std::size_t bytes) {
    {
      const std::lock_guard lock(mutex_);
      if (cached_ + bytes <= limit_) {
        blocks_.emplace(bytes, p);
        cached_ += bytes;
        return;
      }
    }
    free_pinned(p, bytes);
  }

 private:
  explicit PinnedCache(std::size_t limit) : limit_(limit) {}

  /// The block that serves `bytes`: the smallest that holds them, unless over twice their size (a small
  /// column does not hold a large block); end() when none. Called under the lock.
  std::multimap<std::size_t, void*>::iterator serving(std::size_t bytes) {
    const auto it = blocks_.lower_bound(bytes);
    return it == blocks_.end() || it->first / 2 > bytes ? blocks_.end() : it;
  }

  static std::size_t limit_from_environment() {
    if (const auto bytes = alloc::pinned_cache_bytes_from_environment()) return *bytes;
    return static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) / 4;
  }

  std::mutex mutex_;
  std::multimap<std::size_t, void*> blocks_;
  std::size_t cached_ = 0;
  std::size_t limit_;
};

/// Maps `bytes` (a multiple of 2 MiB) of huge-page memory, faults it in with every thread and pins it;
/// nullptr when mapping or registering fails.
void* map_and_register(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: errors are ignored
  auto* bytes_at = static_cast<volatile char*>(p);
  const auto pages = static_cast<std::int64_t>(bytes / 4096);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < pages; ++i) bytes_at[i * 4096] = 0;
  if (cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped) != cudaSuccess) {
    cudaGetLastError();
    ::munmap(p, bytes);
    return nullptr;
  }
  return p;
}

/// A newly pinned block of `bytes`; nullptr where CUDA has no driver or device (the CPU path).
void* allocate_pinned(std::size_t bytes) {
  void* p = nullptr;
  if (bytes >= kRegisteredPinnedBytes) {
    int devices = 0;  // no device: no pinning (and no pages touched for nothing)
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      cudaGetLastError();
      return nullptr;
    }
    p = map_and_register(huge_pages_of(bytes));
  } else if (cudaMallocHost(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    p = nullptr;
  }
  if (p) PinnedCache::drain_at_exit();
  return p;
}

/// The bytes a column of `size` values of `type` takes: whole 64-byte lines, at least one.
std::size_t column_bytes(DType type, std::int64_t size) {
  return std::max<std::size_t>(64, (static_cast<std::size_t>(size) * dtype_size(type) + 63) / 64 * 64);
}

/// New host memory for a column: refused with OutOfMemory, before it is taken, when the machine cannot
/// hold it; pinned when asked and possible, else pageable.
void* allocate_new(std::size_t bytes, DType type, std::int64_t size, MemoryKind* kind) {
  if (bytes >= alloc::kCheckedHostBytes)
    alloc::expect_host_memory(bytes, "a " + std::string(dtype_name(type)) + " column of " + std::to_string(size) + " rows");
  void* p = *kind == MemoryKind::Pinned ? allocate_pinned(bytes) : nullptr;
  if (!p) *kind = MemoryKind::Pageable;  // no driver or no device: pageable memory serves the CPU path
  if (!p) p = allocate_pageable(bytes);
  if (!p) throw OutOfMemory("host memory: cannot allocate " + alloc::format_bytes(bytes) + " for a column");
  return p;
}

}  // namespace

namespace alloc {
std::uint64_t pinned_block_bytes(std::uint64_t bytes) {
  if (bytes < kRegisteredPinnedBytes) return bytes;
  const int top = std::bit_width(bytes) - 1;  // 2^top <= bytes < 2^(top + 1)
  const std::uint64_t step = std::max<std::uint64_t>(kHugePage, std::uint64_t{1} << (top - 4));
  return (bytes + step - 1) / step * step;
}

std::uint64_t release_pinned_cache() { return PinnedCache::instance().release(); }
std::uint64_t pinned_cache_bytes() { return PinnedCache::instance().bytes(); }

bool pinned_cache_serves(DType type, std::int64_t size) {
  return PinnedCache::instance().serves(pinned_block_bytes(column_bytes(type, size)));
}

namespace {
std::atomic<bool> later_joins{true};
}  // namespace

void expect_later_joins(bool expected) { later_joins = expected; }
bool later_joins_expected() { return later_joins; }
}  // namespace alloc

void HostColumn::Free::operator()(void* p) const {
  if (!p) return;
  if (kind == MemoryKind::Pinned)
    PinnedCache::instance().give(p, bytes);
  else
    std::free(p);
}

HostColumn HostColumn::allocate(DType type, std::int64_t size, MemoryKind kind) {
  MGJOIN_EXPECTS(size >= 0, "negative column size");
  // 2^58 rows of 8 bytes is past any host memory and keeps the rounding below from wrapping.
  if (static_cast<std::uint64_t>(size) > (std::uint64_t{1} << 58) / dtype_size(type))
    throw OutOfMemory("host memory: a " + std::string(dtype_name(type)) + " column of " + std::to_string(size) +
                      " rows is past any host memory");
  HostColumn c;
  c.type_ = type;
  c.size_ = size;
  std::size_t bytes = column_bytes(type, size);
  if (kind == MemoryKind::Pinned) bytes = alloc::pinned_block_bytes(bytes);
  void* p = kind == MemoryKind::Pinned ? PinnedCache::instance().take(bytes, &bytes) : nullptr;
  if (!p) p = allocate_new(bytes, type, size, &kind);
  c.kind_ = kind;
  c.data_ = std::unique_ptr<void, Free>(p, Free{kind, bytes});
  return c;
}

void HostColumn::truncate(std::int64_t size) {
  MGJOIN_EXPECTS(size >= 0 && size <= size_, "truncate beyond the column's size");
  size_ = size;
}

}  // namespace mgjoin
