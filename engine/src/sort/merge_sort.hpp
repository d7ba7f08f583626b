#pragma once
// Merge-based multi-GPU sort of one chunkset (paper, Section 3.1.1, Figure 3; after Tanasic et al.):
// each GPU sorts its chunk locally (CUB radix sort), then merge stages bring the g chunks into global
// order. A merge stage pairs a left and a right group of chunks: pivot search over both (P2P reads),
// block swap (bi-directional P2P copies into the secondary buffers) and an on-GPU merge of the two sorted
// runs a chunk then holds. Groups are merged recursively: sort both halves, merge across them, sort both
// halves again, so g = 2, 4, 8 take 1, 3, 7 stages.
//
// Current limitations
// - g must be a power of two, 1 <= g <= 16 (merge_sort_supported); the caller uses the radix strategy
//   otherwise, telling the user merge_sort_unsupported_message(g).
// - Peer access must be enabled between every pair of the chunkset's GPUs (p2p::PeerAccess): the pivot
//   search reads remote chunks with plain loads.
// - Merge temporary storage (CUB DeviceMerge, ~8 bytes per tile of a few thousand tuples) comes from the
//   same stack as the local sort's, after the local sort has freed it.
#include "engine/src/sort/chunkset_sorter.hpp"
#include "engine/src/sort/local_sort.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace mgjoin::sort {

/// Largest GPU count the merge strategy handles (each side of a stage holds at most 8 chunks).
inline constexpr int kMaxMergeSortGpus = 16;

/// True when the merge strategy can sort a chunkset of `g` chunks: g is a power of two <= 16.
bool merge_sort_supported(int g);
/// One line for the user when it cannot: "merge-based sort needs a power-of-two number of GPUs ...".
std::string merge_sort_unsupported_message(int g);

/// One merge of a stage: chunks [first, mid) form the left side, [mid, last) the right side.
struct GroupMerge {
  int first = 0;
  int mid = 0;
  int last = 0;
  bool operator==(const GroupMerge&) const = default;
};
/// Group merges that touch disjoint chunks and run at the same time.
using MergeStage = std::vector<GroupMerge>;

/// The stages that sort g locally sorted chunks (paper, Figure 3): g = 4 gives
/// {(0|1), (2|3)}, {(0,1|2,3)}, {(0|1), (2|3)}. Empty for g = 1. Expects merge_sort_supported(g).
std::vector<MergeStage> merge_schedule(int g);

/// Where a chunkset sorted on the GPUs is: per GPU, the buffer holding its sorted chunk.
struct MergeSortResult {
  std::vector<SortedIn> sorted_in;
  std::uint64_t bytes_nvlink = 0;  ///< key and payload bytes moved between different GPUs
};

/// Sorts the chunkset in gpus[d].keys/payload (d = 0..g-1, after gpus[d].ready) across the GPUs, all
/// work enqueued on gpus[d].compute: afterwards chunk 0, 1, ..., g-1 concatenated is sorted by key,
/// every chunk keeps its size, payloads travel with their keys, and keys are back in the user's
/// representation (signed keys are flipped for the sort and flipped back). GPU d's sorted chunk is in
/// its primary (keys/payload) or alternate (alt_keys/alt_payload) buffer as the result says. Records the
/// LocalSort and Exchange parts (the merge stages: pivots, swaps and merges) where timelines are given.
/// The host waits once per merge stage, for the pivots. Expects merge_sort_supported(gpus.size()).
/// Throws mgjoin::OutOfMemory when a stack is too small for CUB's temporary storage.
MergeSortResult merge_sort_chunkset(std::span<GpuChunk> gpus, const TupleLayout& layout);

/// The merge-based ChunksetSorter ("merge"): merge_sort_chunkset, then each sorted chunk to host memory
/// on its GPU's d2h stream (see the contract in chunkset_sorter.hpp). Expects merge_sort_supported(g)
/// of every job; the caller checks it before choosing this strategy.
std::unique_ptr<ChunksetSorter> make_merge_sorter();

}  // namespace mgjoin::sort
