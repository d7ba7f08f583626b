#pragma once
// The GPU suites' check of a co-partitioned variant: its count and its materialized output against the
// reference join (tests/common/reference_join.hpp), on one GPU and, where there are two, on two.
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"
#include "p2p/nccl_comms.hpp"
#include "p2p/peer_access.hpp"

#include "common/engines.hpp"
#include "common/gpu.hpp"
#include "common/keys.hpp"
#include "common/collecting_sink.hpp"
#include "common/reference_join.hpp"
#include "common/relations.hpp"
#include "common/tier.hpp"
#include "copart/copart_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace mgjoin::test {

/// GPUs 0..g-1 with stacks of this test's own (kDeviceBytes each; `pinned_bytes` pinned per GPU) for
/// running a variant directly, and copies of R and S to run it on (checked untouched at the end).
class OwnGpus {
 public:
  static constexpr std::uint64_t kDeviceBytes = 2ull << 30;

  OwnGpus(int g, const Relation& r, const Relation& s) : devices_(make_ids(g)), peers_(devices_), r_(r), s_(s), rc_(copy_of(r)), sc_(copy_of(s)) {
    for (const int d : devices_) device_.add(d, kDeviceBytes);
  }
  ~OwnGpus() {
    EXPECT_EQ(std::memcmp(rc_.key.data(), r_.key.data(), r_.key.bytes()), 0) << "the join modified R's keys";
    EXPECT_EQ(std::memcmp(sc_.key.data(), s_.key.data(), s_.key.bytes()), 0) << "the join modified S's keys";
  }

  /// Whether every stack of this test's is empty again (after a join, or a join that failed).
  bool stacks_empty() const {
    for (const auto* stack : device_) if (stack->used() != 0) return false;
    for (const auto* stack : pinned_) if (stack->used() != 0) return false;
    return true;
  }

  RelationView r() { return rc_.view(); }
  RelationView s() { return sc_.view(); }

  /// The context of a run that takes `pinned_bytes` of pinned memory per GPU. One OwnGpus serves a
  /// test's runs one after another, as an engine serves its joins: the pinned stacks of an earlier run are
  /// kept where they hold this one's, and the NCCL communicators once made (each run gives back all it took:
  /// stacks_empty()).
  copart::CopartContext context(std::uint64_t pinned_bytes, Exchange exchange = Exchange::CopyEngines) {
    if (pinned_.empty() || pinned_[0].capacity() < pinned_bytes + (1u << 20)) {
      pinned_.clear();
      for (std::size_t d = 0; d < devices_.size(); ++d) pinned_.add(pinned_bytes + (1u << 20), /*mapped=*/true);
    }
    if (exchange == Exchange::Nccl && !comms_) comms_ = std::make_unique<p2p::NcclComms>(devices_);
    return {devices_, device_.view(), pinned_.view(), exchange, comms_.get()};
  }

 private:
  static std::vector<int> make_ids(int g) {
    std::vector<int> ids(g);
    std::iota(ids.begin(), ids.end(), 0);
    return ids;
  }

  std::vector<int> devices_;
  p2p::PeerAccess peers_;
  alloc::StackSet<alloc::DeviceStackAllocator> device_;
  alloc::StackSet<alloc::PinnedStackAllocator> pinned_;
  std::unique_ptr<p2p::NcclComms> comms_;
  const Relation &r_, &s_;
  Relation rc_, sc_;
};

/// Whether the suites run few shapes of each variant (MGJOIN_TEST_FEW_SHAPES=1): compute-sanitizer slows
/// every kernel 10-100x, and scripts/device-sanitize.sh sets it so that the copart suite finishes.
inline bool few_shapes() {
  const char* v = std::getenv("MGJOIN_TEST_FEW_SHAPES");
  return v && *v && std::string(v) != "0";
}

/// check_flow's `rotation` for a test meant to run every shape in every tier (the random inputs).
inline constexpr int kEveryShape = -1;

/// The shapes check_flow runs: all, or with few_shapes() the first two and the last (the callers list
/// each kind of run first and their special cases last, so every code path still runs). In the quick tier
/// a caller that checks many inputs passes each its index as `rotation`: each input then runs the first
/// shape (the variant's plain run) and one other in turn, so that every shape still meets several of the
/// inputs while the inputs do not each repeat every shape.
template <class Shape>
std::vector<Shape> shapes_to_run(const std::vector<Shape>& shapes, int rotation = kEveryShape) {
  if (few_shapes() && shapes.size() > 3) return {shapes[0], shapes[1], shapes.back()};
  if (full_tier() || rotation == kEveryShape || shapes.size() <= 2) return shapes;
  return {shapes[0], shapes[1 + static_cast<std::size_t>(rotation) % (shapes.size() - 1)]};
}

/// Whether a run reported the phase `name`.
inline bool has_phase(const JoinResult& result, const std::string& name) {
  return std::any_of(result.phases.begin(), result.phases.end(), [&](const PhaseStat& p) { return p.name == name; });
}

/// For g = 1..min(2, GPUs) and every shape (shapes_to_run): run(gpus, g, output, shape) must count and
/// materialize what the reference joins; describe(shape) names the shape in failures. One OwnGpus per g
/// serves every run, and its stacks must be empty after each.
template <class Shape, class Run, class Describe>
void check_flow(const Relation& r, const Relation& s, const std::string& name, const std::vector<Shape>& shapes,
                Run run, Describe describe, int rotation = kEveryShape) {
  const std::vector<Tuple> expected = reference_tuples(r, s);
  for (int g = 1; g <= std::min(2, gpu_count()); ++g) {
    OwnGpus gpus(g, r, s);
    for (const Shape& shape : shapes_to_run(shapes, rotation)) {
      SCOPED_TRACE(name + ", g = " + std::to_string(g) + ", " + describe(shape));
      EXPECT_EQ(run(gpus, g, OutputMode::Count, shape).count, expected.size());
      EXPECT_TRUE(gpus.stacks_empty()) << "after the count";
      const JoinResult m = run(gpus, g, OutputMode::Materialize, shape);
      EXPECT_TRUE(gpus.stacks_empty()) << "after the materialized join";
      EXPECT_EQ(m.count, expected.size());
      ASSERT_EQ(m.key.size(), static_cast<std::int64_t>(expected.size()));
      EXPECT_TRUE(result_tuples(m) == expected) << "the output tuples differ from the reference";
    }
  }
}

/// Through the public API on `g` GPUs of `limit` bytes each: the planner takes the co-partitioned flow,
/// its reason names `variant`, and the count (and the materialized output) are `expected`'s (reference_result
/// of R and S, computed once for all the limits and GPU counts a test tries). Returns the reason.
inline std::string check_planned(const Relation& r, const Relation& s, int g, std::uint64_t limit, OutputMode output,
                                 const std::string& variant, const ReferenceResult& expected) {
  Relation rc = copy_of(r), sc = copy_of(s);
  JoinOptions options;
  options.output = output;
  const JoinResult result = shared_engines().get(g, limit).join(rc.view(), sc.view(), options);
  SCOPED_TRACE("g = " + std::to_string(g) + ", limit " + std::to_string(limit >> 20) + " MiB: " + result.strategy_reason);
  EXPECT_EQ(result.strategy, JoinStrategy::CoPartitioned);
  EXPECT_NE(result.strategy_reason.find(variant), std::string::npos);
  EXPECT_EQ(result.count, expected.count);
  if (output == OutputMode::Materialize) {
    EXPECT_TRUE(result_tuples(result) == expected.tuples) << "the output tuples differ from the reference";
    // Again into a sink (JoinSettings::sink): the windows go to it from the pinned staging, every row once.
    CollectingSink sink;
    options.sink = &sink;
    Relation rs = copy_of(r), ss = copy_of(s);
    const JoinResult sunk = shared_engines().get(g, limit).join(rs.view(), ss.view(), options);
    EXPECT_NE(sunk.strategy_reason.find(variant), std::string::npos) << sunk.strategy_reason;
    EXPECT_TRUE(sunk.sunk);
    EXPECT_GT(sink.calls(), 0u);
    EXPECT_TRUE(result_tuples(sink.as_result(sunk)) == expected.tuples) << "the sunk tuples differ from the reference";
  }
  return result.strategy_reason;
}

/// A named pair of relations for check_flow.
struct FlowInput {
  std::string name;
  Relation r, s;
  bool small = false;  ///< a few rows or a few distinct keys: the variants' smallest shapes suffice
};

/// The random inputs every streamed co-partitioned variant is checked on: few distinct keys, so that every
/// probe row matches several resident rows across runs, rounds and passes; either side the larger; 4-byte
/// keys with R without payload. Quick: the larger side of 100'003 rows still takes 2 rounds or more of the
/// variants' chunk shapes at g = 2 (of 50'000 rows: 2; of 4096: 13), so round after round still lands in
/// alternating landings.
inline std::vector<FlowInput> random_inputs(std::mt19937_64& rng) {
  const auto small = uniform_keys<std::int64_t>(rng, 30'001, -40'000, 40'000);
  const auto large = uniform_keys<std::int64_t>(rng, per_tier<std::size_t>(100'003, 200'003), -40'000, 40'000);
  const auto r32 = uniform_keys<std::uint32_t>(rng, 10'007, 0, 5'000), s32 = uniform_keys<std::uint32_t>(rng, 70'001, 0, 6'000);
  std::vector<FlowInput> in;
  in.push_back({"R resident", relation_of(small, 8, 0), relation_of(large, 8, 1u << 30)});
  in.push_back({"S resident", relation_of(large, 8, 0), relation_of(small, 8, 1u << 30)});
  in.push_back({"4-byte keys, R without payload", relation_of(r32, 0, 0), relation_of(s32, 8, 1u << 30)});
  return in;
}

/// The adversarial inputs every co-partitioned variant is checked on: all keys equal, a hot key holding
/// half of S, keys sharing their top bits, sorted R and reverse S, signed extremes, empty and one-row
/// relations; sizes not divisible by 2.
inline std::vector<FlowInput> adversarial_inputs(std::mt19937_64& rng) {
  std::vector<FlowInput> in;
  in.push_back({"all keys equal", relation_of(std::vector<std::int64_t>(41, 7), 8, 0),
                relation_of(std::vector<std::int64_t>(20'001, 7), 8, 1u << 30), true});
  auto r = uniform_keys<std::uint64_t>(rng, 20'001, 0, 100'000), s = uniform_keys<std::uint64_t>(rng, 120'001, 0, 100'000);
  for (std::size_t i = 0; i < r.size(); i += 200) r[i] = 42;  // 101 R rows of the hot key
  for (std::size_t i = 0; i < s.size(); i += 2) s[i] = 42;    // half of S
  in.push_back({"hot key, half of S", relation_of(r, 8, 0), relation_of(s, 8, 1u << 30)});
  auto top = uniform_keys<std::uint64_t>(rng, 8'001, 0, 3'000), s_top = uniform_keys<std::uint64_t>(rng, 40'001, 0, 3'000);
  for (auto& k : top) k |= 0xfff0'0000'0000'0000ull;
  for (auto& k : s_top) k |= 0xfff0'0000'0000'0000ull;
  in.push_back({"keys sharing their top bits", relation_of(top, 8, 0), relation_of(s_top, 8, 1u << 30)});
  std::vector<std::int32_t> sorted(9'001), reverse(30'001);
  std::iota(sorted.begin(), sorted.end(), -4'500);
  for (std::size_t i = 0; i < reverse.size(); ++i) reverse[i] = 15'000 - static_cast<std::int32_t>(i) / 2;
  in.push_back({"sorted R, reverse S", relation_of(sorted, 8, 0), relation_of(reverse, 8, 1u << 30)});
  using L = std::numeric_limits<std::int64_t>;
  const std::vector<std::int64_t> ext{L::min(), L::max(), -1, 0, 1, L::min(), L::max()};
  std::vector<std::int64_t> s_ext;
  for (int i = 0; i < 10'001; ++i) s_ext.push_back(ext[i % ext.size()] + (i % 3 == 0 ? 0 : (i % 2 ? 1 : -1)));
  in.push_back({"signed extremes", relation_of(ext, 8, 0), relation_of(s_ext, 8, 1u << 30), true});
  const std::vector<std::uint64_t> none, one{5}, many(9'999, 5);
  in.push_back({"empty R", relation_of(none, 8, 0), relation_of(many, 8, 0), true});
  in.push_back({"empty S", relation_of(many, 8, 0), relation_of(none, 8, 0), true});
  in.push_back({"one-row R", relation_of(one, 8, 0), relation_of(many, 8, 0), true});
  in.push_back({"one-row S", relation_of(many, 8, 0), relation_of(one, 8, 0), true});
  return in;
}

}  // namespace mgjoin::test
