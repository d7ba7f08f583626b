#pragma once
// How much more host memory this process may take, checked before large host allocations so that a
// join that cannot fit is refused with a message instead of being killed by the kernel's OOM killer
// (Linux overcommits: malloc succeeds, and the process dies when it first touches the pages).
//
// The room is the tightest of the bounds that can be read:
//   - MemAvailable (/proc/meminfo), unless a virtio-mem device is bound: on such virtual machines
//     MemTotal starts small and grows as memory is used, so MemAvailable is no bound;
//   - the cgroup's memory limit less its usage without the inactive page cache (v2 memory.max,
//     memory.current and memory.stat of the process's cgroup and its ancestors, or v1's);
//   - MGJOIN_HOST_MEMORY_LIMIT (bytes, K/M/G/T suffixes) less this process's resident memory: a cap for
//     users who share a machine, and the way tests make host memory "too small".
#include <mgjoin/types.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace mgjoin::alloc {

/// What the machine says, read by read_host_memory(); tests build their own.
struct HostMemoryReadings {
  std::optional<std::uint64_t> mem_available;  ///< /proc/meminfo MemAvailable
  bool memory_grows = false;                   ///< a virtio-mem device is bound: MemAvailable is no bound
  std::optional<std::uint64_t> cgroup_limit;   ///< memory.max (v2) or memory.limit_in_bytes (v1)
  std::uint64_t cgroup_usage = 0;              ///< memory.current (v2) or usage_in_bytes (v1), less inactive_file
  std::optional<std::uint64_t> env_limit;      ///< MGJOIN_HOST_MEMORY_LIMIT
  std::uint64_t resident = 0;                  ///< this process's resident memory (/proc/self/statm)
};

/// More host memory the process may take, and what sets that bound (for messages).
struct HostMemoryRoom {
  std::optional<std::uint64_t> bytes;  ///< nullopt: no bound could be read
  std::string bound;                   ///< "MemAvailable", "the cgroup's memory limit", "MGJOIN_HOST_MEMORY_LIMIT"
};

/// Reads /proc/meminfo, the cgroup files, /proc/self/statm and MGJOIN_HOST_MEMORY_LIMIT.
/// @throw InputError when MGJOIN_HOST_MEMORY_LIMIT is set but not a byte count.
HostMemoryReadings read_host_memory();

/// Checks the environment variables that size host memory (MGJOIN_HOST_MEMORY_LIMIT,
/// MGJOIN_PINNED_CACHE_BYTES): the library's entry points call it, so a bad value is an error at once
/// rather than when a large allocation first reads it. @throw InputError naming the variable.
void check_host_memory_environment();

/// MGJOIN_PINNED_CACHE_BYTES, or nullopt when unset (a bad value reads as unset here; the entry
/// points have refused it already).
std::optional<std::uint64_t> pinned_cache_bytes_from_environment();

/// The tightest bound of `readings`.
HostMemoryRoom host_memory_room(const HostMemoryReadings& readings);

/// Host memory kept free beside a plan: the kernel, the page cache and small allocations need some.
inline constexpr std::uint64_t kHostMemoryReserve = 256ull << 20;

/// Host allocations (a column, the inputs a join reads) from this size up are checked with
/// expect_host_memory before they are taken (a few /proc reads: negligible beside touching 64 MiB).
inline constexpr std::uint64_t kCheckedHostBytes = 64ull << 20;

/// @throw OutOfMemory naming `what` when `bytes` more (and the reserve) do not fit the machine's room,
/// even after the pinned blocks that columns gave back are freed:
/// "host memory: <what> needs 40.0 GiB more, but only 12.5 GiB can be had (MemAvailable, ...)".
void expect_host_memory(std::uint64_t bytes, const std::string& what);

/// expect_host_memory for `rows` rows of `row_bytes` each, the product checked for overflow (a product
/// past 2^64 bytes never fits).
void expect_host_rows(std::uint64_t rows, std::uint64_t row_bytes, const std::string& what);

/// Frees the pinned blocks kept for reuse (HostColumn's cache); returns the bytes freed.
std::uint64_t release_pinned_cache();

/// Bytes of the pinned blocks kept for reuse.
std::uint64_t pinned_cache_bytes();

/// Whether a pinned column of `size` values of `type` would come from the blocks kept for reuse (no
/// new pinning).
bool pinned_cache_serves(DType type, std::int64_t size);

/// Whether pinned memory taken now may serve later joins of this process through the blocks kept for
/// reuse: true unless said otherwise (a library user or `mgjoin bench` joins again); the CLI's `join`,
/// which joins once, says false.
void expect_later_joins(bool expected);
bool later_joins_expected();

/// Pinned blocks from kRegisteredPinnedBytes up come in size classes, 16 per power of two and whole
/// 2 MiB pages (at most 1/16 more than asked): a request a few rows larger than a cached block falls
/// in its class and reuses it. Exact sizes missed by 64 bytes between runs of one join and pinned its
/// 24 GB output afresh (0.8-5.1 s of a 0.78 s join on 2 H200s). Smaller blocks keep their size.
inline constexpr std::uint64_t kRegisteredPinnedBytes = 64ull << 20;
std::uint64_t pinned_block_bytes(std::uint64_t bytes);

/// Whether `bytes` more (and the reserve) fit the machine's room, counting the pinned blocks kept for
/// reuse as free (expect_host_memory would free them) but freeing nothing: for a plan that only
/// compares flows, which must not cost the next join its pinned output columns.
bool host_memory_would_hold(std::uint64_t bytes);

/// The same check against given readings (tests).
void expect_host_memory(std::uint64_t bytes, const std::string& what, const HostMemoryReadings& readings);

/// host_memory_would_hold against given readings and `cached` bytes of pinned blocks (tests).
bool host_memory_would_hold(std::uint64_t bytes, const HostMemoryReadings& readings, std::uint64_t cached);

/// The most host memory this process has held resident so far (getrusage's ru_maxrss), for reports.
std::uint64_t peak_resident_bytes();

/// "40.0 GiB", "512.0 MiB", "4096 B": sizes in messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace mgjoin::alloc
