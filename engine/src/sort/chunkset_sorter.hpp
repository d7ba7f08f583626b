#pragma once
// The per-chunkset multi-GPU sort behind the sort phase (paper, Section 3.1): the pipeline in
// sort_phase.cu copies a chunkset's g chunks into the primary buffers, hands them to a ChunksetSorter,
// and the sorter leaves the chunkset sorted in host memory. The radix-partitioning sorter
// (radix_sorter.cu) and a merge-based sorter implement the same interface.
//
// Contract of ChunksetSorter::sort(job):
// - On entry, chunk d of the chunkset is in gpus[d].keys/payload (`size` tuples, keys already in the
//   user's representation: signed keys NOT flipped) once gpus[d].ready has completed on the device.
//   Work must start only after `compute` waits on `ready` (the sorter does that wait).
// - The sorter may use both buffers (`keys/payload` and `alt_keys/alt_payload`, `capacity` tuples each)
//   of every GPU and take scratch from gpus[d].memory in stream order on gpus[d].compute.
// - It writes the sorted chunkset (keys in the user's representation, payloads with their keys) to
//   host_keys/host_payload, rows [0, sum of sizes), with D2H copies on gpus[d].d2h, and records
//   gpus[d].d2h_done on gpus[d].d2h after the last copy that reads GPU d's buffers. Until d2h_done the
//   pipeline does not touch any buffer of GPU d (the spare one included).
// - It records its part boundaries into gpus[d].timeline (events with timing) so that the pipeline can
//   report per-part times, and adds the bytes it moves between GPUs to job.bytes_nvlink.
// - Host synchronisation inside sort() is allowed (the radix sorter needs one per histogram exchange).
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "alloc/stack_allocator.hpp"

namespace mgjoin::sort {

/// Widths of a relation's tuples as the GPUs see them.
struct TupleLayout {
  int key_bytes = 8;       ///< 4 or 8
  int payload_bytes = 0;   ///< 0 (key-only), 4 or 8
  bool signed_key = false; ///< flip the sign bit on the GPU to sort signed keys as unsigned
  int tuple_bytes() const { return key_bytes + payload_bytes; }
};

/// Parts of the sort phase that are timed separately ("sort.h2d", "sort.partition", ...).
enum class SortPart : std::uint8_t { H2D, Partition, Exchange, LocalSort, D2H };
inline constexpr int kSortParts = 5;
constexpr std::string_view sort_part_name(SortPart p) {
  constexpr std::array<std::string_view, kSortParts> names{"sort.h2d", "sort.partition", "sort.exchange",
                                                           "sort.local_sort", "sort.d2h"};
  return names[static_cast<int>(p)];
}

/// Begin/end events of each part of one chunkset on one GPU (timing events, created by the pipeline).
/// A part a sorter does not have (e.g. Partition in a merge sort) is left unrecorded.
struct PartTimeline {
  std::array<cudaEvent_t, kSortParts> begin{};
  std::array<cudaEvent_t, kSortParts> end{};
  std::array<bool, kSortParts> recorded{};
  void record_begin(SortPart p, cudaStream_t s);
  void record_end(SortPart p, cudaStream_t s);
};

/// One GPU's share of a chunkset job.
struct GpuChunk {
  int device = 0;
  cudaStream_t compute = nullptr;      ///< partition, exchange, local sort
  cudaStream_t d2h = nullptr;          ///< copies back to host
  cudaEvent_t ready = nullptr;         ///< the H2D of this chunk has completed after this event
  cudaEvent_t d2h_done = nullptr;      ///< recorded by the sorter after its last D2H of this GPU
  alloc::DeviceStackAllocator* memory = nullptr;
  void* keys = nullptr;                ///< primary buffer: the chunk as copied in
  void* payload = nullptr;             ///< nullptr for key-only relations
  void* alt_keys = nullptr;            ///< secondary buffer (same capacity)
  void* alt_payload = nullptr;
  std::int64_t size = 0;               ///< tuples of this chunk
  std::int64_t capacity = 0;           ///< tuples each buffer can hold (chunk + padding)
  PartTimeline* timeline = nullptr;
  /// A third buffer of `capacity` tuples that is free during this chunkset (the flipped primary buffer
  /// when no later chunkset is on its way in), or nullptr. The radix sorter sorts in it, so that its
  /// units can sort while peers still read the secondary buffer (exchange and local sort overlap).
  void* spare_keys = nullptr;
  void* spare_payload = nullptr;
};

/// One chunkset to sort across the GPUs of `gpus` (index = position in the chunkset).
struct ChunksetJob {
  std::span<GpuChunk> gpus;
  TupleLayout layout;
  std::int64_t chunk_size = 0;   ///< the plan's chunk size (tuples per GPU): base of ε and γ
  void* host_keys = nullptr;     ///< destination of the sorted chunkset
  void* host_payload = nullptr;
  std::uint64_t bytes_nvlink = 0;  ///< out: bytes moved between different GPUs
};

/// A multi-GPU sort of one chunkset (see the contract at the top of this file).
class ChunksetSorter {
 public:
  virtual ~ChunksetSorter() = default;
  virtual void sort(ChunksetJob& job) = 0;
  virtual std::string_view name() const = 0;
};

}  // namespace mgjoin::sort
