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
/// Output rows per window of one column: 8 Mi rows of 8 bytes is 64 MB, ~1.2 ms of D2H (a copy's fixed
/// cost is ~1% of it).
constexpr std::uint64_t kWindowRows = std::uint64_t{1} << 23;
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

/// Rows of a relation of `n` rows that land on one GPU over the whole transfer: a fixed stride of
/// chunk_rows × the most copies of a tuple per round (each chunk's gather map starts at its stride).
std::uint64_t landed_rows(const CopartPlan& p, int side, std::int64_t n, int gpus) {
  const auto per_round = static_cast<std::uint64_t>(p.chunk_rows) * gpus;
  const std::uint64_t rounds = (u64(n) + per_round - 1) / per_round;
  return rounds * u64(p.chunk_rows) * p.sizes.max_copies[side];
}

GpuBudget budget_for(const CopartPlan& p, int d, int gpus, OutputMode output, const ScratchSizes& scratch) {
  GpuBudget b;
  const std::uint64_t rows[2] = {u64(p.sizes.bound[0][d]), u64(p.sizes.bound[1][d])};
  const Widths* w[2] = {&p.r, &p.s};
  // The sort's second buffer serves R, then S; each sort copies its result back when it ends there.
  std::uint64_t sort = 0;
  for (int side = 0; side < 2; ++side) {
    const int sorted = p.sorted_payload_bytes(static_cast<Side>(side));
    // Late payloads sit in arrival order beside the (key, position) pairs that are sorted.
    const int beside = p.late ? w[side]->payload_bytes : 0;
    b.partitions += rows[side] * (w[side]->key_bytes + sorted + beside);
    sort = std::max<std::uint64_t>(sort, rows[side] * (w[side]->key_bytes + sorted) +
                                             scratch.sort(static_cast<std::int64_t>(rows[side]), w[side]->key_bytes, sorted));
  }
  b.transfer = sort;
  if (gpus > 1) {
    const auto chunk = u64(p.chunk_rows);
    const std::uint64_t in = chunk * std::max(width(p.r), width(p.s));
    const std::uint64_t out = chunk * std::max<std::uint64_t>(p.sizes.max_copies[0] * width(p.r),
                                                              p.sizes.max_copies[1] * width(p.s));
    const std::uint64_t slots = 2 * (in + out + scratch.partition(p.chunk_rows, gpus));
    if (p.late) {
      // The payloads cross after the sorts, through the same slots: they stay, with each chunk's gather map.
      b.held = slots;
      for (int side = 0; side < 2; ++side)
        b.held += 4 * p.map_rows[side];
    } else {
      b.transfer += slots;
    }
  }
  if (output == OutputMode::Materialize) {
    const std::uint64_t ny = rows[static_cast<int>(p.probe)];
    // The output goes out column by column, a window at a time.
    const std::uint64_t widest = std::max({p.r.key_bytes, p.r.payload_bytes, p.s.payload_bytes});
    b.output = 3 * (ny + 1) * 8 + scratch.scan(ny + 1) + 2 * p.window_rows * widest;
  }
  b.partitions += kSlackBytes;
  return b;
}

/// Sizes every GPU's buffers for the plan; returns the GPU that needs the most.
int size_buffers(CopartPlan& p, int gpus, const std::int64_t (&n)[2], OutputMode output, const ScratchSizes& scratch) {
  for (int side = 0; side < 2; ++side) {
    const bool mapped = p.late && gpus > 1 && (side == 0 ? p.r : p.s).payload_bytes;
    p.map_rows[side] = mapped ? landed_rows(p, side, n[side], gpus) : 0;
  }
  p.budget.clear();
  int tightest = 0;
  for (int d = 0; d < gpus; ++d) {
    p.budget.push_back(budget_for(p, d, gpus, output, scratch));
    if (p.budget.back().peak() > p.budget[tightest].peak()) tightest = d;
  }
  return tightest;
}

}  // namespace

CopartPlan plan_copart(const RelationView& r, const RelationView& s, int gpus, OutputMode output,
                       std::uint64_t device_bytes, const ScratchSizes& scratch, PayloadFlow payloads) {
  return plan_copart(sample_keys(r.key), sample_keys(s.key), r, s, gpus, output, device_bytes, scratch, payloads);
}

CopartPlan plan_copart(const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                       const RelationView& s, int gpus, OutputMode output, std::uint64_t device_bytes,
                       const ScratchSizes& scratch, PayloadFlow payloads) {
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
  const std::int64_t n[2] = {r.size(), s.size()};
  // Late payloads need positions below 2^32 per partition and a payload to be late.
  const bool late_possible = output == OutputMode::Materialize && (p.r.payload_bytes || p.s.payload_bytes) &&
                             *std::max_element(p.sizes.bound[0].begin(), p.sizes.bound[0].end()) < (std::int64_t{1} << 32) &&
                             *std::max_element(p.sizes.bound[1].begin(), p.sizes.bound[1].end()) < (std::int64_t{1} << 32);
  // Late when asked for or when auto and it fits; carried otherwise (late asked for but impossible too).
  const bool try_late = late_possible && payloads != PayloadFlow::Carry;
  int tightest = 0;
  if (try_late) {
    p.late = true;
    tightest = size_buffers(p, gpus, n, output, scratch);
    p.fits = p.budget[tightest].peak() <= device_bytes;
  }
  if (!try_late || (!p.fits && payloads == PayloadFlow::Auto)) {
    p.late = false;
    tightest = size_buffers(p, gpus, n, output, scratch);
    p.fits = p.budget[tightest].peak() <= device_bytes;
  }
  const GpuBudget& b = p.budget[tightest];
  const char* payload_flow = output != OutputMode::Materialize ? "" : p.late ? ", late payloads" : ", payloads carried";
  p.reason = std::string(p.fits ? "co-partitioned: in core" : "paper flow: not in core") + payload_flow + ", GPU " +
             std::to_string(tightest) + " of " + std::to_string(gpus) + " needs " + gib(b.peak()) + " (partitions " +
             gib(b.partitions) + ", held " + gib(b.held) + ", transfer " + gib(b.transfer) + ", output " +
             gib(b.output) + ") of its " + gib(device_bytes);
  if (payloads == PayloadFlow::Late && !late_possible)
    p.reason += " (late payloads: none to move, or a partition of 2^32 rows or more)";
  return p;
}

}  // namespace mgjoin::copart
