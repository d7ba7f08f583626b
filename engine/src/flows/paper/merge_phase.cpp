#include "engine/src/flows/paper/merge_phase.hpp"

#include "host_merge/multiway_merge.hpp"
#include "host_merge/parallel_copy.hpp"

#include <mgjoin/error.hpp>

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace mgjoin::detail {
namespace {

/// The merge writes raw bytes into the buffer, so only its byte capacity matters.
void grow(HostColumn& column, std::int64_t n, DType type) {
  if (column.bytes() >= static_cast<std::size_t>(n) * dtype_size(type)) return;
  column = HostColumn::allocate(type, n, MemoryKind::Pageable);
}

}  // namespace

void MergeBuffers::reserve(std::int64_t n, DType key_type, std::optional<DType> payload_type) {
  grow(keys, n, key_type);
  if (payload_type) grow(payloads, n, *payload_type);
}

std::uint64_t merge_memory_needed(const RelationView& r, const RelationView& s, const sort::SortPlan& plan,
                                  const MergeBuffers& buffers) {
  std::uint64_t keys = 0, payloads = 0;
  for (const auto& [rel, k] : {std::pair{&r, plan.k_r}, std::pair{&s, plan.k_s}}) {
    if (k <= 1) continue;
    keys = std::max<std::uint64_t>(keys, rel->key.bytes());
    if (rel->payload) payloads = std::max<std::uint64_t>(payloads, rel->payload->bytes());
  }
  const auto more = [](std::uint64_t want, std::uint64_t have) { return want > have ? want - have : 0; };
  return more(keys, buffers.keys.bytes()) + more(payloads, buffers.payloads.bytes());
}

void merge_phase(RelationView rel, std::span<const sort::RowRange> runs, MergeBuffers& buffers) {
  if (runs.size() <= 1) return;
  const std::size_t key_bytes = dtype_size(rel.key.type);
  const std::size_t payload_bytes = rel.payload ? dtype_size(rel.payload->type) : 0;
  buffers.reserve(rel.size(), rel.key.type, rel.payload ? std::optional(rel.payload->type) : std::nullopt);

  std::vector<host_merge::RawRun> raw;
  raw.reserve(runs.size());
  for (const auto& run : runs)
    raw.push_back({static_cast<const char*>(rel.key.data) + run.begin * key_bytes,
                   rel.payload ? static_cast<const char*>(rel.payload->data) + run.begin * payload_bytes : nullptr,
                   run.size()});
  host_merge::multiway_merge(rel.key.type, static_cast<int>(payload_bytes), raw, buffers.keys.data(),
                             rel.payload ? buffers.payloads.data() : nullptr);

  const std::size_t n = static_cast<std::size_t>(rel.size());
  host_merge::parallel_copy(rel.key.data, buffers.keys.data(), n * key_bytes);
  if (rel.payload) host_merge::parallel_copy(rel.payload->data, buffers.payloads.data(), n * payload_bytes);
}

}  // namespace mgjoin::detail
