// The sort phase with the radix strategy on 1-4 GPUs, in-core and out-of-core (k >= 3 chunksets), both
// exchanges, adversarial inputs: every run must hold its chunkset's (key, payload) pairs sorted by key.
#include "engine/src/sort/local_sort.hpp"
#include "engine/src/sort/planner.hpp"
#include "engine/src/sort/sort_phase.hpp"
#include "p2p/nccl_comms.hpp"
#include "p2p/peer_access.hpp"

#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace mgjoin::sort {
namespace {

enum class Shape { Uniform, AllEqual, Top24Shared, HalfOneKey, Sorted, Reverse };
enum class Memory { InCore, ThreeChunksets };

template <class K>
std::vector<K> make_keys(Shape shape, std::size_t n) {
  std::mt19937_64 rng(test::announce_seed());
  std::vector<K> k(n);
  for (auto& x : k) x = static_cast<K>(rng());
  switch (shape) {
    case Shape::AllEqual: std::fill(k.begin(), k.end(), static_cast<K>(-3)); break;
    case Shape::Top24Shared:  // keep the low 8 bits (32-bit keys) or 40 bits (64-bit keys) random
      for (auto& x : k) x = static_cast<K>((static_cast<std::uint64_t>(x) & ((std::uint64_t{1} << (sizeof(K) * 8 - 24)) - 1)) |
                                           (std::uint64_t{0xA5C3E1} << (sizeof(K) * 8 - 24)));
      break;
    case Shape::HalfOneKey:
      for (std::size_t i = 0; i < n; i += 2) k[i] = static_cast<K>(12345);
      break;
    case Shape::Sorted: std::sort(k.begin(), k.end()); break;
    case Shape::Reverse: std::sort(k.rbegin(), k.rend()); break;
    case Shape::Uniform: break;
  }
  return k;
}

/// Peer access and NCCL communicators per GPU count, made once for the whole suite as an engine makes them
/// once for all its joins (an NCCL communicator takes ~0.5 s to set up: one per sort was most of the
/// suite's time); freed when the suite ends.
struct SuiteGpus {
  std::map<int, std::unique_ptr<p2p::PeerAccess>> peers;
  std::map<int, std::unique_ptr<p2p::NcclComms>> nccl;
};
SuiteGpus& suite_gpus() {
  static SuiteGpus gpus;
  return gpus;
}

template <class K, class P>
void run_sort(Shape shape, std::size_t n, int g, Memory memory, Exchange exchange) {
  MGJOIN_REQUIRE_GPUS(g);
  SCOPED_TRACE(::testing::Message() << "n=" << n << " g=" << g << " shape=" << static_cast<int>(shape)
                                    << " k>=3=" << (memory == Memory::ThreeChunksets)
                                    << " nccl=" << (exchange == Exchange::Nccl));
  constexpr bool kPayload = !std::is_void_v<P>;
  using Pay = std::conditional_t<kPayload, P, std::uint32_t>;
  auto keys = make_keys<K>(shape, n);
  std::vector<Pay> payload(kPayload ? n : 0);
  std::iota(payload.begin(), payload.end(), Pay{0});
  const auto key_type = std::is_same_v<K, std::int32_t>    ? DType::Int32
                        : std::is_same_v<K, std::uint32_t> ? DType::UInt32
                        : std::is_same_v<K, std::int64_t>  ? DType::Int64
                                                           : DType::UInt64;
  RelationView rel{{keys.data(), static_cast<std::int64_t>(n), key_type}, std::nullopt};
  if constexpr (kPayload)
    rel.payload = MutableColumnView{payload.data(), static_cast<std::int64_t>(n),
                                    sizeof(P) == 4 ? DType::UInt32 : DType::UInt64};
  const auto before_keys = keys;
  const auto before_payload = payload;

  std::vector<int> devices(g);
  std::iota(devices.begin(), devices.end(), 0);
  std::uint64_t limit = 0;
  if (memory == Memory::ThreeChunksets) {
    const TupleLayout layout{static_cast<int>(sizeof(K)), kPayload ? static_cast<int>(sizeof(Pay)) : 0, false};
    const auto chunk = std::max<std::int64_t>(kMinChunk, static_cast<std::int64_t>(n) / (g * 4));
    limit = device_bytes_for_chunk(chunk, layout.tuple_bytes(), local_sort_temp_bytes(layout, chunk + chunk / 100 + 1));
  }
  const auto plan = plan_sort_on_devices(rel, rel, devices, limit);
  const int k = chunksets_for(static_cast<std::int64_t>(n), plan);
  if (memory == Memory::ThreeChunksets) {
    EXPECT_GE(k, 3);
  }

  alloc::StackSet<alloc::DeviceStackAllocator> stacks;
  for (const int d : devices) stacks.add(d, plan.device_bytes);
  auto& peers = suite_gpus().peers[g];
  if (!peers) peers = std::make_unique<p2p::PeerAccess>(devices);
  auto& nccl = suite_gpus().nccl[g];
  if (exchange == Exchange::Nccl && !nccl) nccl = std::make_unique<p2p::NcclComms>(devices);
  std::vector<PhaseStat> stats;
  const auto result = sort_phase(rel, plan, devices, stacks.view(), SortStrategy::Radix, exchange,
                                 exchange == Exchange::Nccl ? nccl.get() : nullptr, stats);

  ASSERT_EQ(static_cast<int>(result.runs.size()), k);
  std::int64_t next = 0;
  for (const auto& run : result.runs) {
    ASSERT_EQ(run.begin, next);
    next = run.end;
    // The run's (key, payload) multiset equals its chunkset's, and its keys are sorted.
    std::vector<std::pair<K, Pay>> expected, got;
    for (auto i = run.begin; i < run.end; ++i) {
      expected.emplace_back(before_keys[i], kPayload ? before_payload[i] : Pay{});
      got.emplace_back(keys[i], kPayload ? payload[i] : Pay{});
    }
    ASSERT_TRUE(std::is_sorted(keys.begin() + run.begin, keys.begin() + run.end)) << "run " << run.begin;
    std::sort(expected.begin(), expected.end());
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, expected) << "run " << run.begin;
  }
  EXPECT_EQ(next, static_cast<std::int64_t>(n));
  EXPECT_FALSE(stats.empty());
}

constexpr Shape kShapes[] = {Shape::Uniform, Shape::AllEqual, Shape::Top24Shared,
                             Shape::HalfOneKey, Shape::Sorted, Shape::Reverse};

class RadixSortPhase : public ::testing::TestWithParam<std::tuple<int, Exchange>> {
 protected:
  static void TearDownTestSuite() {
    suite_gpus().nccl.clear();
    suite_gpus().peers.clear();
  }
};

TEST_P(RadixSortPhase, Int32KeysWith4BytePayloadsInCore) {
  const auto [g, exchange] = GetParam();
  for (const auto shape : kShapes) run_sort<std::int32_t, std::uint32_t>(shape, 200'003, g, Memory::InCore, exchange);
}

TEST_P(RadixSortPhase, UInt64KeysWith8BytePayloadsThreeChunksets) {
  const auto [g, exchange] = GetParam();
  for (const auto shape : kShapes)
    run_sort<std::uint64_t, std::uint64_t>(shape, 300'007, g, Memory::ThreeChunksets, exchange);
}

TEST_P(RadixSortPhase, Int64KeyOnlyBothMemoryModes) {
  const auto [g, exchange] = GetParam();
  for (const auto shape : {Shape::Uniform, Shape::Top24Shared, Shape::HalfOneKey}) {
    run_sort<std::int64_t, void>(shape, 100'001, g, Memory::InCore, exchange);
    run_sort<std::int64_t, void>(shape, 100'001, g, Memory::ThreeChunksets, exchange);
  }
}

TEST_P(RadixSortPhase, UInt32KeysWith8BytePayloadsThreeChunksets) {
  const auto [g, exchange] = GetParam();
  for (const auto shape : {Shape::AllEqual, Shape::Top24Shared, Shape::Reverse})
    run_sort<std::uint32_t, std::uint64_t>(shape, 150'001, g, Memory::ThreeChunksets, exchange);
}

TEST_P(RadixSortPhase, TinyRelations) {
  const auto [g, exchange] = GetParam();
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{1027}})
    run_sort<std::int32_t, std::uint32_t>(Shape::Uniform, n, g, Memory::InCore, exchange);
}

INSTANTIATE_TEST_SUITE_P(GpusAndExchanges, RadixSortPhase,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values(Exchange::CopyEngines, Exchange::Nccl)),
                         [](const auto& info) {
                           std::string name = "g";  // not "g" + to_string(): GCC 12's false -Wrestrict (bug 105329)
                           name += std::to_string(std::get<0>(info.param));
                           name += std::get<1>(info.param) == Exchange::Nccl ? "_nccl" : "_copy_engines";
                           return name;
                         });

}  // namespace
}  // namespace mgjoin::sort
