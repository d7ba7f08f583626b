// The join kernels' tuple counters at and past 2^64 (run on the GPU machine; skipped without GPUs):
// the warp reduction and the atomic of TupleCounter, the paper flow's binary-search join kernel and the
// co-partitioned flow's merge-path join, each with a counter started near 2^64 and, where the GPU has
// 34 GB free, with 2^32 equal keys on each side (2^64 tuples). Expected values are written out.
#include "engine/src/copart/copart_kernels.hpp"
#include "engine/src/join/join_kernel.hpp"
#include "engine/src/join/tuple_counter.cuh"

#include "alloc/stack_allocator.hpp"
#include "alloc/stack_buffer.hpp"
#include "common/gpu.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace mgjoin::detail {
namespace {

using DeviceStack = alloc::DeviceStackAllocator;
template <class T>
using DeviceBuffer = alloc::StackBuffer<T, DeviceStack>;

constexpr std::uint64_t kMax = UINT64_MAX;
constexpr std::uint64_t k2to32 = std::uint64_t{1} << 32;

/// Thread i adds CheckedSum{values[i], flags[i]} through warp_add_tuples.
__global__ void add_per_thread(TupleCounter* counter, const std::uint64_t* values, const std::uint8_t* flags) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  CheckedSum sum;
  sum.value = values[i];
  sum.overflowed = flags[i] != 0;
  warp_add_tuples(counter, sum);
}

TupleCounter read(const DeviceBuffer<TupleCounter>& counter) {
  TupleCounter c;
  MGJOIN_CUDA_TRY(cudaMemcpy(&c, counter.data(), sizeof c, cudaMemcpyDeviceToHost));
  return c;
}

void start_at(DeviceBuffer<TupleCounter>& counter, std::uint64_t count) {
  const TupleCounter c{count, 0};
  MGJOIN_CUDA_TRY(cudaMemcpy(counter.data(), &c, sizeof c, cudaMemcpyHostToDevice));
}

/// Runs add_per_thread over `values` (blocks of 256 threads) on a counter started at `start`.
TupleCounter add_all(const std::vector<std::uint64_t>& values, std::uint64_t start = 0,
                     std::vector<std::uint8_t> flags = {}) {
  EXPECT_EQ(values.size() % 256, 0u);
  flags.resize(values.size(), 0);
  DeviceStack dev(0, 64ull << 20);
  DeviceBuffer<TupleCounter> counter(dev, 1);
  DeviceBuffer<std::uint64_t> v(dev, values.size());
  DeviceBuffer<std::uint8_t> f(dev, flags.size());
  MGJOIN_CUDA_TRY(cudaMemcpy(v.data(), values.data(), v.bytes(), cudaMemcpyHostToDevice));
  MGJOIN_CUDA_TRY(cudaMemcpy(f.data(), flags.data(), f.bytes(), cudaMemcpyHostToDevice));
  start_at(counter, start);
  add_per_thread<<<static_cast<unsigned>(values.size() / 256), 256>>>(counter.data(), v.data(), f.data());
  MGJOIN_CHECK_LAUNCH();
  MGJOIN_CUDA_TRY(cudaDeviceSynchronize());
  return read(counter);
}

TEST(OverflowTupleCounterGpu, WarpSumsExactBelowTwoToThe64) {
  MGJOIN_REQUIRE_GPUS(1);
  std::vector<std::uint64_t> v(256, std::uint64_t{1} << 55);  // 8 warps of 32 x 2^55 = 2^60 each: 2^63
  TupleCounter c = add_all(v);
  EXPECT_EQ(c.count, std::uint64_t{1} << 63);
  EXPECT_EQ(c.overflowed, 0u);
  // The last lane of a warp has no partner in the reduction: its value must count once, not twice.
  v.assign(256, 0);
  v[31] = std::uint64_t{1} << 63;
  c = add_all(v);
  EXPECT_EQ(c.count, std::uint64_t{1} << 63);
  EXPECT_EQ(c.overflowed, 0u);
  v[31] = 0;
  v[0] = kMax;
  c = add_all(v);
  EXPECT_EQ(c.count, kMax);
  EXPECT_EQ(c.overflowed, 0u);
  // 2^14 blocks of 256 threads, 2^40 each: 2^62 from 2^17 warps' atomics.
  c = add_all(std::vector<std::uint64_t>(std::size_t{1} << 22, std::uint64_t{1} << 40));
  EXPECT_EQ(c.count, std::uint64_t{1} << 62);
  EXPECT_EQ(c.overflowed, 0u);
}

TEST(OverflowTupleCounterGpu, WarpSumOfTwoToThe64SetsTheFlag) {
  MGJOIN_REQUIRE_GPUS(1);
  std::vector<std::uint64_t> v(256, 0);
  for (int lane = 0; lane < 32; ++lane) v[lane] = std::uint64_t{1} << 59;  // 32 x 2^59 = 2^64 in one warp
  EXPECT_EQ(add_all(v).overflowed, 1u);
  v.assign(256, 0);
  v[3] = v[200] = std::uint64_t{1} << 63;  // two warps of 2^63: the second atomic wraps the counter
  EXPECT_EQ(add_all(v).overflowed, 1u);
  std::vector<std::uint8_t> flags(256, 0);
  flags[77] = 1;  // a thread whose own sum overflowed
  EXPECT_EQ(add_all(std::vector<std::uint64_t>(256, 1), 0, flags).overflowed, 1u);
}

TEST(OverflowTupleCounterGpu, CounterStartedNearTwoToThe64) {
  MGJOIN_REQUIRE_GPUS(1);
  std::vector<std::uint64_t> v(512, 0);
  v[5] = 4, v[300] = 5;  // 9 more: exactly 2^64 - 1
  TupleCounter c = add_all(v, kMax - 9);
  EXPECT_EQ(c.count, kMax);
  EXPECT_EQ(c.overflowed, 0u);
  v[301] = 1;  // 10 more: 2^64
  EXPECT_EQ(add_all(v, kMax - 9).overflowed, 1u);
}

/// Launches the binary-search join kernel on keys already in device memory (count only).
TupleCounter join_kernel_count(const void* r, std::uint64_t nr, const void* s, std::uint64_t ns, int key_bytes,
                               std::uint64_t start, DeviceStack& dev) {
  DeviceBuffer<TupleCounter> tuples(dev, 1);
  DeviceBuffer<unsigned long long> ranges(dev, 1);
  start_at(tuples, start);
  MGJOIN_CUDA_TRY(cudaMemset(ranges.data(), 0, ranges.bytes()));
  SubpartitionJoinArgs args;
  args.r_keys = r, args.r_size = nr, args.s_keys = s, args.s_size = ns;
  args.tuple_count = tuples.data(), args.range_counter = ranges.data();
  launch_join_subpartition(args, key_bytes, nullptr);
  MGJOIN_CUDA_TRY(cudaDeviceSynchronize());
  return read(tuples);
}

/// Merge-path join of a resident pair (co-partitioned flow), count only.
TupleCounter resident_count(const void* x, std::uint64_t nx, const void* y, std::uint64_t ny, int key_bytes,
                            std::uint64_t start, DeviceStack& dev) {
  DeviceBuffer<TupleCounter> tuples(dev, 1);
  DeviceBuffer<std::byte> scratch(dev, copart::resident_join_scratch_bytes());
  start_at(tuples, start);
  copart::resident_join({key_bytes, x, nx, y, ny}, tuples.data(), {}, scratch.data(), nullptr);
  MGJOIN_CUDA_TRY(cudaDeviceSynchronize());
  return read(tuples);
}

/// 50000 x 50000 equal 8-byte keys plus 3 x 2 of another key: 2.5 * 10^9 + 6 tuples.
struct SmallPair {
  DeviceStack dev{0, 8ull << 20};
  DeviceBuffer<std::uint64_t> r{dev, 50'003}, s{dev, 50'002};
  static constexpr std::uint64_t kTuples = 2'500'000'006ull;
  SmallPair() {
    std::vector<std::uint64_t> rk(50'003, 9), sk(50'002, 9);
    rk[0] = rk[1] = rk[2] = 4;
    sk[0] = sk[1] = 4;
    MGJOIN_CUDA_TRY(cudaMemcpy(r.data(), rk.data(), r.bytes(), cudaMemcpyHostToDevice));
    MGJOIN_CUDA_TRY(cudaMemcpy(s.data(), sk.data(), s.bytes(), cudaMemcpyHostToDevice));
  }
};

TEST(OverflowJoinKernelGpu, CountReachingTwoToThe64SetsTheFlag) {
  MGJOIN_REQUIRE_GPUS(1);
  SmallPair p;
  TupleCounter c = join_kernel_count(p.r.data(), 50'003, p.s.data(), 50'002, 8, kMax - SmallPair::kTuples, p.dev);
  EXPECT_EQ(c.count, kMax);
  EXPECT_EQ(c.overflowed, 0u);
  c = join_kernel_count(p.r.data(), 50'003, p.s.data(), 50'002, 8, kMax - SmallPair::kTuples + 1, p.dev);
  EXPECT_EQ(c.overflowed, 1u);
}

TEST(OverflowResidentJoinGpu, CountReachingTwoToThe64SetsTheFlag) {
  MGJOIN_REQUIRE_GPUS(1);
  SmallPair p;
  TupleCounter c = resident_count(p.r.data(), 50'003, p.s.data(), 50'002, 8, kMax - SmallPair::kTuples, p.dev);
  EXPECT_EQ(c.count, kMax);
  EXPECT_EQ(c.overflowed, 0u);
  c = resident_count(p.r.data(), 50'003, p.s.data(), 50'002, 8, kMax - SmallPair::kTuples + 1, p.dev);
  EXPECT_EQ(c.overflowed, 1u);
}

/// 2^32 zero 4-byte keys on each side in device memory (32 GiB): 2^64 tuples. Skips when the GPU
/// cannot hold them.
struct TwoToThe32EqualKeys {
  std::unique_ptr<DeviceStack> dev;
  std::unique_ptr<DeviceBuffer<std::uint32_t>> r, s;
  bool make() {
    std::size_t free = 0, total = 0;
    MGJOIN_CUDA_TRY(cudaMemGetInfo(&free, &total));
    const std::size_t need = 2 * k2to32 * sizeof(std::uint32_t) + (64ull << 20);
    if (free < need + (1ull << 30)) return false;
    dev = std::make_unique<DeviceStack>(0, need);
    r = std::make_unique<DeviceBuffer<std::uint32_t>>(*dev, k2to32);
    s = std::make_unique<DeviceBuffer<std::uint32_t>>(*dev, k2to32);
    MGJOIN_CUDA_TRY(cudaMemset(r->data(), 0, r->bytes()));
    MGJOIN_CUDA_TRY(cudaMemset(s->data(), 0, s->bytes()));
    return true;
  }
};

TEST(OverflowJoinKernelGpu, TwoToThe32EqualKeysOnEachSideSetTheFlag) {
  MGJOIN_REQUIRE_GPUS(1);
  TwoToThe32EqualKeys keys;
  if (!keys.make()) GTEST_SKIP() << "needs 34.5 GB of free GPU memory for 2 x 2^32 4-byte keys";
  // One thread finds the key's run in both sides: 2^32 x 2^32 overflows its own product.
  EXPECT_EQ(join_kernel_count(keys.r->data(), k2to32, keys.s->data(), k2to32, 4, 0, *keys.dev).overflowed, 1u);
  // One row less on one side: 2^32 x (2^32 - 1) = 2^64 - 2^32, exact.
  const TupleCounter c = join_kernel_count(keys.r->data(), k2to32, keys.s->data(), k2to32 - 1, 4, 0, *keys.dev);
  EXPECT_EQ(c.count, kMax - k2to32 + 1);
  EXPECT_EQ(c.overflowed, 0u);
}

TEST(OverflowResidentJoinGpu, TwoToThe32EqualKeysOnEachSideSetTheFlag) {
  MGJOIN_REQUIRE_GPUS(1);
  TwoToThe32EqualKeys keys;
  if (!keys.make()) GTEST_SKIP() << "needs 34.5 GB of free GPU memory for 2 x 2^32 4-byte keys";
  // Each block counts its tile's share; the blocks' atomics together pass 2^64.
  EXPECT_EQ(resident_count(keys.r->data(), k2to32, keys.s->data(), k2to32, 4, 0, *keys.dev).overflowed, 1u);
  const TupleCounter c = resident_count(keys.r->data(), k2to32, keys.s->data(), k2to32 - 1, 4, 0, *keys.dev);
  EXPECT_EQ(c.count, kMax - k2to32 + 1);
  EXPECT_EQ(c.overflowed, 0u);
}

}  // namespace
}  // namespace mgjoin::detail
