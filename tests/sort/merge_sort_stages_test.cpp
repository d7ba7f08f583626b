// The stage schedule and block-swap plans of the merge-based sort, run on host vectors with the very
// pivot search and plans the GPUs use (std::merge standing in for the on-GPU merge): after all stages
// the chunks concatenated must be sorted, hold the input's (key, payload) multiset, and keep their lengths.
#include "engine/src/sort/merge_sort.hpp"
#include "engine/src/sort/pivot_search.cuh"
#include "p2p/block_swap.hpp"

#include "common/seed.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace mgjoin::sort {
namespace {

using Tuple = std::pair<std::uint64_t, std::uint64_t>;  // (key, payload)
using Chunk = std::vector<Tuple>;

bool by_key(const Tuple& a, const Tuple& b) { return a.first < b.first; }

// ------------------------------------------------------------------ the schedule

TEST(MergeSortSchedule, SupportsPowersOfTwoOnly) {
  for (int g : {1, 2, 4, 8, 16}) EXPECT_TRUE(merge_sort_supported(g)) << g;
  for (int g : {-1, 0, 3, 5, 6, 7, 12, 32}) EXPECT_FALSE(merge_sort_supported(g)) << g;
  EXPECT_NE(merge_sort_unsupported_message(3).find("radix"), std::string::npos);
  EXPECT_THROW(merge_schedule(3), Error);
}

TEST(MergeSortSchedule, FollowsFigure3) {
  EXPECT_TRUE(merge_schedule(1).empty());
  EXPECT_EQ(merge_schedule(2), (std::vector<MergeStage>{{{0, 1, 2}}}));
  // g = 4: pairs, then C0+C1 with C2+C3, then pairs again.
  const std::vector<MergeStage> four{{{0, 1, 2}, {2, 3, 4}}, {{0, 2, 4}}, {{0, 1, 2}, {2, 3, 4}}};
  EXPECT_EQ(merge_schedule(4), four);
  const auto eight = merge_schedule(8);
  ASSERT_EQ(eight.size(), 7u);
  EXPECT_EQ(eight[3], (MergeStage{{0, 4, 8}}));
  EXPECT_EQ(merge_schedule(16).size(), 15u);
}

TEST(MergeSortSchedule, GroupsOfAStageAreDisjoint) {
  for (int g : {2, 4, 8, 16}) {
    for (const MergeStage& stage : merge_schedule(g)) {
      std::vector<int> uses(g, 0);
      for (const GroupMerge& m : stage) {
        EXPECT_TRUE(m.first < m.mid && m.mid < m.last && m.last <= g);
        EXPECT_EQ(m.mid - m.first, m.last - m.mid);
        EXPECT_LE(m.mid - m.first, kMaxChunksPerSide);
        for (int c = m.first; c < m.last; ++c) ++uses[c];
      }
      for (int u : uses) EXPECT_LE(u, 1);
    }
  }
}

// ------------------------------------------------------------------ block-swap plans

TEST(MergeSortBlockSwap, PivotZeroTouchesNothing) {
  const std::vector<std::uint64_t> lengths{4, 4, 4, 4};
  EXPECT_TRUE(p2p::plan_block_swap(lengths, 0, 2, 4, 0).chunks.empty());
}

TEST(MergeSortBlockSwap, FullPivotReplacesEveryChunk) {
  const std::vector<std::uint64_t> lengths{3, 5, 4, 4};  // sides of 8 tuples, cut differently
  const auto plan = p2p::plan_block_swap(lengths, 0, 2, 4, 8);
  ASSERT_EQ(plan.chunks.size(), 4u);
  for (const auto& swap : plan.chunks) EXPECT_EQ(swap.after, p2p::ChunkAfterSwap::replaced);
  // Chunk 1 holds left positions 3..7 and receives right positions 3..7: chunk 2's last tuple, all of chunk 3.
  const std::vector<p2p::BlockCopy> chunk1{{2, 3, 1, 0, 1}, {3, 0, 1, 1, 4}};
  EXPECT_EQ(plan.chunks[1].pieces, chunk1);
}

TEST(MergeSortBlockSwap, PartialPivotSplitsTheBoundaryChunks) {
  const std::vector<std::uint64_t> lengths{4, 4, 4, 4};
  const auto plan = p2p::plan_block_swap(lengths, 0, 2, 4, 2);  // left positions 6,7 <-> right 0,1
  ASSERT_EQ(plan.chunks.size(), 2u);
  EXPECT_EQ(plan.chunks[0].chunk, 1);
  EXPECT_EQ(plan.chunks[0].after, p2p::ChunkAfterSwap::two_runs);
  EXPECT_EQ(plan.chunks[0].first_run, 2u);  // kept head
  EXPECT_EQ(plan.chunks[0].pieces, (std::vector<p2p::BlockCopy>{{1, 0, 1, 0, 2}, {2, 0, 1, 2, 2}}));
  EXPECT_EQ(plan.chunks[1].chunk, 2);
  EXPECT_EQ(plan.chunks[1].first_run, 2u);  // received head
  EXPECT_EQ(plan.chunks[1].pieces, (std::vector<p2p::BlockCopy>{{1, 2, 2, 0, 2}, {2, 2, 2, 2, 2}}));
}

// ------------------------------------------------------------------ host simulation of the stages

/// The host twin of the GPU executor: a current and an other buffer per chunk, the same schedule, pivot
/// search and plans, std::merge for the on-GPU merge.
class HostChunkset {
 public:
  explicit HostChunkset(std::vector<Chunk> chunks) : current_(std::move(chunks)), other_(current_.size()) {
    for (std::size_t c = 0; c < current_.size(); ++c) {
      other_[c].resize(current_[c].size());
      lengths_.push_back(current_[c].size());
    }
  }

  void sort() {
    for (auto& c : current_) std::stable_sort(c.begin(), c.end(), by_key);
    if (current_.size() == 1) return;
    for (const MergeStage& stage : merge_schedule(static_cast<int>(current_.size())))
      for (const GroupMerge& m : stage) merge_sides(m);
  }
  const std::vector<Chunk>& chunks() const { return current_; }

 private:
  void merge_sides(const GroupMerge& m) {
    const auto left = keys_of(m.first, m.mid);
    const auto right = keys_of(m.mid, m.last);
    const std::uint64_t pivot = find_pivot(view(left), view(right));
    const auto plan = p2p::plan_block_swap(lengths_, m.first, m.mid, m.last, pivot);
    // Every copy of the swap happens before any merge overwrites a current buffer (the GPU's barrier).
    for (const auto& swap : plan.chunks) copy_pieces(swap);
    for (const auto& swap : plan.chunks) finish(swap);
  }

  std::vector<std::vector<std::uint64_t>> keys_of(int first, int last) const {
    std::vector<std::vector<std::uint64_t>> keys;
    for (int c = first; c < last; ++c) {
      keys.emplace_back();
      for (const auto& t : current_[c]) keys.back().push_back(t.first);
    }
    return keys;
  }
  static ChunkGroupView<std::uint64_t> view(const std::vector<std::vector<std::uint64_t>>& keys) {
    ChunkGroupView<std::uint64_t> v;
    for (const auto& k : keys) v.append(k.data(), k.size());
    return v;
  }

  void copy_pieces(const p2p::ChunkSwap& swap) {
    const auto c = static_cast<std::size_t>(swap.chunk);
    std::uint64_t filled = 0;
    for (const auto& copy : swap.pieces) {
      ASSERT_EQ(copy.dst_chunk, swap.chunk);
      ASSERT_EQ(copy.dst_offset, filled);
      ASSERT_LE(copy.src_offset + copy.count, current_[copy.src_chunk].size());
      std::copy_n(current_[copy.src_chunk].begin() + static_cast<std::ptrdiff_t>(copy.src_offset), copy.count,
                  other_[c].begin() + static_cast<std::ptrdiff_t>(filled));
      filled += copy.count;
    }
    ASSERT_EQ(filled, lengths_[c]);
  }

  void finish(const p2p::ChunkSwap& swap) {
    const auto c = static_cast<std::size_t>(swap.chunk);
    if (swap.after == p2p::ChunkAfterSwap::replaced) {
      std::swap(current_[c], other_[c]);
      return;
    }
    const auto mid = other_[c].begin() + static_cast<std::ptrdiff_t>(swap.first_run);
    ASSERT_TRUE(std::is_sorted(other_[c].begin(), mid, by_key));
    ASSERT_TRUE(std::is_sorted(mid, other_[c].end(), by_key));
    std::merge(other_[c].begin(), mid, mid, other_[c].end(), current_[c].begin(), by_key);
  }

  std::vector<Chunk> current_;
  std::vector<Chunk> other_;
  std::vector<std::uint64_t> lengths_;
};

enum class Shape { Random, FewDistinct, AllEqual, HotKey, Sorted, Reversed, SharedTopBits };

std::vector<std::uint64_t> make_keys(Shape shape, std::size_t n, std::mt19937_64& rng) {
  std::vector<std::uint64_t> k(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (shape) {
      case Shape::Random: k[i] = rng(); break;
      case Shape::FewDistinct: k[i] = rng() % 3; break;
      case Shape::AllEqual: k[i] = 7; break;
      case Shape::HotKey: k[i] = i % 2 == 0 ? 1234 : rng(); break;
      case Shape::Sorted: k[i] = i / 2; break;
      case Shape::Reversed: k[i] = n - i / 2; break;
      case Shape::SharedTopBits: k[i] = (0xABCDEFull << 40) | (rng() % 1000); break;
    }
  }
  return k;
}

/// Chunks of ceil(n / g) tuples, the last ones shorter or empty (as when n is not divisible by g).
std::vector<std::size_t> even_lengths(std::size_t n, int g) {
  const std::size_t chunk = (n + g - 1) / g;
  std::vector<std::size_t> lengths;
  for (int c = 0; c < g; ++c) {
    lengths.push_back(std::min(chunk, n));
    n -= lengths.back();
  }
  return lengths;
}

/// Sorts the keys (payload = input position) on g simulated GPUs and checks the outcome.
void expect_simulation_sorts(const std::vector<std::uint64_t>& keys, const std::vector<std::size_t>& lengths) {
  std::vector<Chunk> chunks;
  std::size_t next = 0;
  for (std::size_t len : lengths) {
    chunks.emplace_back();
    for (std::size_t i = 0; i < len; ++i, ++next) chunks.back().push_back({keys[next], next});
  }
  HostChunkset set(chunks);
  set.sort();
  Chunk all;
  for (std::size_t c = 0; c < lengths.size(); ++c) {
    ASSERT_EQ(set.chunks()[c].size(), lengths[c]) << "chunk " << c << " changed its length";
    all.insert(all.end(), set.chunks()[c].begin(), set.chunks()[c].end());
  }
  ASSERT_TRUE(std::is_sorted(all.begin(), all.end(), by_key)) << "g = " << lengths.size();
  Chunk expected;
  for (std::size_t i = 0; i < keys.size(); ++i) expected.push_back({keys[i], i});
  std::sort(expected.begin(), expected.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all, expected) << "the (key, payload) multiset changed";
}

TEST(MergeSortSimulation, AdversarialInputsEndGloballySorted) {
  std::mt19937_64 rng(test::announce_seed());
  for (int g : {1, 2, 4, 8, 16}) {
    for (Shape shape : {Shape::Random, Shape::FewDistinct, Shape::AllEqual, Shape::HotKey, Shape::Sorted,
                        Shape::Reversed, Shape::SharedTopBits}) {
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t(g - 1), std::size_t(64 * g),
                            std::size_t(64 * g + 3), std::size_t{1000}}) {
        SCOPED_TRACE("g = " + std::to_string(g) + ", shape " + std::to_string(static_cast<int>(shape)) +
                     ", n = " + std::to_string(n));
        expect_simulation_sorts(make_keys(shape, n, rng), even_lengths(n, g));
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(MergeSortSimulation, UnevenChunkLengthsEndGloballySorted) {
  std::mt19937_64 rng(test::announce_seed() + 1);
  for (int trial = 0; trial < 300; ++trial) {
    const int g = 1 << (trial % 4);
    std::vector<std::size_t> lengths(g);
    std::size_t n = 0;
    for (auto& len : lengths) n += (len = rng() % 50);
    const Shape shape = static_cast<Shape>(trial % 7);
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_simulation_sorts(make_keys(shape, n, rng), lengths);
    if (HasFatalFailure()) return;
  }
}

TEST(MergeSortSimulation, ReverseSortedChunksMoveEveryTuple) {
  // Chunk c holds the largest keys for small c: every stage swaps whole chunks, the worst case for P2P.
  const int g = 8;
  std::vector<std::uint64_t> keys;
  for (int c = 0; c < g; ++c)
    for (int i = 0; i < 100; ++i) keys.push_back(static_cast<std::uint64_t>((g - c) * 1000 + i));
  expect_simulation_sorts(keys, even_lengths(keys.size(), g));
}

}  // namespace
}  // namespace mgjoin::sort
