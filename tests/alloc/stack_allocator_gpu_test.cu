// Stack allocators on real pinned and device memory, and Thrust and CUB running with all their scratch
// space on the adapters (alloc/thrust_adapter.cuh, alloc/cub_adapter.cuh). Skips without a GPU.
#include "alloc/cub_adapter.cuh"
#include "alloc/stack_allocator.hpp"
#include "alloc/thrust_adapter.cuh"

#include "common/gpu.hpp"
#include "common/seed.hpp"
#include "common/tier.hpp"

#include "core/device.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <thrust/sort.h>
#include <thrust/system/cuda/execution_policy.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace mgjoin::alloc {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

bool aligned(const void* p, std::size_t to) { return reinterpret_cast<std::uintptr_t>(p) % to == 0; }

cudaMemoryType memory_type(const void* p) {
  cudaPointerAttributes attr{};
  MGJOIN_CUDA_TRY(cudaPointerGetAttributes(&attr, p));
  return attr.type;
}

TEST(DeviceStackAllocator, HandsOutAlignedBlocksOfItsGpuAndKeepsTheCurrentDevice) {
  MGJOIN_REQUIRE_GPUS(1);
  for (int gpu = 0; gpu < test::gpu_count(); ++gpu) {
    MGJOIN_CUDA_TRY(cudaSetDevice(0));
    DeviceStackAllocator stack(gpu, 64 * kMiB);
    int current = -1;
    MGJOIN_CUDA_TRY(cudaGetDevice(&current));
    EXPECT_EQ(current, 0) << "the constructor must restore the current device";
    EXPECT_EQ(stack.device(), gpu);
    EXPECT_EQ(stack.name(), "device stack of GPU " + std::to_string(gpu));
    EXPECT_EQ(stack.alignment(), 128u);

    std::vector<void*> blocks;
    for (std::size_t bytes : {1, 127, 129, 1000, 0, 4096}) blocks.push_back(stack.allocate(bytes));
    for (void* p : blocks) {
      EXPECT_TRUE(aligned(p, 128));
      cudaPointerAttributes attr{};
      MGJOIN_CUDA_TRY(cudaPointerGetAttributes(&attr, p));
      EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
      EXPECT_EQ(attr.device, gpu);
    }
    // The memory is usable: write a block on the GPU and read it back.
    gpu::DeviceGuard guard(gpu);
    MGJOIN_CUDA_TRY(cudaMemset(blocks[3], 0x5a, 1000));
    std::vector<unsigned char> back(1000);
    MGJOIN_CUDA_TRY(cudaMemcpy(back.data(), blocks[3], 1000, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](unsigned char c) { return c == 0x5a; }));
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) stack.deallocate(*it);
    EXPECT_EQ(stack.used(), 0u);
  }
}

TEST(DeviceStackAllocator, ExhaustionNamesTheGpu) {
  MGJOIN_REQUIRE_GPUS(1);
  const int gpu = test::gpu_count() - 1;
  DeviceStackAllocator stack(gpu, kMiB);
  try {
    stack.allocate(2 * kMiB);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("device stack of GPU " + std::to_string(gpu)), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(2 * kMiB) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("capacity " + std::to_string(kMiB)), std::string::npos) << msg;
  }
}

// A stack over a region of another stack's block (the bucketed flow's halves): its blocks lie in the
// region, and destroying it leaves the memory to the block's owner (nothing is cudaFree'd).
TEST(DeviceStackAllocator, AStackOverABorrowedRegionKeepsToItAndFreesNothing) {
  MGJOIN_REQUIRE_GPUS(1);
  DeviceStackAllocator parent(0, 4 * kMiB);
  std::byte* block = static_cast<std::byte*>(parent.allocate(2 * kMiB));
  {
    DeviceStackAllocator half(0, Region{block, 2 * kMiB});
    EXPECT_EQ(half.device(), 0);
    void* a = half.allocate(kMiB);
    void* b = half.allocate(kMiB);
    EXPECT_EQ(static_cast<std::byte*>(a), block);
    EXPECT_EQ(static_cast<std::byte*>(b), block + kMiB);
    EXPECT_THROW(half.allocate(1), OutOfMemory);
    MGJOIN_CUDA_TRY(cudaMemset(a, 0x3c, 2 * kMiB));  // the whole region is this GPU's memory
    half.deallocate(a);
    half.deallocate(b);
  }
  // Still allocated, and the parent's to read and to free.
  std::vector<unsigned char> back(2 * kMiB);
  MGJOIN_CUDA_TRY(cudaMemcpy(back.data(), block, back.size(), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](unsigned char c) { return c == 0x3c; }));
  parent.deallocate(block);
  EXPECT_EQ(parent.used(), 0u);
  EXPECT_THROW(DeviceStackAllocator(0, Region{block + 64, kMiB}), Error);  // not 128-byte aligned
}

TEST(DeviceStackAllocator, ABackingLargerThanTheGpuIsAnOutOfMemoryError) {
  MGJOIN_REQUIRE_GPUS(1);
  EXPECT_THROW(DeviceStackAllocator(0, std::size_t{1} << 50), OutOfMemory);  // 1 PiB
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed cudaMalloc must not leave an error behind";
}

TEST(PinnedStackAllocator, HandsOutAlignedPinnedHostBlocksThatEveryGpuCopiesFrom) {
  MGJOIN_REQUIRE_GPUS(1);
  PinnedStackAllocator stack(16 * kMiB);
  EXPECT_EQ(stack.device(), -1);
  EXPECT_EQ(stack.name(), "pinned host stack");
  std::vector<void*> blocks;
  for (std::size_t bytes : {1, 15, 17, 4000, 0}) blocks.push_back(stack.allocate(bytes));
  for (void* p : blocks) {
    EXPECT_TRUE(aligned(p, 16));
    EXPECT_EQ(memory_type(p), cudaMemoryTypeHost);
  }
  auto* src = static_cast<std::uint32_t*>(blocks[3]);
  for (std::uint32_t i = 0; i < 1000; ++i) src[i] = i * 7;
  for (int gpu = 0; gpu < test::gpu_count(); ++gpu) {
    DeviceStackAllocator device(gpu, kMiB);
    StackBuffer<std::uint32_t, DeviceStackAllocator> d(device, 1000);
    StackBuffer<std::uint32_t, PinnedStackAllocator> back(stack, 1000);
    gpu::Stream stream(gpu);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(d.data(), src, 4000, cudaMemcpyHostToDevice, stream));
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(back.data(), d.data(), 4000, cudaMemcpyDeviceToHost, stream));
    stream.synchronize();
    EXPECT_TRUE(std::equal(back.begin(), back.end(), src)) << "GPU " << gpu;
  }
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) stack.deallocate(*it);
  EXPECT_EQ(stack.used(), 0u);
}

__global__ void write_squares(std::uint64_t* out, std::uint64_t n, std::uint64_t salt) {
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) out[i] = i * i + salt;
}

TEST(PinnedStackAllocator, MappedMemoryIsWrittenByKernelsOnEveryGpu) {
  MGJOIN_REQUIRE_GPUS(1);
  PinnedStackAllocator stack(64 * kMiB, /*mapped=*/true);
  EXPECT_EQ(stack.name(), "mapped pinned host stack");
  constexpr std::uint64_t n = 1'000'003;
  for (int gpu = 0; gpu < test::gpu_count(); ++gpu) {
    StackBuffer<std::uint64_t, PinnedStackAllocator> out(stack, n);
    std::fill(out.begin(), out.end(), ~std::uint64_t{0});
    gpu::Stream stream(gpu);
    gpu::DeviceGuard guard(gpu);
    // Under UVA the host pointer of portable mapped memory is valid in kernels on every GPU.
    write_squares<<<(n + 255) / 256, 256, 0, stream>>>(out.data(), n, gpu);
    MGJOIN_CHECK_LAUNCH();
    stream.synchronize();
    std::uint64_t wrong = 0;
    for (std::uint64_t i = 0; i < n; ++i) wrong += out.data()[i] != i * i + gpu;
    EXPECT_EQ(wrong, 0u) << "GPU " << gpu;
  }
}

// ---------------------------------------------------------------- sorts of 10^8 pairs on the adapters

// 10^8 pairs (the tests' names); quick: 2.5 * 10^7 (the CPU reference std::sorts every key, one thread),
// with the headroom a quarter too: still about a sixth of the scratch each sort needs.
std::size_t pair_count() { return test::per_tier<std::size_t>(25'000'000, 100'000'000); }
// Left free on the GPU beside the stack: less than the scratch each sort needs (≥ 16 bytes a pair: 1.6 GB), so
// a sort that fell back to cudaMalloc for its scratch would fail instead of passing unnoticed.
std::size_t headroom() { return test::per_tier<std::size_t>(64 * kMiB, 256 * kMiB); }

struct Pairs {
  std::vector<std::uint64_t> keys;
  std::vector<std::uint64_t> values;       // the input position of each key: checks stability
  std::vector<std::uint64_t> sorted_keys;  // CPU reference
};

// Random keys with a hot key and a small set of shared-prefix keys among them; computed once per run.
const Pairs& input_pairs() {
  static const Pairs pairs = [] {
    Pairs p;
    std::mt19937_64 rng(test::announce_seed());
    const std::size_t n = pair_count();
    p.keys.resize(n);
    p.values.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto r = rng();
      p.keys[i] = r % 8 == 0 ? 42 : r % 8 == 1 ? (0xabcdull << 48) | (r >> 40) : r;
      p.values[i] = i;
    }
    p.sorted_keys = p.keys;
    std::sort(p.sorted_keys.begin(), p.sorted_keys.end());
    return p;
  }();
  return pairs;
}

// Output equals the stable CPU sort: keys match the reference and each value is the input position of its
// key, increasing among equal keys.
void expect_stable_sort_of(const Pairs& in, const std::vector<std::uint64_t>& keys,
                           const std::vector<std::uint64_t>& values) {
  ASSERT_EQ(keys.size(), in.keys.size());
  EXPECT_TRUE(keys == in.sorted_keys) << "keys differ from the CPU sort";
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const bool same_key_as_input = values[i] < in.keys.size() && in.keys[values[i]] == keys[i];
    const bool stable = i == 0 || keys[i - 1] != keys[i] || values[i - 1] < values[i];
    wrong += !(same_key_as_input && stable);
  }
  EXPECT_EQ(wrong, 0u) << "values are not the stably sorted input positions";
}

// A device stack over all free memory of the GPU but headroom().
std::unique_ptr<DeviceStackAllocator> stack_over_free_memory(int gpu) {
  gpu::DeviceGuard guard(gpu);
  std::size_t free_bytes = 0, total = 0;
  MGJOIN_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total));
  return std::make_unique<DeviceStackAllocator>(gpu, free_bytes - headroom());
}

template <class Alloc>
void upload(StackBuffer<std::uint64_t, Alloc>& d, const std::vector<std::uint64_t>& h, cudaStream_t s) {
  MGJOIN_CUDA_TRY(cudaMemcpyAsync(d.data(), h.data(), d.bytes(), cudaMemcpyHostToDevice, s));
}

template <class Alloc>
std::vector<std::uint64_t> download(const StackBuffer<std::uint64_t, Alloc>& d, cudaStream_t s) {
  std::vector<std::uint64_t> h(d.size());
  MGJOIN_CUDA_TRY(cudaMemcpyAsync(h.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost, s));
  MGJOIN_CUDA_TRY(cudaStreamSynchronize(s));
  return h;
}

TEST(ThrustAllocator, SortByKeyOfTenToTheEightPairsTakesAllScratchFromTheStack) {
  MGJOIN_REQUIRE_GPUS(1);
  const Pairs& in = input_pairs();
  const int gpu = 0;
  auto stack = stack_over_free_memory(gpu);
  gpu::Stream stream(gpu);
  gpu::DeviceGuard guard(gpu);
  StackBuffer<std::uint64_t, DeviceStackAllocator> keys(*stack, pair_count()), values(*stack, pair_count());
  upload(keys, in.keys, stream);
  upload(values, in.values, stream);
  const std::size_t data_top = stack->used();

  ThrustAllocator scratch(*stack);
  thrust::sort_by_key(thrust::cuda::par(scratch).on(stream), keys.data(), keys.data() + pair_count(), values.data());
  MGJOIN_CUDA_TRY(cudaStreamSynchronize(stream));

  // Scratch beyond the headroom came from the stack: a cudaMalloc of it would have failed.
  EXPECT_GT(stack->peak_used() - data_top, headroom()) << "Thrust's scratch did not come from the stack";
  EXPECT_EQ(stack->used(), data_top) << "Thrust returned all its scratch";
  expect_stable_sort_of(in, download(keys, stream), download(values, stream));
}

TEST(RunCub, RadixSortPairsOfTenToTheEightPairsTakesItsTempStorageFromTheStack) {
  MGJOIN_REQUIRE_GPUS(1);
  const Pairs& in = input_pairs();
  const int gpu = test::gpu_count() - 1;
  auto stack = stack_over_free_memory(gpu);
  gpu::Stream stream(gpu);
  gpu::DeviceGuard guard(gpu);
  StackBuffer<std::uint64_t, DeviceStackAllocator> keys_in(*stack, pair_count()), values_in(*stack, pair_count());
  StackBuffer<std::uint64_t, DeviceStackAllocator> keys_out(*stack, pair_count()), values_out(*stack, pair_count());
  upload(keys_in, in.keys, stream);
  upload(values_in, in.values, stream);
  const std::size_t data_top = stack->used();

  std::size_t asked = 0;
  run_cub(*stack, [&](void* temp, std::size_t& temp_bytes) {
    const cudaError_t err = cub::DeviceRadixSort::SortPairs(
        temp, temp_bytes, keys_in.data(), keys_out.data(), values_in.data(), values_out.data(),
        static_cast<std::int64_t>(pair_count()), 0, 64, stream.get());
    asked = temp_bytes;
    return err;
  });
  MGJOIN_CUDA_TRY(cudaStreamSynchronize(stream));

  EXPECT_GE(asked, headroom()) << "the headroom must be too small for the temp storage to prove anything";
  EXPECT_GE(stack->peak_used() - data_top, asked);
  EXPECT_EQ(stack->used(), data_top) << "run_cub returned its temp storage";
  expect_stable_sort_of(in, download(keys_out, stream), download(values_out, stream));
}

TEST(RunCub, AFailingCubCallThrows) {
  MGJOIN_REQUIRE_GPUS(1);
  DeviceStackAllocator stack(0, kMiB);
  EXPECT_THROW(run_cub(stack, [](void*, std::size_t& bytes) {
                 bytes = 64;
                 return cudaErrorInvalidValue;
               }),
               CudaError);
  EXPECT_EQ(stack.used(), 0u);
}

}  // namespace
}  // namespace mgjoin::alloc
