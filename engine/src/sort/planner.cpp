// Chunkset planning (paper, Section 3.1.3); see planner.hpp for the memory model.
#include "engine/src/sort/planner.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

namespace mgjoin::sort {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a == 0 ? 0 : (a - 1) / b + 1; }

std::int64_t padded(std::int64_t chunk) {
  return chunk + static_cast<std::int64_t>(std::ceil(kEpsilon * static_cast<double>(chunk)));
}

}  // namespace

std::uint64_t usable_device_bytes(std::span<const std::uint64_t> free_bytes, std::uint64_t limit) {
  std::uint64_t tightest = UINT64_MAX;
  for (const auto free : free_bytes)
    tightest = std::min(tightest, static_cast<std::uint64_t>(kDefaultMemoryFraction * static_cast<double>(free)));
  if (limit == 0) return tightest;
  MGJOIN_INPUT_EXPECTS(limit <= tightest, "JoinOptions::gpu_memory_limit: " + std::to_string(limit) +
                                              " bytes per GPU is more than the " + std::to_string(tightest) +
                                              " bytes (80% of free memory) the tightest GPU has");
  return limit;
}

std::uint64_t default_sort_temp_bytes(std::int64_t n, int key_bytes) {
  return static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(key_bytes) / 64 + (32ull << 20);
}

std::uint64_t device_bytes_for_chunk(std::int64_t chunk, int tuple_bytes, std::uint64_t sort_temp) {
  return 3ull * static_cast<std::uint64_t>(padded(chunk)) * static_cast<std::uint64_t>(tuple_bytes) +
         sort_temp + kPartitionScratchBytes + kAlignmentSlack;
}

RowRange even_part(std::int64_t n, std::int64_t parts, std::int64_t index) {
  // Parts differ by at most one row; 128-bit products keep n·index exact for any 64-bit n.
  const auto at = [&](std::int64_t i) {
    return static_cast<std::int64_t>(static_cast<__int128>(n) * i / parts);
  };
  return {at(index), at(index + 1)};
}

SortPlan plan_sort(const SortPlanInput& in) {
  const int g = in.gpus;
  MGJOIN_EXPECTS(g >= 1, "the sort phase needs at least one GPU");
  MGJOIN_EXPECTS(in.key_bytes == 4 || in.key_bytes == 8, "keys are 4 or 8 bytes");
  for (int p : {in.r_payload_bytes, in.s_payload_bytes})
    MGJOIN_EXPECTS(p == 0 || p == 4 || p == 8, "payloads are 0, 4 or 8 bytes");
  MGJOIN_EXPECTS(in.r_size >= 0 && in.s_size >= 0, "relation sizes are non-negative");

  const int tuple_bytes = in.key_bytes + std::max(in.r_payload_bytes, in.s_payload_bytes);
  const auto temp_bytes = [&](std::int64_t chunk) {
    return in.sort_temp_bytes ? in.sort_temp_bytes(padded(chunk))
                              : default_sort_temp_bytes(padded(chunk), in.key_bytes);
  };
  const auto fits = [&](std::int64_t chunk, std::uint64_t usable) {
    return device_bytes_for_chunk(chunk, tuple_bytes, temp_bytes(chunk)) <= usable;
  };

  SortPlan plan;
  plan.gpus = g;
  plan.usable_bytes = in.usable_bytes;
  if (!fits(kMinChunk, plan.usable_bytes)) {
    throw InputError("JoinOptions::gpu_memory_limit: " + std::to_string(plan.usable_bytes) +
                     " usable bytes per GPU cannot hold even a chunk of " + std::to_string(kMinChunk) +
                     " tuples of " + std::to_string(tuple_bytes) + " bytes (needs " +
                     std::to_string(device_bytes_for_chunk(kMinChunk, tuple_bytes, temp_bytes(kMinChunk))) +
                     " bytes)");
  }

  // The largest chunk that fits (binary search: the temp size need not be linear), no larger than
  // what one chunkset of the larger relation needs.
  const std::int64_t wanted = std::max<std::int64_t>(kMinChunk, ceil_div(std::max(in.r_size, in.s_size), g));
  std::int64_t lo = kMinChunk, hi = wanted;
  if (!fits(hi, plan.usable_bytes)) {
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (fits(mid, plan.usable_bytes) ? lo : hi) = mid;
    }
    hi = lo;
  }
  std::int64_t chunk = hi;

  // k is an int in the plan: a count beyond it must fail here, not wrap into a plan covering a sliver.
  const auto chunksets = [&](std::int64_t rows) {
    const std::int64_t k = ceil_div(rows, static_cast<std::int64_t>(g) * chunk);
    if (k > INT_MAX)
      throw InputError("JoinOptions::gpu_memory_limit: " + std::to_string(plan.usable_bytes) + " usable bytes per GPU would need " +
                       std::to_string(k) + " chunksets of " + std::to_string(chunk) + " tuples");
    return static_cast<int>(k);
  };
  plan.k_r = chunksets(in.r_size);
  plan.k_s = chunksets(in.s_size);
  // With k chunksets fixed, the even chunk is smaller: shrink it so that no buffer is oversized.
  const int k_max = std::max(plan.k_r, plan.k_s);
  if (k_max > 0) {
    chunk = std::max<std::int64_t>(
        {kMinChunk, ceil_div(in.r_size, static_cast<std::int64_t>(g) * std::max(plan.k_r, 1)),
         ceil_div(in.s_size, static_cast<std::int64_t>(g) * std::max(plan.k_s, 1))});
    chunk = std::min(chunk, hi);
  }
  plan.chunk = chunk;
  plan.chunk_capacity = padded(chunk);
  plan.sort_temp_bytes = temp_bytes(chunk);
  plan.device_bytes = device_bytes_for_chunk(chunk, tuple_bytes, plan.sort_temp_bytes);
  return plan;
}

}  // namespace mgjoin::sort
