// plan_copart: splitters, buffer sizes and the in-core decision of the co-partitioned flow, from sizes
// and samples alone (no GPU needed: CUB's scratch sizes come in through ScratchSizes).
#include "engine/src/copart/copart_join.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cstdio>

namespace mgjoin::copart {
namespace {

/// Chunks per GPU per relation the transfer aims at, so that H2D, partitioning and NVLink overlap.
constexpr std::int64_t kRoundsWanted = 8;
constexpr std::int64_t kMinChunkRows = std::int64_t{1} << 20;
constexpr std::int64_t kMaxChunkRows = std::int64_t{1} << 25;
/// Output rows per window: 4 Mi rows of 24 bytes is ~100 MB, ~2 ms of D2H.
constexpr std::uint64_t kWindowRows = std::uint64_t{1} << 22;
/// Room kept on each GPU for counters, segment bounds and allocation alignment.
constexpr std::uint64_t kSlackBytes = 64ull << 20;

std::uint64_t u64(std::int64_t v) { return static_cast<std::uint64_t>(std::max<std::int64_t>(v, 0)); }

int width(const Widths& w) { return w.key_bytes + w.payload_bytes; }

Widths moved_widths(const RelationView& rel, OutputMode output) {
  Widths w;
  w.key_bytes = static_cast<int>(dtype_size(rel.key.type));
  w.payload_bytes = output == OutputMode::Materialize && rel.payload ? static_cast<int>(dtype_size(rel.payload->type)) : 0;
  return w;
}

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

GpuBudget budget_for(const CopartPlan& p, int d, int gpus, OutputMode output, const ScratchSizes& scratch) {
  GpuBudget b;
  const std::uint64_t rows[2] = {u64(p.sizes.bound[0][d]), u64(p.sizes.bound[1][d])};
  const Widths* w[2] = {&p.r, &p.s};
  b.partitions = rows[0] * width(p.r) + rows[1] * width(p.s);
  // The sort's second buffer serves R, then S; each sort copies its result back when it ends there.
  std::uint64_t sort = 0;
  for (int side = 0; side < 2; ++side)
    sort = std::max<std::uint64_t>(sort, rows[side] * width(*w[side]) +
                                             scratch.sort(static_cast<std::int64_t>(rows[side]), w[side]->key_bytes,
                                                          w[side]->payload_bytes));
  b.transfer = sort;
  if (gpus > 1) {
    const auto chunk = u64(p.chunk_rows);
    const std::uint64_t in = chunk * std::max(width(p.r), width(p.s));
    const std::uint64_t out = chunk * std::max<std::uint64_t>(p.sizes.max_copies[0] * width(p.r),
                                                              p.sizes.max_copies[1] * width(p.s));
    b.transfer += 2 * (in + out + scratch.partition(p.chunk_rows, gpus));
  }
  if (output == OutputMode::Materialize) {
    const std::uint64_t ny = rows[static_cast<int>(p.probe)];
    const std::uint64_t out_width = p.r.key_bytes + p.r.payload_bytes + p.s.payload_bytes;
    b.output = 3 * (ny + 1) * 8 + scratch.scan(ny + 1) + 2 * p.window_rows * out_width;
  }
  b.partitions += kSlackBytes;
  return b;
}

}  // namespace

CopartPlan plan_copart(const RelationView& r, const RelationView& s, int gpus, OutputMode output,
                       std::uint64_t device_bytes, const ScratchSizes& scratch) {
  return plan_copart(sample_keys(r.key), sample_keys(s.key), r, s, gpus, output, device_bytes, scratch);
}

CopartPlan plan_copart(const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                       const RelationView& s, int gpus, OutputMode output, std::uint64_t device_bytes,
                       const ScratchSizes& scratch) {
  MGJOIN_EXPECTS(gpus >= 1, "the co-partitioned flow needs a GPU");
  CopartPlan p;
  p.device_bytes = device_bytes;
  if (gpus > kMaxGpus) {
    p.reason = "paper flow: the co-partitioned flow spans at most " + std::to_string(kMaxGpus) + " GPUs";
    return p;
  }
  p.partitions = choose_plan(r_sample, s_sample, gpus);
  p.sizes = estimate_sizes(p.partitions, r_sample, s_sample);
  p.r = moved_widths(r, output);
  p.s = moved_widths(s, output);
  p.probe = r.size() < s.size() ? Side::R : Side::S;
  const std::int64_t larger = std::max(r.size(), s.size());
  p.chunk_rows = std::clamp((larger + gpus * kRoundsWanted - 1) / (gpus * kRoundsWanted), kMinChunkRows, kMaxChunkRows);
  p.window_rows = output == OutputMode::Materialize ? kWindowRows : 0;
  std::uint64_t peak = 0;
  int tightest = 0;
  for (int d = 0; d < gpus; ++d) {
    p.budget.push_back(budget_for(p, d, gpus, output, scratch));
    if (p.budget.back().peak() > peak) {
      peak = p.budget.back().peak();
      tightest = d;
    }
  }
  p.fits = peak <= device_bytes;
  const GpuBudget& b = p.budget[tightest];
  p.reason = std::string(p.fits ? "co-partitioned: in core" : "paper flow: not in core") + ", GPU " +
             std::to_string(tightest) + " of " + std::to_string(gpus) + " needs " + gib(peak) + " (partitions " +
             gib(b.partitions) + ", transfer " + gib(b.transfer) + ", output " + gib(b.output) + ") of its " +
             gib(device_bytes);
  return p;
}

}  // namespace mgjoin::copart
