#pragma once
// GPU building blocks of the co-partitioned flow, callable from host code:
// - partition_chunk: scatters a chunk of tuples into one segment per destination GPU (keys turned into
//   the order-preserving unsigned form on the way), replicating hot-key tuples where the plan says so;
// - resident_join: the merge-path join of a sorted partition pair that sits in one GPU's memory,
//   counting, and optionally recording per row of the probe side Y its matches in the build side X;
// - write_output_window: the output tuples [o_begin, o_end) of a joined pair, in key order, written
//   at exact offsets into device columns (then copied out once).
// Keys are 4 or 8 bytes, payloads 0 (absent), 4 or 8 bytes; all pointers are device memory.
#include "engine/src/copart/partition_plan.hpp"
#include "engine/src/join/output_count.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace mgjoin::copart {

/// One relation's column widths as the kernels see them.
struct Widths {
  int key_bytes = 8;      ///< 4 or 8
  int payload_bytes = 0;  ///< 0, 4 or 8
};

/// Bytes of one materialized output row of R and S moving `r` and `s`: the key and both payloads.
inline std::uint64_t output_row_bytes(const Widths& r, const Widths& s) {
  return static_cast<std::uint64_t>(r.key_bytes) + r.payload_bytes + s.payload_bytes;
}

/// Device scratch partition_chunk needs for chunks of up to `rows` tuples over `gpus` destinations.
std::size_t partition_scratch_bytes(std::int64_t rows, int gpus);

struct PartitionArgs {
  Widths widths;
  Side side = Side::R;
  std::uint64_t key_xor = 0;  ///< sign bit of signed keys (0 for unsigned)
  const void* keys = nullptr;  ///< n keys in the user's representation
  const void* payload = nullptr;
  std::int64_t n = 0;
  std::uint64_t first_row = 0;  ///< global row of keys[0] in its relation (the hot-key hash uses it)
  void* keys_out = nullptr;     ///< room for n * (most copies of a tuple) tuples
  void* payload_out = nullptr;
  /// When set: per output row, the chunk row it came from (late payloads follow their keys by it).
  std::uint32_t* source_out = nullptr;
  /// Device, plan.gpus + 1 entries: segment d of the output is rows [segments[d], segments[d + 1]).
  std::uint64_t* segments = nullptr;
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
};

/// Partitions one chunk by `plan` (stream-ordered; no host synchronization).
void partition_chunk(const PartitionPlan& plan, const PartitionArgs& args, cudaStream_t stream);

/// out[i] = in[source[i]] for i < n, of `bytes` (4 or 8) each: a chunk's late payloads take the places
/// its keys took (PartitionArgs::source_out).
void gather_rows(const void* in, const std::uint32_t* source, std::uint64_t n, int bytes, void* out,
                 cudaStream_t stream);

/// out[i] = i for i < n: the positions a partition's keys are sorted with when payloads come late.
void fill_positions(std::uint32_t* out, std::uint64_t n, cudaStream_t stream);

/// A sorted partition pair in one GPU's memory (keys in the ordered unsigned form).
struct ResidentPair {
  int key_bytes = 8;
  const void* x_keys = nullptr;  ///< build side, sorted
  std::uint64_t nx = 0;
  const void* y_keys = nullptr;  ///< probe side, sorted
  std::uint64_t ny = 0;
};

/// Per probe row y: matches[y] = how many x equal it, first_match[y] = the first such x (when
/// matches[y] > 0). Both device arrays of ny entries (matches: ny + 1, the last set to 0 so that an
/// exclusive scan of it ends in the total).
struct MatchArrays {
  std::uint64_t* matches = nullptr;
  std::uint64_t* first_match = nullptr;
};

/// Device scratch of resident_join (the merge-path bounds of one slice of tiles): a fixed size.
std::size_t resident_join_scratch_bytes();

/// Merge-path join of a resident pair: adds the number of matching (x, y) pairs to *count (device;
/// checked: a count that reaches 2^64 sets its flag), and fills `arrays` when their pointers are set.
/// O(nx + ny) work in coalesced tiles; a key run longer than a tile costs one binary search per probe
/// row of the tiles it spans. `scratch` (resident_join_scratch_bytes()) is used stream-ordered: joins
/// on one stream may share it.
void resident_join(const ResidentPair& pair, detail::TupleCounter* count, const MatchArrays& arrays, void* scratch,
                   cudaStream_t stream);

/// *to = *from, written by a kernel on `stream`: `to` may be mapped host memory (alloc::PinnedHostBacking, mapped).
void publish_counter(const detail::TupleCounter* from, detail::TupleCounter* to, cudaStream_t stream);

/// Device scratch of the exclusive scan of `n` 64-bit counts.
std::size_t scan_scratch_bytes(std::uint64_t n);
/// out[i] = sum of in[0, i) for i < n (stream-ordered).
void exclusive_scan(const std::uint64_t* in, std::uint64_t* out, std::uint64_t n, void* scratch,
                    std::size_t scratch_bytes, cudaStream_t stream);

struct OutputWindowArgs {
  ResidentPair pair;
  const void* x_payload = nullptr;  ///< sorted with x_keys, or late: in arrival order (nullptr: none)
  int x_payload_bytes = 0;
  const std::uint32_t* x_position = nullptr;  ///< late: sorted with x_keys, where each one's payload is
  const void* y_payload = nullptr;
  int y_payload_bytes = 0;
  const std::uint32_t* y_position = nullptr;
  bool x_is_r = true;               ///< which output payload column the x side fills
  const std::uint64_t* offsets = nullptr;      ///< exclusive scan of matches, ny + 1 entries
  const std::uint64_t* first_match = nullptr;  ///< from resident_join
  std::uint64_t key_xor = 0;        ///< turns keys back into the user's representation
  std::uint64_t o_begin = 0, o_end = 0;  ///< the window of output rows
  void* out_key = nullptr;          ///< o_end - o_begin rows each; a column left nullptr is not written
  void* out_r_payload = nullptr;
  void* out_s_payload = nullptr;
  int r_payload_bytes = 0, s_payload_bytes = 0;
};

/// Writes output rows [o_begin, o_end) of a resident pair: row o is the pair (x, y) with y the probe row
/// whose offsets range holds o and x = first_match[y] + (o - offsets[y]); so rows come in key order.
void write_output_window(const OutputWindowArgs& args, cudaStream_t stream);

}  // namespace mgjoin::copart
