#pragma once
// One Engine per (GPU count, memory limit) for a whole GPU test binary: making one takes the GPUs'
// memory (a second or so), so suites share them. They are freed before CUDA and NCCL tear down at exit.
#include <mgjoin/engine.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>

namespace mgjoin::test {

/// MGJOIN_TEST_GPU_MEMORY_MIB in bytes, 0 where unset. scripts/device-sanitize.sh sets it when it runs
/// test processes side by side on the same GPUs: an engine of the default limit takes 80% of the memory
/// still free, so the first process's engine would leave the others too little to start a context in
/// (racecheck of e2e in 8 shards on two H200s, s26: "out of memory" in cudaFree(nullptr)).
inline std::uint64_t side_by_side_gpu_memory_limit() {
  const char* mib = std::getenv("MGJOIN_TEST_GPU_MEMORY_MIB");
  return mib ? std::strtoull(mib, nullptr, 10) << 20 : 0;
}

/// `o` (EngineOptions, or JoinOptions that name their engine's) as a test makes its engine and joins on
/// it: the default limit (0) becomes side_by_side_gpu_memory_limit().
template <class Options>
Options test_engine_options(Options o) {
  if (o.gpu_memory_limit == 0) o.gpu_memory_limit = side_by_side_gpu_memory_limit();
  return o;
}

class SharedEngines : public ::testing::Environment {
 public:
  void TearDown() override { release(); }

  /// Frees every engine. A suite whose joins make engines of their own (mgjoin::join() takes 80% of the
  /// memory still free, and NCCL then needs some of the rest) calls it first: engines kept from earlier
  /// suites of the binary would leave it too little.
  void release() { engines_.clear(); }

  /// The engine of `gpus` GPUs with `memory_limit` bytes each (0: the engine's default, or
  /// MGJOIN_TEST_GPU_MEMORY_MIB where set, so that several test processes can share one GPU, as
  /// scripts/device-sanitize.sh runs them).
  Engine& get(int gpus, std::uint64_t memory_limit) {
    auto& e = engines_[{gpus, memory_limit}];
    if (!e) {
      EngineOptions o;
      o.gpus = gpus;
      o.gpu_memory_limit = memory_limit;
      e = std::make_unique<Engine>(test_engine_options(o));
    }
    return *e;
  }

 private:
  std::map<std::pair<int, std::uint64_t>, std::unique_ptr<Engine>> engines_;
};

/// Registered before main (an inline variable: once per binary, however many files include this
/// header), so that gtest tears it down before exit.
inline SharedEngines* const shared_engines_environment =
    static_cast<SharedEngines*>(::testing::AddGlobalTestEnvironment(new SharedEngines));

/// The binary's shared engines.
inline SharedEngines& shared_engines() { return *shared_engines_environment; }

}  // namespace mgjoin::test
