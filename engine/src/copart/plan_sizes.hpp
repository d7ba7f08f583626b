#pragma once
// What the co-partitioned planners (copart_plan.cpp, bucket_plan.cpp) share: chunk sizes, widths, and
// the bytes of two chunk slots as ChunkSlot takes them. Private to the planners.
#include "engine/src/copart/copart_plan.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mgjoin::copart::plan_detail {

/// Chunks per GPU per relation the transfer aims at, so that H2D, partitioning and NVLink overlap.
inline constexpr std::int64_t kRoundsWanted = 8;
inline constexpr std::int64_t kMinChunkRows = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxChunkRows = std::int64_t{1} << 25;
inline constexpr std::int64_t kMinPass1ChunkRows = std::int64_t{1} << 16;
/// Room kept on each GPU for counters, segment bounds and allocation alignment.
inline constexpr std::uint64_t kSlackBytes = 64ull << 20;

inline std::uint64_t u64(std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(v, 0)); }

inline int width(const Widths& w) { return w.key_bytes + w.payload_bytes; }

inline Widths moved_widths(const RelationView& rel, OutputMode output) {
  Widths w;
  w.key_bytes = static_cast<int>(dtype_size(rel.key.type));
  w.payload_bytes = output == OutputMode::Materialize && rel.payload ? static_cast<int>(dtype_size(rel.payload->type)) : 0;
  return w;
}

inline std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}


/// Two chunk slots of `chunk` rows partitioned over `destinations`, as ChunkSlot allocates them: the
/// input and the partitioned output (with the most copies of a row either side has) at the widest key
/// and payload of either side, and the partition scratch.
inline std::uint64_t two_slots_bytes(std::int64_t chunk, const Widths& r, const Widths& s, const std::array<int, 2>& copies,
                              int destinations, const ScratchSizes& scratch) {
  const auto row = static_cast<std::uint64_t>(std::max(r.key_bytes, s.key_bytes) + std::max(r.payload_bytes, s.payload_bytes));
  const auto most = static_cast<std::uint64_t>(std::max(copies[0], copies[1]));
  return 2 * (u64(chunk) * row * (1 + most) + scratch.partition(chunk, destinations));
}

}  // namespace mgjoin::copart::plan_detail
