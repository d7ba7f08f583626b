// Pageable inputs cross through the engine's pinned input staging (exec/input_staging.hpp) instead of being
// registered whole: the staging's copies equal their sources at every size around its pieces, and joins on
// pageable inputs — in core, streamed, in passes, late payloads — equal a CPU reference join, at g = 1 and 2,
// with the staging on and off (MGJOIN_STAGE_INPUTS=0); materialized, also into a sink (JoinSettings::sink),
// whose rows the output windows hand it from the pinned staging (the paper flow: its whole columns).
#include <mgjoin/engine.hpp>
#include <mgjoin/join.hpp>

#include "common/collecting_sink.hpp"
#include "common/engines.hpp"
#include "common/env.hpp"
#include "common/gpu.hpp"
#include "common/reference_join.hpp"
#include "common/relations.hpp"
#include "common/seed.hpp"
#include "alloc/host_pin.hpp"
#include "core/device.hpp"
#include "engine/src/copart/copart_plan.hpp"
#include "engine/src/copart/pass_plan.hpp"
#include "engine/src/copart/splitters.hpp"
#include "engine/src/exec/input_staging.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace mgjoin::test {
namespace {

using exec::InputStaging;

const PhaseStat* phase(const JoinResult& r, const std::string& name) {
  const auto it = std::find_if(r.phases.begin(), r.phases.end(), [&](const PhaseStat& p) { return p.name == name; });
  return it == r.phases.end() ? nullptr : &*it;
}

/// `bytes` from a pageable source at an odd offset, through the staging and back.
std::vector<unsigned char> round_trip(InputStaging& staging, const std::vector<unsigned char>& source, std::size_t offset,
                                      std::size_t bytes, cudaStream_t stream) {
  void* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, std::max<std::size_t>(bytes, 1)), cudaSuccess);
  staging.copy(device, source.data() + offset, bytes, stream);
  std::vector<unsigned char> back(bytes);
  EXPECT_EQ(cudaMemcpyAsync(back.data(), device, bytes, cudaMemcpyDeviceToHost, stream), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaFree(device);
  return back;
}

TEST(InputStaging, CopiesEveryByteAtEverySizeAroundItsPieces) {
  if (gpu_count() < 1) GTEST_SKIP() << "needs a GPU";
  const std::uint64_t seed = announce_seed();
  std::mt19937_64 rng(seed);
  constexpr std::size_t piece = InputStaging::kPieceBytes;
  std::vector<unsigned char> source(InputStaging::kBuffers * piece * 2 + 64);
  for (auto& b : source) b = static_cast<unsigned char>(rng());
  gpu::DeviceGuard guard(0);
  gpu::Stream stream(0);
  InputStaging staging(0);
  std::uint64_t expected = 0;
  // More pieces than buffers: a buffer is refilled while the copies of the pieces before it may still run.
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{7}, piece - 3, piece, piece + 5,
                                  InputStaging::kBuffers * piece + 12345, 2 * InputStaging::kBuffers * piece}) {
    const std::size_t offset = bytes % 2 ? 3 : 1;
    const auto back = round_trip(staging, source, offset, bytes, stream);
    ASSERT_TRUE(std::equal(back.begin(), back.end(), source.begin() + static_cast<std::ptrdiff_t>(offset)))
        << bytes << " bytes";
    expected += bytes;
  }
  EXPECT_EQ(staging.staged_bytes(), expected);
}

TEST(InputStaging, CopiesFromPinnedOrDeviceMemoryGoStraight) {
  if (gpu_count() < 1) GTEST_SKIP() << "needs a GPU";
  gpu::DeviceGuard guard(0);
  gpu::Stream stream(0);
  InputStaging staging(0);
  HostColumn pinned = HostColumn::allocate(DType::UInt64, 1 << 16, MemoryKind::Pinned);
  ASSERT_EQ(pinned.memory_kind(), MemoryKind::Pinned);
  for (std::int64_t i = 0; i < pinned.size(); ++i) pinned.as<std::uint64_t>()[i] = static_cast<std::uint64_t>(i) * 7;
  EXPECT_FALSE(alloc::is_pageable(pinned.data()));
  void* device = nullptr;
  void* device2 = nullptr;
  ASSERT_EQ(cudaMalloc(&device, pinned.bytes()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device2, pinned.bytes()), cudaSuccess);
  EXPECT_FALSE(alloc::is_pageable(device));
  staging.copy(device, pinned.data(), pinned.bytes(), stream);
  staging.copy(device2, device, pinned.bytes(), stream);  // device to device, as a resident group's rows go
  std::vector<std::uint64_t> back(static_cast<std::size_t>(pinned.size()));
  ASSERT_EQ(cudaMemcpyAsync(back.data(), device2, pinned.bytes(), cudaMemcpyDeviceToHost, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaFree(device);
  cudaFree(device2);
  for (std::size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], i * 7) << i;
  EXPECT_EQ(staging.staged_bytes(), 0u);
  const std::vector<std::uint64_t> pageable(4);
  EXPECT_TRUE(alloc::is_pageable(pageable.data()));
}

enum class Shape : std::uint8_t { InCore, Streamed, Passes };

struct StagedCase {
  int gpus;
  Shape shape;
  OutputMode output;
  PayloadFlow payloads;
};

std::string case_name(const ::testing::TestParamInfo<StagedCase>& info) {
  const StagedCase& c = info.param;
  const char* shape = c.shape == Shape::InCore ? "InCore" : c.shape == Shape::Streamed ? "Streamed" : "Passes";
  return "g" + std::to_string(c.gpus) + "_" + shape + (c.output == OutputMode::Count ? "_Count" : "_Materialize") +
         (c.payloads == PayloadFlow::Late ? "_Late" : "");
}

class StagedJoin : public ::testing::TestWithParam<StagedCase> {};

/// Keys from a small domain (many duplicates, a hot key) and payloads naming their rows, pageable
/// (HostColumn's default): R 3·10^6 rows and S 2·10^6, so that each relation is several staging pieces;
/// streamed, R 8·10^6 and S 10^6 (the planner streams R past a resident S only where R is much the larger).
struct Inputs {
  Relation r, s;
};

Inputs inputs(std::uint64_t seed, std::size_t r_rows = 3'000'000, std::size_t s_rows = 2'000'000) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> rk(r_rows), sk(s_rows);
  for (auto& k : rk) k = rng() % 4'000'000;
  for (auto& k : sk) k = rng() % 64 == 0 ? 12345 : rng() % 4'000'000;
  rk[17] = 12345;
  rk.back() = ~std::uint64_t{0};
  sk.back() = ~std::uint64_t{0};
  return {relation_of(rk, 8, 0), relation_of(sk, 8, 1u << 30)};
}

/// The GPU memory limit that gives the case's shape, by the planner's own arithmetic (in 4 MiB steps): 0 for
/// in core (the engine's default); streamed: the smallest at which the co-partitioned plan fits streamed; in
/// passes: the smallest at which it does not fit but two passes do. 0 where none below 4 GiB does.
std::uint64_t limit_for(const StagedCase& c, Inputs& in) {
  if (c.shape == Shape::InCore) return 0;
  const RelationView r = in.r.view(), s = in.s.view();
  const copart::KeySample rs = copart::sample_keys(r.key), ss = copart::sample_keys(s.key);
  const copart::ScratchSizes scratch = copart::device_scratch_sizes();
  for (std::uint64_t mib = 32; mib <= 4096; mib += 4) {
    const std::uint64_t bytes = mib << 20;
    const copart::CopartPlan plan = copart::plan_copart(rs, ss, r, s, c.gpus, c.output, bytes, scratch, c.payloads);
    if (c.shape == Shape::Streamed && plan.fits && plan.streamed) return bytes;
    if (c.shape == Shape::Passes && !plan.fits && copart::plan_passes(rs, ss, r, s, c.gpus, c.output, bytes, scratch, 2).fits)
      return bytes;
  }
  return 0;
}

TEST_P(StagedJoin, PageableInputsJoinAsTheReferenceDoesWithTheStagingOnAndOff) {
  const StagedCase& c = GetParam();
  if (gpu_count() < c.gpus) GTEST_SKIP() << "needs " << c.gpus << " GPUs";
  const std::uint64_t seed = announce_seed();
  Inputs in = c.shape == Shape::Streamed ? inputs(seed, 8'000'000, 1'000'000) : inputs(seed);
  const ReferenceResult expected = reference_result(in.r, in.s, c.output);
  const std::uint64_t limit = limit_for(c, in);
  ASSERT_TRUE(c.shape == Shape::InCore || limit > 0) << "no GPU memory limit gives this shape: choose other sizes";
  for (const char* stage : {"1", "0"}) {
    SCOPED_TRACE(std::string("MGJOIN_STAGE_INPUTS=") + stage);
    const ScopedEnv env("MGJOIN_STAGE_INPUTS", stage);
    const ScopedEnv passes("MGJOIN_COPART_PASSES", c.shape == Shape::Passes ? "2" : nullptr);
    JoinSettings o;
    o.strategy = JoinStrategy::CoPartitioned;
    o.output = c.output;
    o.payloads = c.payloads;
    Engine& engine = shared_engines().get(c.gpus, limit);
    const JoinResult got = engine.join(in.r.view(), in.s.view(), o);
    ASSERT_EQ(got.count, expected.count) << got.executor;
    if (c.output == OutputMode::Materialize) {
      ASSERT_EQ(result_tuples(got), expected.tuples) << got.executor;
      // Into a sink (JoinSettings::sink), as `mgjoin join` streams its .npy output: every row once.
      CollectingSink sink;
      o.sink = &sink;
      const JoinResult sunk = engine.join(in.r.view(), in.s.view(), o);
      o.sink = nullptr;
      EXPECT_EQ(sunk.executor, got.executor);
      ASSERT_EQ(result_tuples(sink.as_result(sunk)), expected.tuples) << sunk.executor;
    }
    if (c.shape == Shape::Passes) {
      EXPECT_NE(got.executor.find("passes"), std::string::npos) << got.executor;
    }
    if (c.shape == Shape::Streamed) {
      EXPECT_NE(got.strategy_reason.find("co-partitioned, streamed"), std::string::npos) << got.strategy_reason;
    }
    const PhaseStat* staged = phase(got, "input.staged");
    if (std::string(stage) == "1") {
      ASSERT_NE(staged, nullptr) << got.executor;
      // Every key crosses at least once; S's (Y's) more often in passes.
      EXPECT_GE(staged->bytes_pcie, in.r.key.bytes() + in.s.key.bytes());
    } else {
      EXPECT_EQ(staged, nullptr);
    }
  }
}

TEST(StagedJoin, PinnedInputsAreNotStaged) {
  if (gpu_count() < 1) GTEST_SKIP() << "needs a GPU";
  Inputs pageable = inputs(announce_seed());
  Relation r{HostColumn::allocate(DType::UInt64, pageable.r.size(), MemoryKind::Pinned), std::nullopt};
  Relation s{HostColumn::allocate(DType::UInt64, pageable.s.size(), MemoryKind::Pinned), std::nullopt};
  std::memcpy(r.key.data(), pageable.r.key.data(), r.key.bytes());
  std::memcpy(s.key.data(), pageable.s.key.data(), s.key.bytes());
  JoinSettings o;
  o.strategy = JoinStrategy::CoPartitioned;
  o.output = OutputMode::Count;
  const JoinResult got = shared_engines().get(1, 0).join(r.view(), s.view(), o);
  EXPECT_EQ(got.count, reference_count(pageable.r, pageable.s));
  EXPECT_EQ(phase(got, "input.staged"), nullptr);
}

TEST(StagedJoin, ThePaperFlowPoursItsColumnsIntoASink) {
  if (gpu_count() < 1) GTEST_SKIP() << "needs a GPU";
  Inputs in = inputs(announce_seed(), 300'000, 200'000);
  const ReferenceResult expected = reference_result(in.r, in.s, OutputMode::Materialize);
  CollectingSink sink;
  JoinSettings o;
  o.strategy = JoinStrategy::Paper;
  o.keep_inputs = true;
  o.sink = &sink;
  const JoinResult sunk = shared_engines().get(1, 0).join(in.r.view(), in.s.view(), o);
  EXPECT_EQ(sunk.strategy, JoinStrategy::Paper);
  ASSERT_EQ(result_tuples(sink.as_result(sunk)), expected.tuples) << sunk.executor;
  EXPECT_EQ(sink.calls(), 3u);  // its whole key and payload columns, once each
}

INSTANTIATE_TEST_SUITE_P(
    Flows, StagedJoin,
    ::testing::Values(StagedCase{1, Shape::InCore, OutputMode::Materialize, PayloadFlow::Carry},
                      StagedCase{1, Shape::InCore, OutputMode::Count, PayloadFlow::Auto},
                      StagedCase{1, Shape::Streamed, OutputMode::Materialize, PayloadFlow::Carry},
                      StagedCase{2, Shape::InCore, OutputMode::Materialize, PayloadFlow::Carry},
                      StagedCase{2, Shape::InCore, OutputMode::Materialize, PayloadFlow::Late},
                      StagedCase{2, Shape::Streamed, OutputMode::Count, PayloadFlow::Auto},
                      StagedCase{2, Shape::Passes, OutputMode::Materialize, PayloadFlow::Carry}),
    case_name);

}  // namespace
}  // namespace mgjoin::test
