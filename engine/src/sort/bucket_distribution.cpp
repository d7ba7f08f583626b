// Bucket distribution, spanning-bucket refinement and bucket fusing (paper, Section 3.1.2).
#include "engine/src/sort/bucket_distribution.hpp"

#include "engine/src/sort/planner.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace mgjoin::sort {
namespace {

/// Global rank of the first tuple of each bucket, plus the total at the end.
std::vector<std::int64_t> bucket_starts(std::span<const Bucket> buckets) {
  std::vector<std::int64_t> starts(buckets.size() + 1, 0);
  for (std::size_t i = 0; i < buckets.size(); ++i) starts[i + 1] = starts[i] + buckets[i].total();
  return starts;
}

/// The boundary-j choice: a bucket edge near the even split, or nothing when the bucket spans GPUs.
struct EdgeChoice {
  bool found = false;
  std::int64_t rank = 0;
};

EdgeChoice nearest_valid_edge(std::int64_t left, std::int64_t right, std::int64_t target, std::int64_t previous,
                              std::int64_t cap, std::int64_t room) {
  EdgeChoice best;
  for (const std::int64_t edge : {left, right}) {
    const bool valid = edge >= previous && edge - previous <= cap && std::llabs(edge - target) <= room;
    if (valid && (!best.found || std::llabs(edge - target) < std::llabs(best.rank - target))) best = {true, edge};
  }
  return best;
}

}  // namespace

std::int64_t Bucket::total() const {
  std::int64_t t = 0;
  for (const auto c : counts) t += c;
  return t;
}

std::uint64_t Bucket::lowest_key(int key_bits) const {
  return bits >= key_bits ? prefix : prefix << (key_bits - bits);
}

std::uint64_t Bucket::highest_key(int key_bits) const {
  return bits >= key_bits ? prefix : lowest_key(key_bits) | ((std::uint64_t{1} << (key_bits - bits)) - 1);
}

std::vector<Bucket> top_level_buckets(std::span<const Histogram> per_gpu) {
  std::vector<Bucket> buckets;
  for (int digit = 0; digit < kRadixBuckets; ++digit) {
    Bucket b{static_cast<std::uint64_t>(digit), kRadixBits, {}};
    for (const auto& h : per_gpu) b.counts.push_back(h[digit]);
    if (b.total() > 0) buckets.push_back(std::move(b));
  }
  return buckets;
}

void refine_bucket(std::vector<Bucket>& buckets, std::size_t index, std::span<const Histogram> per_gpu) {
  MGJOIN_EXPECTS(index < buckets.size(), "refining a bucket that does not exist");
  const Bucket parent = buckets[index];
  MGJOIN_EXPECTS(per_gpu.size() == parent.counts.size(), "one refinement histogram per GPU");
  std::vector<Bucket> children;
  for (int digit = 0; digit < kRadixBuckets; ++digit) {
    Bucket child{(parent.prefix << kRadixBits) | static_cast<std::uint64_t>(digit), parent.bits + kRadixBits, {}};
    for (const auto& h : per_gpu) child.counts.push_back(h[digit]);
    if (child.total() > 0) children.push_back(std::move(child));
  }
  for (std::size_t s = 0; s < parent.counts.size(); ++s) {
    std::int64_t sum = 0;
    for (const auto& c : children) sum += c.counts[s];
    MGJOIN_EXPECTS(sum == parent.counts[s], "refinement histogram does not add up to its bucket");
  }
  buckets.erase(buckets.begin() + static_cast<std::ptrdiff_t>(index));
  buckets.insert(buckets.begin() + static_cast<std::ptrdiff_t>(index), children.begin(), children.end());
}

BucketDistribution distribute_buckets(std::span<const Bucket> buckets, int key_bits, int gpus,
                                      std::int64_t chunk, double epsilon) {
  MGJOIN_EXPECTS(gpus >= 1, "bucket distribution needs a GPU");
  const auto starts = bucket_starts(buckets);
  const std::int64_t n = starts.back();
  const std::int64_t share = n == 0 ? 0 : (n - 1) / gpus + 1;
  const auto slack = static_cast<std::int64_t>(std::floor(epsilon * static_cast<double>(chunk)));
  // A bucket spans only when it does not fit its GPU (paper Section 3.1.2): a GPU holds a chunk plus
  // ε·chunk. A full chunkset's even share is the chunk; a smaller (last) one leaves its GPUs more room,
  // and measuring that room from its own even share refined a crowded bucket down to its last byte.
  const std::int64_t cap = std::max(share, chunk) + slack;
  const std::int64_t room = cap - share;  // how far a boundary may stray from the even split

  BucketDistribution out;
  out.boundaries.assign(gpus + 1, 0);
  out.boundaries[gpus] = n;
  // The lowest rank boundary j-1 can end on: its value, or for a bucket still to be refined, the lowest
  // edge it may land on once refined. Judging boundary j against that keeps an edge chosen now valid
  // after the refinement moves boundary j-1, instead of it spanning in turn one round later.
  std::int64_t previous = 0;
  for (int j = 1; j < gpus; ++j) {
    const std::int64_t target = even_part(n, gpus, j).begin;
    // The bucket holding rank `target` (the last one whose start is <= target).
    const auto it = std::upper_bound(starts.begin(), starts.end() - 1, target);
    const auto l = static_cast<std::size_t>(it - starts.begin()) - 1;
    if (l >= buckets.size() || starts[l] == target) {  // target is an edge (or the end)
      out.boundaries[j] = previous = std::max(target, previous);
      continue;
    }
    const auto edge = nearest_valid_edge(starts[l], starts[l + 1], target, previous, cap, room);
    if (edge.found) {
      out.boundaries[j] = previous = edge.rank;
      continue;
    }
    // A spanning bucket: a single key may be cut anywhere, otherwise refine it on the next bits.
    out.boundaries[j] = std::max(target, previous);
    if (buckets[l].single_key(key_bits)) {
      previous = out.boundaries[j];
      continue;
    }
    if (out.spanning.empty() || out.spanning.back() != l) out.spanning.push_back(l);
    previous = std::max(previous, target - room);
  }
  return out;
}

int SortUnit::end_bit() const {
  const std::uint64_t differ = lowest_key ^ highest_key;
  return differ == 0 ? 0 : 64 - std::countl_zero(differ);
}

namespace {

/// Per bucket and source GPU, the offset of that piece in the source's secondary buffer.
std::vector<std::vector<std::int64_t>> source_offsets(std::span<const Bucket> buckets, int gpus) {
  std::vector<std::vector<std::int64_t>> offsets(buckets.size(), std::vector<std::int64_t>(gpus));
  std::vector<std::int64_t> running(gpus, 0);
  for (std::size_t l = 0; l < buckets.size(); ++l)
    for (int s = 0; s < gpus; ++s) {
      offsets[l][s] = running[s];
      running[s] += buckets[l].counts[s];
    }
  return offsets;
}

/// Buckets [first, last] fused into one unit of destination `dst`.
struct UnitSpan {
  std::size_t first = 0, last = 0;
  std::int64_t count = 0;
};

void emit_unit(const UnitSpan& span, int dst, std::int64_t dst_begin, std::int64_t dst_end, std::int64_t offset,
               std::span<const Bucket> buckets, std::span<const std::int64_t> starts,
               const std::vector<std::vector<std::int64_t>>& src_offsets, int key_bits, ExchangePlan& plan) {
  const int gpus = static_cast<int>(src_offsets.empty() ? 0 : src_offsets[0].size());
  std::int64_t cursor = offset;
  for (int s = 0; s < gpus; ++s) {
    for (std::size_t l = span.first; l <= span.last; ++l) {
      // The piece of GPU s in bucket l, clipped to this destination's global ranks.
      std::int64_t piece_begin = starts[l];
      for (int t = 0; t < s; ++t) piece_begin += buckets[l].counts[t];
      const std::int64_t a = std::max(piece_begin, dst_begin);
      const std::int64_t b = std::min(piece_begin + buckets[l].counts[s], dst_end);
      if (a >= b) continue;
      const std::int64_t src_offset = src_offsets[l][s] + (a - piece_begin);
      auto& copies = plan.copies;
      const bool extends = !copies.empty() && copies.back().src == s && copies.back().dst == dst &&
                           copies.back().src_offset + copies.back().count == src_offset &&
                           copies.back().dst_offset + copies.back().count == cursor;
      if (extends) {
        copies.back().count += b - a;
      } else {
        copies.push_back({s, dst, src_offset, cursor, b - a});
      }
      cursor += b - a;
    }
  }
  MGJOIN_EXPECTS(cursor - offset == span.count, "unit copies do not add up to the unit");
  plan.units[dst].push_back({offset, span.count, buckets[span.first].lowest_key(key_bits),
                             buckets[span.last].highest_key(key_bits)});
}

}  // namespace

ExchangePlan plan_exchange(std::span<const Bucket> buckets, std::span<const std::int64_t> boundaries, int key_bits,
                           std::int64_t chunk, double gamma, std::int64_t min_unit_tuples) {
  MGJOIN_EXPECTS(boundaries.size() >= 2, "boundaries of at least one GPU");
  const int gpus = static_cast<int>(boundaries.size()) - 1;
  const auto starts = bucket_starts(buckets);
  MGJOIN_EXPECTS(boundaries.front() == 0 && boundaries.back() == starts.back(), "boundaries cover the chunkset");
  const auto src_offsets = source_offsets(buckets, gpus);
  const double fuse_below = std::max(gamma * static_cast<double>(chunk), static_cast<double>(min_unit_tuples));

  ExchangePlan plan;
  plan.units.resize(gpus);
  for (int d = 0; d < gpus; ++d) {
    const std::int64_t begin = boundaries[d], end = boundaries[d + 1];
    plan.dest_sizes.push_back(end - begin);
    std::int64_t offset = 0;
    std::optional<UnitSpan> unit;
    for (std::size_t l = 0; l < buckets.size(); ++l) {
      const std::int64_t size = std::min(starts[l + 1], end) - std::max(starts[l], begin);
      if (size <= 0) continue;
      if (unit && static_cast<double>(unit->count + size) >= fuse_below) {
        emit_unit(*unit, d, begin, end, offset, buckets, starts, src_offsets, key_bits, plan);
        offset += unit->count;
        unit.reset();
      }
      if (!unit) unit = UnitSpan{l, l, 0};
      unit->last = l;
      unit->count += size;
    }
    if (unit) emit_unit(*unit, d, begin, end, offset, buckets, starts, src_offsets, key_bits, plan);
  }
  return plan;
}

}  // namespace mgjoin::sort
