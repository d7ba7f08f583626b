#pragma once
// Shared splitters and the skew plan of the co-partitioned flow (pure host code, tested in CI).
//
// Splitters must exist before the first chunk is partitioned, so they come from a sample of both
// relations' keys read from host memory by CPU threads: stratified random positions, one per stratum,
// so sorted and reverse-sorted inputs are sampled as evenly as random ones. Heavy hitters show up in the
// sample; a key whose weight does not fit the GPU it falls on becomes a hot key (partition_plan.hpp).
#include "engine/src/copart/partition_plan.hpp"

#include <mgjoin/types.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace mgjoin::copart {

/// Keys sampled from one relation, in the order-preserving unsigned form, sorted ascending.
struct KeySample {
  std::vector<std::uint64_t> keys;
  std::int64_t rows = 0;  ///< rows of the relation the sample stands for
  /// Rows each sampled key stands for (rows / keys.size()); exact when every row was taken.
  double weight() const { return keys.empty() ? 0 : static_cast<double>(rows) / static_cast<double>(keys.size()); }
  bool exact() const { return static_cast<std::int64_t>(keys.size()) == rows; }
};

/// Rows sampled per relation when it has more (all rows below that): a GPU's share is then known to
/// about 0.2% of the relation, and sampling and sorting take a few milliseconds.
inline constexpr std::int64_t kSampleRows = std::int64_t{1} << 16;

/// A key column in the order-preserving unsigned form: signed keys get their sign bit flipped.
std::uint64_t ordered_key(const ColumnView& keys, std::int64_t row);

/// Samples `samples` keys of `keys` at stratified random positions (every key when samples >= rows),
/// deterministic in `seed`, with all OpenMP threads.
KeySample sample_keys(const ColumnView& keys, std::int64_t samples = kSampleRows, std::uint64_t seed = 1);

/// Tuning of choose_plan.
struct PlanOptions {
  /// A key heavier than this fraction of a GPU's share that does not fit the GPU it falls on is split
  /// over several GPUs; lighter ones move whole to the next GPU.
  double hot_fraction = 0.1;
};

/// Splitters for `gpus` GPUs (1..kMaxGpus) balancing R + S tuples per GPU, with hot keys split: equal
/// parts, or GPU d taking `shares[d]` of the whole (positive weights, one per GPU, any sum; the bucketed
/// flow's resident groups are larger or smaller than its host groups).
PartitionPlan choose_plan(const KeySample& r, const KeySample& s, int gpus, const PlanOptions& options = {},
                          std::span<const double> shares = {});

/// Tuples of each side each GPU should receive under `plan`, estimated from the samples (replicated
/// hot-key tuples counted on every GPU of their run), and a bound that the real counts stay under
/// unless the sample misled (the flow checks the real counts and gives up cleanly past the bound).
struct PartitionSizes {
  std::array<std::vector<std::int64_t>, 2> estimate;  ///< [side][gpu]
  std::array<std::vector<std::int64_t>, 2> bound;     ///< [side][gpu]
  /// Most GPUs one tuple of each side is copied to (1, or a hot key's span on its replicated side).
  std::array<int, 2> max_copies{1, 1};
};

PartitionSizes estimate_sizes(const PartitionPlan& plan, const KeySample& r, const KeySample& s);

/// The part of a sorted sample that falls in group q of `groups` (bucket groups, or the passes' ranges), standing for `rows` rows: the keys
/// whose tuples go to q; a hot key's split-side keys in proportion to q's share of it.
KeySample group_sample(const KeySample& sample, Side side, const PartitionPlan& groups, int q, std::int64_t rows);

/// What a one-GPU plan needs of a relation of `rows` rows: no keys (one GPU takes every row, and
/// estimate_sizes counts them exactly), so that rows already on a GPU need not be sampled.
inline KeySample one_gpu_sample(std::int64_t rows) { return {{}, rows}; }

}  // namespace mgjoin::copart
