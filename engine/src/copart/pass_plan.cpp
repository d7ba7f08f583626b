// plan_passes: the key ranges of the flow in passes and each pass's co-partitioned plan (pass_plan.hpp).
#include "engine/src/copart/pass_plan.hpp"

#include "engine/src/copart/plan_sizes.hpp"

#include <mgjoin/error.hpp>

#include <limits>
#include <string>
#include <string_view>

namespace mgjoin::copart {
namespace {

using plan_detail::gib;

constexpr std::uint64_t kHighestKey = std::numeric_limits<std::uint64_t>::max();

/// Pass q's plan: the co-partitioned flow for the keys of range q of `ranges`, planned from the samples'
/// part in that range (standing for its bound, so that the partitions are sized for the most it may
/// hold), over both whole relations. Payloads are carried: late payloads would replay the key pass.
CopartPlan plan_pass(const PartitionPlan& ranges, const PartitionSizes& sizes, int q, const KeySample& r_sample,
                     const KeySample& s_sample, const RelationView& r, const RelationView& s, int gpus, OutputMode output,
                     std::uint64_t device_bytes, const ScratchSizes& scratch) {
  const KeySample r_part = group_sample(r_sample, Side::R, ranges, q, sizes.bound[0][q]);
  const KeySample s_part = group_sample(s_sample, Side::S, ranges, q, sizes.bound[1][q]);
  CopartPlan plan = plan_copart(r_part, s_part, r, s, gpus, output, device_bytes, scratch, PayloadFlow::Carry);
  plan.partitions.lowest = q == 0 ? 0 : ranges.upper[q - 1] + 1;
  plan.partitions.highest = q + 1 == ranges.gpus ? kHighestKey : ranges.upper[q];
  return plan;
}

/// The most device bytes any GPU needs in `plan`.
std::uint64_t peak_of(const CopartPlan& plan) {
  std::uint64_t peak = 0;
  for (const GpuBudget& b : plan.budget) peak = std::max(peak, b.peak());
  return peak;
}

/// Plans `k` passes into `p`; false (with `why`) where a key spans two ranges or a pass does not fit.
bool shape_passes(PassPlan& p, int k, const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                  const RelationView& s, int gpus, OutputMode output, std::uint64_t device_bytes,
                  const ScratchSizes& scratch, std::string& why) {
  p.ranges = choose_plan(r_sample, s_sample, k);
  p.passes.clear();
  if (p.ranges.hot_count > 0) {
    why = "a key heavier than a pass's share would span two passes";
    return false;
  }
  const PartitionSizes sizes = estimate_sizes(p.ranges, r_sample, s_sample);
  for (int q = 0; q < k; ++q) {
    // Ranges past the largest key are empty: the passes before them take every key.
    if (q > 0 && p.ranges.upper[q - 1] == kHighestKey) break;
    CopartPlan plan = plan_pass(p.ranges, sizes, q, r_sample, s_sample, r, s, gpus, output, device_bytes, scratch);
    if (!plan.fits) {
      why = "pass " + std::to_string(q + 1) + " of " + std::to_string(k) + ": " + plan.reason;
      return false;
    }
    p.passes.push_back(std::move(plan));
  }
  spill_first_pass(p, r_sample, s_sample, r, s, output, scratch);
  return true;
}

}  // namespace

PassPlan plan_passes(const KeySample& r_sample, const KeySample& s_sample, const RelationView& r, const RelationView& s,
                     int gpus, OutputMode output, std::uint64_t device_bytes, const ScratchSizes& scratch, int passes) {
  MGJOIN_EXPECTS(passes == 0 || (passes >= 2 && passes <= kMaxPasses), "2 to 4 passes");
  PassPlan p;
  if (gpus < 2) {
    p.reason = "not in passes: one GPU copies a relation into place without partitioning it, so no pass could leave out "
               "the others' keys";
    return p;
  }
  if (gpus > kMaxGpus) {
    p.reason = "not in passes: the co-partitioned flow spans at most " + std::to_string(kMaxGpus) + " GPUs";
    return p;
  }
  std::string why;
  const int first = passes ? passes : 2, last = passes ? passes : kMaxPasses;
  for (int k = first; k <= last && !p.fits; ++k)
    p.fits = shape_passes(p, k, r_sample, s_sample, r, s, gpus, output, device_bytes, scratch, why);
  if (!p.fits) {
    p.passes.clear();
    p.reason = "not in passes: " + why;
    return p;
  }
  const CopartPlan* fullest = &p.passes[0];
  for (const CopartPlan& plan : p.passes) {
    p.pinned_bytes = std::max(p.pinned_bytes, pinned_bytes_needed(plan, output));
    if (peak_of(plan) > peak_of(*fullest)) fullest = &plan;
  }
  const char* x = p.spill_side == Side::R ? "R" : "S";
  const std::string reads = p.spill_rows ? std::string("the first reading R and S whole and spilling ") + x +
                                               "'s rows beyond its range to the host, the others reading " + x +
                                               " from there and " + (x[0] == 'R' ? "S" : "R") + " whole"
                                         : "each reading R and S whole";
  p.reason = "co-partitioned in " + std::to_string(p.count()) + " passes by key range, " + reads +
             " (the fullest pass needs " + gib(peak_of(*fullest)) + "): " + fullest->reason;
  return p;
}

PassBytes pass_bytes(const PassPlan& plan, std::uint64_t r_bytes, std::uint64_t s_bytes) {
  const std::uint64_t k = static_cast<std::uint64_t>(plan.count());
  if (!plan.spill_rows) return {k * (r_bytes + s_bytes), 0};
  const bool r_spills = plan.spill_side == Side::R;
  const std::uint64_t x = r_spills ? r_bytes : s_bytes, y = r_spills ? s_bytes : r_bytes;
  // X's spill holds the ranges after the first, about (k - 1)/k of X, read by each of the k - 1 passes.
  const std::uint64_t spilled = (k - 1) * x / k;
  return {k * y + x + (k - 1) * spilled, spilled};
}

void spill_first_pass(PassPlan& p, const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                      const RelationView& s, OutputMode output, const ScratchSizes& scratch) {
  CopartPlan& first = p.passes.front();
  if (p.count() < 2 || !first.streamed || first.partitions.spill_side >= 0 || first.partitions.gpus >= kMaxGpus) return;
  const Side x = first.probe == Side::S ? Side::R : Side::S;
  const PartitionSizes sizes = estimate_sizes(p.ranges, r_sample, s_sample);
  std::int64_t rows = 0;
  for (int q = 1; q < p.ranges.gpus; ++q) rows += sizes.bound[static_cast<int>(x)][q];
  if (rows == 0) return;  // nothing of X beyond the first range
  const CopartPlan without = first;
  PartitionPlan& parts = first.partitions;
  const int g = parts.gpus;
  parts.upper[g - 1] = parts.highest;  // the last GPU's keys end where the range does: the spill takes the rest
  parts.upper[g] = kHighestKey;
  parts.gpus = g + 1;
  parts.spill_side = static_cast<int>(x);
  resize_buffers(first, r, s, output, scratch);
  if (!first.fits) {
    first = without;
    return;
  }
  p.spill_side = x;
  p.spill_rows = rows;
  p.spill_bytes = static_cast<std::uint64_t>(rows) * plan_detail::width(x == Side::R ? first.r : first.s);
}

int parse_passes(const char* text) {
  if (!text || !*text || std::string_view(text) == "auto") return 0;
  if (std::string_view(text) == "off") return -1;
  const std::string_view t(text);
  const bool one_digit = t.size() == 1 && t[0] >= '2' && t[0] <= '0' + kMaxPasses;
  MGJOIN_INPUT_EXPECTS(one_digit, std::string("MGJOIN_COPART_PASSES '") + text + "': expected auto, off, or a count of passes from 2 to " +
                                      std::to_string(kMaxPasses));
  return t[0] - '0';
}

}  // namespace mgjoin::copart
