// The merge-based multi-GPU sort (engine/src/sort/merge_sort.hpp) on real GPUs, through its
// ChunksetSorter: every run is checked against the input (keys sorted in the key type's order, payloads
// a permutation of the row ids that carries each row's key). Skips without enough GPUs.
#include "engine/src/sort/merge_sort.hpp"
#include "engine/src/sort/planner.hpp"

#include "alloc/stack_allocator.hpp"
#include "common/gpu.hpp"
#include "common/seed.hpp"
#include "common/tier.hpp"
#include "core/device.hpp"
#include "p2p/peer_access.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace mgjoin::sort {
namespace {

enum class Shape { Random, AllEqual, HotKey, SharedTopBits, Sorted, Reversed };
const char* shape_name(Shape s) {
  constexpr const char* names[] = {"random", "all-equal", "hot-key", "shared-top-24-bits", "sorted", "reversed"};
  return names[static_cast<int>(s)];
}

template <class Key>
std::vector<Key> make_keys(Shape shape, std::int64_t n, std::mt19937_64& rng) {
  using U = std::make_unsigned_t<Key>;
  constexpr int kBits = 8 * sizeof(Key);
  std::vector<Key> k(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    U u = 0;
    switch (shape) {
      case Shape::Random: u = static_cast<U>(rng()); break;
      case Shape::AllEqual: u = 42; break;
      case Shape::HotKey: u = i % 2 == 0 ? U{777} : static_cast<U>(rng()); break;
      case Shape::SharedTopBits: u = static_cast<U>((U{0xABCDEF} << (kBits - 24)) | (rng() & ((U{1} << (kBits - 24)) - 1))); break;
      case Shape::Sorted: u = static_cast<U>(std::is_signed_v<Key> ? i - n / 2 : i); break;  // signed: crosses 0
      case Shape::Reversed: u = static_cast<U>(std::is_signed_v<Key> ? n / 2 - i : n - i); break;
    }
    k[static_cast<std::size_t>(i)] = static_cast<Key>(u);
  }
  return k;
}

/// One GPU's share of a test chunkset: its stack, streams, events and buffers.
struct TestGpu {
  std::unique_ptr<alloc::DeviceStackAllocator> memory;
  gpu::Stream compute, d2h;
  gpu::Event ready, d2h_done;
  std::vector<alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>> buffers;  // keys, alt, payload, alt

  TestGpu(int device, std::int64_t capacity, const TupleLayout& l)
      : memory(std::make_unique<alloc::DeviceStackAllocator>(
            device, 2 * static_cast<std::size_t>(capacity) * l.tuple_bytes() + (64u << 20))),
        compute(device), d2h(device), ready(device, false), d2h_done(device, false) {
    for (int width : {l.key_bytes, l.key_bytes, l.payload_bytes, l.payload_bytes})
      buffers.emplace_back(*memory, static_cast<std::size_t>(capacity) * width);
  }
  void* buffer(int i) const { return buffers[i].empty() ? nullptr : buffers[i].data(); }
};

template <class Key>
void expect_merge_sort_matches_cpu(const std::vector<int>& devices, const std::vector<Key>& keys, int payload_bytes) {
  const int g = static_cast<int>(devices.size());
  const auto n = static_cast<std::int64_t>(keys.size());
  const TupleLayout layout{static_cast<int>(sizeof(Key)), payload_bytes, std::is_signed_v<Key>};
  SCOPED_TRACE("g = " + std::to_string(g) + ", n = " + std::to_string(n) + ", key bytes " +
               std::to_string(sizeof(Key)) + (std::is_signed_v<Key> ? " signed" : " unsigned") + ", payload bytes " +
               std::to_string(payload_bytes));

  std::vector<std::byte> payload_in(static_cast<std::size_t>(n * payload_bytes));  // payload = row id
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t id = static_cast<std::uint64_t>(i);
    std::memcpy(payload_in.data() + i * payload_bytes, &id, static_cast<std::size_t>(payload_bytes));
  }
  std::vector<TestGpu> res;
  std::vector<GpuChunk> chunks;
  res.reserve(devices.size());
  for (int d = 0; d < g; ++d) {
    const RowRange rows = even_part(n, g, d);
    TestGpu& r = res.emplace_back(devices[d], std::max<std::int64_t>(rows.size(), 1), layout);
    gpu::DeviceGuard guard(devices[d]);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(r.buffer(0), keys.data() + rows.begin, rows.size() * sizeof(Key),
                                    cudaMemcpyHostToDevice, r.compute));
    if (payload_bytes > 0)
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(r.buffer(2), payload_in.data() + rows.begin * payload_bytes,
                                      rows.size() * payload_bytes, cudaMemcpyHostToDevice, r.compute));
    r.ready.record(r.compute);
    chunks.push_back({devices[d], r.compute, r.d2h, r.ready, r.d2h_done, r.memory.get(), r.buffer(0), r.buffer(2),
                      r.buffer(1), r.buffer(3), rows.size(), std::max<std::int64_t>(rows.size(), 1), nullptr});
  }

  std::vector<Key> keys_out(keys.size());
  std::vector<std::byte> payload_out(payload_in.size());
  ChunksetJob job{chunks, layout, even_part(n, g, 0).size(), keys_out.data(), payload_out.data(), 0};
  make_merge_sorter()->sort(job);
  for (const TestGpu& r : res) r.d2h_done.synchronize();

  ASSERT_TRUE(std::is_sorted(keys_out.begin(), keys_out.end())) << "keys are not sorted";
  if (payload_bytes == 0) {
    std::vector<Key> expected(keys);
    std::sort(expected.begin(), expected.end());
    ASSERT_EQ(keys_out, expected) << "the key multiset changed";
    return;
  }
  std::vector<bool> seen(keys.size(), false);
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t id = 0;
    std::memcpy(&id, payload_out.data() + i * payload_bytes, static_cast<std::size_t>(payload_bytes));
    ASSERT_LT(id, keys.size()) << "row " << i << " has a payload that was never in the input";
    ASSERT_FALSE(seen[id]) << "payload " << id << " appears twice";
    seen[id] = true;
    ASSERT_EQ(keys_out[i], keys[id]) << "row " << i << " lost its payload";
  }
}

/// Every key type x payload width x input shape on the given devices (chunk d on devices[d]), with peer
/// access enabled once for the sweep (as an engine does for all its joins).
void sweep(const std::vector<int>& devices) {
  std::mt19937_64 rng(test::announce_seed());
  const auto g = static_cast<std::int64_t>(devices.size());
  std::vector<int> unique_devices(devices);
  std::sort(unique_devices.begin(), unique_devices.end());
  unique_devices.erase(std::unique(unique_devices.begin(), unique_devices.end()), unique_devices.end());
  p2p::PeerAccess peers(unique_devices);
  auto run_all_types = [&](Shape shape, std::int64_t n) {
    SCOPED_TRACE(shape_name(shape));
    for (int payload_bytes : {0, 4, 8}) {
      expect_merge_sort_matches_cpu(devices, make_keys<std::int32_t>(shape, n, rng), payload_bytes);
      expect_merge_sort_matches_cpu(devices, make_keys<std::uint32_t>(shape, n, rng), payload_bytes);
      expect_merge_sort_matches_cpu(devices, make_keys<std::int64_t>(shape, n, rng), payload_bytes);
      expect_merge_sort_matches_cpu(devices, make_keys<std::uint64_t>(shape, n, rng), payload_bytes);
      if (::testing::Test::HasFatalFailure()) return;
    }
  };
  for (Shape shape : {Shape::Random, Shape::AllEqual, Shape::HotKey, Shape::SharedTopBits, Shape::Sorted,
                      Shape::Reversed}) {
    run_all_types(shape, 100003 * g + 1);  // not divisible by g
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Quick: the largest size 2^20 instead of 2^22: still 2^18 rows a chunk at g = 4, more than twice the
  // 10^5-row chunks of the shapes above (the merge sort has no size threshold between them).
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, g - 1, g + 1, test::per_tier<std::int64_t>(1 << 20, 1 << 22)}) {
    run_all_types(Shape::Random, n);  // empty, fewer tuples than GPUs, a million or a few
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(MergeSortGpu, OneGpuMatchesCpuSort) {
  MGJOIN_REQUIRE_GPUS(1);
  sweep({0});
}

TEST(MergeSortGpu, TwoGpusMatchCpuSort) {
  MGJOIN_REQUIRE_GPUS(2);
  sweep({0, 1});
}

TEST(MergeSortGpu, FourGpusMatchCpuSort) {
  MGJOIN_REQUIRE_GPUS(4);
  sweep({0, 1, 2, 3});
}

// Four chunks on one GPU (own streams and stacks): the g = 4 stage logic on a one-GPU machine.
TEST(MergeSortGpu, FourChunksOnOneGpuMatchCpuSort) {
  MGJOIN_REQUIRE_GPUS(1);
  sweep({0, 0, 0, 0});
}

TEST(MergeSortGpu, ReportsBytesMovedBetweenGpus) {
  MGJOIN_REQUIRE_GPUS(2);
  // GPU 0 holds the larger half of the keys: the single stage must swap every tuple of both chunks.
  const std::int64_t half = 1 << 16;
  std::vector<std::uint64_t> keys;
  for (std::int64_t i = 0; i < 2 * half; ++i) keys.push_back(static_cast<std::uint64_t>(i < half ? half + i : i - half));
  const TupleLayout layout{8, 8, false};
  std::vector<TestGpu> res;
  std::vector<GpuChunk> chunks;
  const std::vector<int> devices{0, 1};
  p2p::PeerAccess peers(devices);
  for (int d = 0; d < 2; ++d) {
    TestGpu& r = res.emplace_back(d, half, layout);
    gpu::DeviceGuard guard(d);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(r.buffer(0), keys.data() + d * half, half * 8, cudaMemcpyHostToDevice, r.compute));
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(r.buffer(2), keys.data() + d * half, half * 8, cudaMemcpyHostToDevice, r.compute));
    r.ready.record(r.compute);
    chunks.push_back({d, r.compute, r.d2h, r.ready, r.d2h_done, r.memory.get(), r.buffer(0), r.buffer(2), r.buffer(1),
                      r.buffer(3), half, half, nullptr});
  }
  const MergeSortResult result = merge_sort_chunkset(chunks, layout);
  for (const TestGpu& r : res) r.compute.synchronize();
  EXPECT_EQ(result.bytes_nvlink, 2u * half * 16);  // every tuple crosses once, keys and payloads
}

}  // namespace
}  // namespace mgjoin::sort
