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
      o.gpu_memory_limit = memory_limit != 0 ? memory_limit : default_limit();
      e = std::make_unique<Engine>(o);
    }
    return *e;
  }

 private:
  static std::uint64_t default_limit() {
    const char* mib = std::getenv("MGJOIN_TEST_GPU_MEMORY_MIB");
    return mib ? std::strtoull(mib, nullptr, 10) << 20 : 0;
  }

  std::map<std::pair<int, std::uint64_t>, std::unique_ptr<Engine>> engines_;
};

/// Registered before main (an inline variable: once per binary, however many files include this
/// header), so that gtest tears it down before exit.
inline SharedEngines* const shared_engines_environment =
    static_cast<SharedEngines*>(::testing::AddGlobalTestEnvironment(new SharedEngines));

/// The binary's shared engines.
inline SharedEngines& shared_engines() { return *shared_engines_environment; }

}  // namespace mgjoin::test
