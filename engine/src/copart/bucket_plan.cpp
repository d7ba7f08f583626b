// plan_buckets: the bucketed variant's groups (bucket_plan.hpp), from sizes and samples alone.
#include "engine/src/copart/bucket_plan.hpp"

#include "engine/src/copart/plan_sizes.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace mgjoin::copart {
namespace {

using namespace plan_detail;  // the planners' shared sizes (plan_sizes.hpp)

/// A relation of `rows` rows with r's columns and no data: what the planner sees of a bucket group.
RelationView sized_like(const RelationView& r, std::int64_t rows) {
  RelationView v{{nullptr, rows, r.key.type}, std::nullopt};
  if (r.payload) v.payload = MutableColumnView{nullptr, rows, r.payload->type};
  return v;
}

/// Pass 1 of the bucketed flow on one GPU: two chunk slots over the groups.
std::uint64_t pass1_bytes(const BucketPlan& p, std::int64_t chunk, const ScratchSizes& scratch) {
  return two_slots_bytes(chunk, p.r, p.s, p.sizes.max_copies, p.groups.gpus, scratch) + kSlackBytes;
}

/// The destinations of a bucket plan: `host` host groups sharing what the resident groups leave, and
/// `resident` resident groups (one per GPU, or none) sharing `share` of all tuples.
struct GroupShape {
  int host = 2;
  int resident = 0;
  double share = 0;
  int destinations() const { return host + resident; }
  std::vector<double> shares() const {
    if (resident == 0) return {};  // equal parts
    std::vector<double> w(static_cast<std::size_t>(host), (1 - share) / host);
    w.insert(w.end(), static_cast<std::size_t>(resident), share / resident);
    return w;
  }
};

/// Cuts the key space as `shape` says; true when each host group's sample fits the co-partitioned
/// flow. `tightest` gets the plan of the host group that needs the most (or the first that does not fit).
bool shape_groups(BucketPlan& p, const GroupShape& shape, const KeySample& r_sample, const KeySample& s_sample,
                  const RelationView& r, const RelationView& s, int gpus, OutputMode output, std::uint64_t device_bytes,
                  const ScratchSizes& scratch, PayloadFlow payloads, bool in_core_only, CopartPlan& tightest) {
  const std::vector<double> shares = shape.shares();
  p.groups = choose_plan(r_sample, s_sample, shape.destinations(), {}, shares);
  p.resident = shape.resident;
  p.resident_bytes = 0;  // (residents_fit sets it for these groups)
  p.sizes = estimate_sizes(p.groups, r_sample, s_sample);
  std::uint64_t most = 0;
  for (int g = 0; g < shape.host; ++g) {
    const std::int64_t rows[2] = {p.sizes.bound[0][g], p.sizes.bound[1][g]};
    CopartPlan plan = plan_copart(group_sample(r_sample, Side::R, p.groups, g, rows[0]),
                                  group_sample(s_sample, Side::S, p.groups, g, rows[1]), sized_like(r, rows[0]),
                                  sized_like(s, rows[1]), gpus, output, device_bytes, scratch, payloads);
    std::uint64_t peak = 0;
    for (const GpuBudget& b : plan.budget) peak = std::max(peak, b.peak());
    const bool fits = plan.fits && !(in_core_only && plan.streamed);
    if (!fits || peak >= most) {
      most = peak;
      tightest = std::move(plan);
      if (!fits) return false;
    }
  }
  return true;
}

/// Bytes of resident group q on its GPU: both sides' bounds.
std::uint64_t resident_group_bytes(const BucketPlan& p, int q) {
  return u64(p.sizes.bound[0][q]) * width(p.r) + u64(p.sizes.bound[1][q]) * width(p.s);
}

/// Room kept beside a resident group for its four buffers' alignment.
constexpr std::uint64_t kResidentAlignBytes = 1ull << 20;

/// Whether every resident group of `p` fits its GPU beside pass 1's smallest chunk slots, and then the
/// one-GPU flow in core (payloads carried: its inputs are on the GPU already) in what it leaves. Sets
/// p.resident_bytes; `pinned` gets the most pinned staging one resident join takes; `why` says what
/// does not fit.
bool residents_fit(BucketPlan& p, const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                   const RelationView& s, OutputMode output, std::uint64_t device_bytes, const ScratchSizes& scratch,
                   std::uint64_t& pinned, std::string& why) {
  p.resident_bytes = 0;
  pinned = 0;
  for (int q = p.host_groups(); q < p.groups.gpus; ++q) {
    const std::uint64_t bytes = resident_group_bytes(p, q) + kResidentAlignBytes;
    p.resident_bytes = std::max(p.resident_bytes, bytes);
    if (bytes + pass1_bytes(p, kMinPass1ChunkRows, scratch) > device_bytes) {
      why = "a resident group of " + gib(bytes) + " leaves pass 1 too little of " + gib(device_bytes);
      return false;
    }
    const std::int64_t rows[2] = {p.sizes.bound[0][q], p.sizes.bound[1][q]};
    const CopartPlan plan = plan_copart(group_sample(r_sample, Side::R, p.groups, q, rows[0]),
                                        group_sample(s_sample, Side::S, p.groups, q, rows[1]), sized_like(r, rows[0]),
                                        sized_like(s, rows[1]), 1, output, device_bytes - bytes, scratch, PayloadFlow::Carry);
    // In core only: a streamed join's rounds would hold the host up GPU after GPU, where the in-core
    // joins of all GPUs run at once.
    if (!plan.fits || plan.streamed) {
      why = "a resident group of " + gib(bytes) + " is not joined in core beside itself: " + plan.reason;
      return false;
    }
    pinned = std::max(pinned, pinned_bytes_needed(plan, output));
  }
  return true;
}

/// Resident shares worth trying for `residency`, the largest first, then none (unless one is forced):
/// each GPU's group at 35% down to 5% of its memory (beside it the one-GPU flow needs about twice as
/// much), as a share of all tuples' bytes (at most 90%, at least 2%).
std::vector<double> resident_shares(const Residency& residency, const BucketPlan& p, const RelationView& r,
                                    const RelationView& s, int gpus, std::uint64_t device_bytes) {
  if (residency.share > 0) return {residency.share};
  std::vector<double> shares;
  const double all = static_cast<double>(u64(r.size()) * width(p.r) + u64(s.size()) * width(p.s));
  if (residency.share < 0 && gpus < kMaxBucketGroups && all > 0)
    for (const double part : {0.35, 0.30, 0.25, 0.20, 0.15, 0.10, 0.05}) {
      const double share = std::min(0.9, gpus * part * static_cast<double>(device_bytes) / all);
      if (share >= 0.02 && (shares.empty() || share < shares.back())) shares.push_back(share);
    }
  shares.push_back(0);
  return shares;
}

/// What plan_buckets() learns on its way to a plan's shape: the tightest group's plan, and of the
/// resident groups the pinned staging their joins take and why they do not fit.
struct Shaping {
  CopartPlan tightest;
  std::uint64_t resident_pinned = 0;
  std::string resident_why;
};

/// Cuts the groups: for each resident share worth trying (the largest first), the fewest host groups
/// that fit in core in half the memory (overlapped), else the fewest that fit in all of it.
void shape_plan(BucketPlan& p, const KeySample& r_sample, const KeySample& s_sample, const RelationView& r,
                const RelationView& s, int gpus, OutputMode output, std::uint64_t device_bytes, const ScratchSizes& scratch,
                PayloadFlow payloads, int groups, Exchange exchange, const Residency& residency, Shaping& sh) {
  for (const double share : resident_shares(residency, p, r, s, gpus, device_bytes)) {
    const int resident = share > 0 ? gpus : 0;
    if (resident && (groups ? groups : 1) + resident > kMaxBucketGroups) {  // the partition kernels' destinations
      sh.resident_why = std::to_string(resident) + " resident groups beside " + std::to_string(groups ? groups : 1) +
                        " host group(s) pass the " + std::to_string(kMaxBucketGroups) + " groups a plan cuts";
      continue;
    }
    // The resident groups' bounds hardly depend on how the rest is cut: try them with one host group
    // first (cheap), then again with the host groups chosen.
    if (resident) {
      shape_groups(p, {1, resident, share}, r_sample, s_sample, r, s, gpus, output, device_bytes, scratch, payloads, false,
                   sh.tightest);
      if (!residents_fit(p, r_sample, s_sample, r, s, output, device_bytes, scratch, sh.resident_pinned, sh.resident_why))
        continue;
    }
    // One host group is the in-core flow, which did not fit, unless groups are resident.
    const int first = groups ? groups : resident ? 1 : 2;
    const int last = groups ? groups : kMaxBucketGroups - resident;
    // Overlapped groups take about twice as many for the same memory, but only the first group's sort
    // and join are not hidden behind a transfer. The same bytes cross PCIe either way, but for a hot
    // key's copied side, which crosses once per group it spans (a few rows of a hot key's lighter side).
    p.overlap = false;
    for (int q = first; q <= last && !p.overlap && overlap_possible(exchange, gpus); ++q)
      p.overlap = shape_groups(p, {q, resident, share}, r_sample, s_sample, r, s, gpus, output, overlap_half(device_bytes),
                               scratch, payloads, /*in_core_only=*/true, sh.tightest);
    p.fits = p.overlap;
    for (int q = first; q <= last && !p.fits; ++q)
      p.fits = shape_groups(p, {q, resident, share}, r_sample, s_sample, r, s, gpus, output, device_bytes, scratch, payloads,
                            false, sh.tightest);
    if (resident && p.fits &&
        !residents_fit(p, r_sample, s_sample, r, s, output, device_bytes, scratch, sh.resident_pinned, sh.resident_why))
      p.fits = false;
    if (p.fits || residency.share > 0) break;
  }
}

/// The buckets' bytes, pass 1's chunks, the pinned staging and the reason, for the shape chosen.
void size_plan(BucketPlan& p, const RelationView& r, const RelationView& s, int gpus, OutputMode output,
               std::uint64_t device_bytes, const ScratchSizes& scratch, const Residency& residency, const Shaping& sh) {
  for (int side = 0; side < 2; ++side)
    for (int g = 0; g < p.host_groups(); ++g) {
      p.host_bytes += u64(p.sizes.bound[side][g]) * width(side == 0 ? p.r : p.s);
      p.estimated_bytes += u64(p.sizes.estimate[side][g]) * width(side == 0 ? p.r : p.s);
    }
  const std::int64_t larger = std::max(r.size(), s.size());
  p.chunk_rows = std::clamp((larger + gpus * kRoundsWanted - 1) / (gpus * kRoundsWanted), kMinChunkRows, kMaxChunkRows);
  // Pass 1 only partitions: smaller chunks cost little there, where the memory is tight (beside the
  // resident groups).
  const std::uint64_t beside = device_bytes - std::min(device_bytes, p.resident_bytes);
  while (p.chunk_rows > kMinPass1ChunkRows && pass1_bytes(p, p.chunk_rows, scratch) > beside) p.chunk_rows /= 2;
  p.pass1_device_bytes = pass1_bytes(p, p.chunk_rows, scratch);
  if (p.pass1_device_bytes > beside) p.fits = false;
  // Pass 1 reads two slots' segment sizes; each group's flow its own (the same for every group), two
  // groups at once when they overlap (each in a block of its own, aligned); a resident join its own.
  p.group_pinned_bytes = pinned_bytes_needed(sh.tightest, output);
  p.pinned_bytes = std::max<std::uint64_t>({2 * 4096, p.overlap ? 2 * (p.group_pinned_bytes + 64) : p.group_pinned_bytes,
                                            p.resident ? sh.resident_pinned : 0});
  std::string head = std::to_string(p.host_groups()) + " bucket group(s) in " + gib(p.host_bytes) + " of pinned host buckets" +
                     (p.overlap ? ", two on the GPUs at once" : "");
  if (p.resident) head += ", and " + std::to_string(p.resident) + " resident on the GPUs (" + gib(p.resident_bytes) + " on the fullest)";
  if (p.fits)
    p.reason = "co-partitioned, bucketed: " + head + ", the tightest group " + sh.tightest.reason;
  else if (residency.share > 0 && !sh.resident_why.empty())
    p.reason = "not bucketed with resident groups: " + sh.resident_why;
  else if (p.pass1_device_bytes > beside)
    p.reason = "not bucketed: pass 1's chunk slots need " + gib(p.pass1_device_bytes) + " per GPU of its " + gib(beside);
  else
    p.reason = "not bucketed either: even " + head + " leave a group that does not fit (" + sh.tightest.reason + ")";
}

}  // namespace

BucketPlan plan_buckets(const KeySample& r_sample, const KeySample& s_sample, const RelationView& r, const RelationView& s,
                        int gpus, OutputMode output, std::uint64_t device_bytes, const ScratchSizes& scratch,
                        PayloadFlow payloads, int groups, Exchange exchange, Residency residency) {
  MGJOIN_EXPECTS(gpus >= 1 && gpus <= kMaxGpus, "the bucketed flow takes 1 to 16 GPUs");
  MGJOIN_EXPECTS(groups == 0 || (groups >= 1 && groups <= kMaxBucketGroups), "1 to 16 bucket groups");
  MGJOIN_EXPECTS(residency.share < 1, "a resident share below 1");
  BucketPlan p;
  p.device_bytes = device_bytes;
  p.r = moved_widths(r, output);
  p.s = moved_widths(s, output);
  Shaping sh;
  shape_plan(p, r_sample, s_sample, r, s, gpus, output, device_bytes, scratch, payloads, groups, exchange, residency, sh);
  if (p.sizes.bound[0].size() != static_cast<std::size_t>(p.groups.gpus)) {  // no shape was possible (forced)
    p.fits = false;
    p.reason = "not bucketed with resident groups: " + sh.resident_why;
    return p;
  }
  size_plan(p, r, s, gpus, output, device_bytes, scratch, residency, sh);
  return p;
}

Residency parse_residency(const char* text) {
  if (!text || !*text || std::string_view(text) == "off") return {0};
  if (std::string_view(text) == "auto") return {};
  char* end = nullptr;
  const double share = std::strtod(text, &end);
  MGJOIN_INPUT_EXPECTS(end != text && *end == '\0' && share >= 0 && share < 1,
                       std::string("MGJOIN_BUCKET_RESIDENT '") + text + "': expected auto, off, or a share in [0, 1) such as 0.3");
  return {share};
}

}  // namespace mgjoin::copart
