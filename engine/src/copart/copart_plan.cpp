// plan_copart: splitters, buffer sizes and the in-core or streamed decision of the co-partitioned flow,
// from sizes and samples alone (no GPU needed: CUB's scratch sizes come in through ScratchSizes).
#include "engine/src/copart/copart_plan.hpp"

#include "engine/src/copart/plan_sizes.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace mgjoin::copart {
namespace {

using namespace plan_detail;  // the planners' shared sizes (plan_sizes.hpp)

/// Output rows per window of one column: 8 Mi rows of 8 bytes is 64 MB, ~1.2 ms of D2H (a copy's fixed
/// cost is ~1% of it).
constexpr std::uint64_t kWindowRows = std::uint64_t{1} << 23;
/// Streamed: the largest chunk of Y per GPU per round. Every round rescans X's runs (the merge-path join
/// reads both sides), so rounds should be few: at 2^27 rows a round of 8-byte keys is 1 GiB per GPU.
/// (2^28 on one H100, B scale 2 materialized: 2.29 s against 2.06 s; fewer rounds, but each one's
/// output waits longer for its sort and joins.)
constexpr std::int64_t kMaxStreamChunkRows = std::int64_t{1} << 27;
/// Streamed: most sort runs per resident partition (each run is one merge-path pass per round).
constexpr int kMaxResidentRuns = 16;
/// Streamed: most runs taken so that Y's landings fit beside X's run sort (more runs, more passes).
constexpr int kMaxRunsBesideStream = 4;
/// Streamed on one GPU, beside X's run sort: the fewest runs. X's last run is sorted once it is in,
/// before the first round's join: counting, two runs (the first sorts while the second crosses);
/// materializing, four, since PCIe's copy out idles until that sort ends (one H100, B scale 2: 2 runs
/// 1.77 s, 4 runs 1.73 s, 8 runs 1.87 s, the extra joins of each round outweighing the shorter wait).
int fewest_runs_beside_stream(int gpus, OutputMode output) {
  if (gpus > 1) return 1;
  return output == OutputMode::Materialize ? 4 : 2;
}
/// Rows of a relation of `n` rows that land on one GPU over the whole transfer: a fixed stride of
/// chunk_rows × the most copies of a tuple per round (each chunk's gather map starts at its stride).
std::uint64_t landed_rows(const CopartPlan& p, int side, std::int64_t n, int gpus) {
  const auto per_round = static_cast<std::uint64_t>(p.chunk_rows) * gpus;
  const std::uint64_t rounds = (u64(n) + per_round - 1) / per_round;
  return rounds * u64(p.chunk_rows) * p.sizes.max_copies[side];
}

/// Several GPUs: the in-core and streamed flows' chunk slots, partitioned over the plan's destinations
/// (its GPUs, and a pass's spill).
std::uint64_t slot_bytes(const CopartPlan& p, const ScratchSizes& scratch) {
  return two_slots_bytes(p.chunk_rows, p.r, p.s, p.sizes.max_copies, p.partitions.gpus, scratch);
}

/// Materialize: match arrays and their scan for `ny` probe rows.
std::uint64_t match_arrays_bytes(std::uint64_t ny, const ScratchSizes& scratch) {
  return 3 * (ny + 1) * 8 + scratch.scan(ny + 1);
}

/// Materialize: `sets` sets of match arrays for `ny` probe rows, and two output windows (the output
/// goes out column by column, a window at a time).
std::uint64_t output_bytes(const CopartPlan& p, std::uint64_t ny, const ScratchSizes& scratch, int sets = 1) {
  const std::uint64_t widest = std::max({p.r.key_bytes, p.r.payload_bytes, p.s.payload_bytes});
  return sets * match_arrays_bytes(ny, scratch) + 2 * p.window_rows * widest;
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
    const std::uint64_t slots = slot_bytes(p, scratch);
    if (p.late) {
      // The payloads cross after the sorts, through the same slots: they stay, with each chunk's gather map.
      b.held = slots;
      for (int side = 0; side < 2; ++side)
        b.held += 4 * p.map_rows[side];
    } else {
      b.transfer += slots;
    }
  }
  if (output == OutputMode::Materialize) b.output = output_bytes(p, rows[static_cast<int>(p.probe)], scratch);
  b.partitions += kSlackBytes;
  return b;
}

/// The streamed variant's buffers on GPU d (copart_plan.hpp: GpuBudget's fields in that variant).
GpuBudget streamed_budget_for(const CopartPlan& p, int d, int gpus, OutputMode output, const ScratchSizes& scratch) {
  GpuBudget b;
  const int y = static_cast<int>(p.probe), x = 1 - y;
  const Widths* w[2] = {&p.r, &p.s};
  const std::uint64_t rows_x = u64(p.sizes.bound[x][d]);
  const std::uint64_t run_rows = (rows_x + p.resident_runs - 1) / p.resident_runs;
  b.partitions = rows_x * width(*w[x]) + kSlackBytes;
  b.transfer = run_rows * width(*w[x]) + scratch.sort(static_cast<std::int64_t>(run_rows), w[x]->key_bytes, w[x]->payload_bytes);
  if (gpus > 1) b.held = slot_bytes(p, scratch);
  // kLandings landings (the next rounds arriving while one is joined), the sort's second buffer and
  // scratch; two sets of match arrays (a round's windows are written from one while the next round
  // joins into the other).
  const auto landing = u64(p.landing_rows);
  b.output = (kLandings + 1) * landing * width(*w[y]) + scratch.sort(p.landing_rows, w[y]->key_bytes, w[y]->payload_bytes);
  if (output == OutputMode::Materialize) b.output += output_bytes(p, landing, scratch, 2);
  b.together = p.stream_beside_sort;
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
    p.budget.push_back(p.streamed ? streamed_budget_for(p, d, gpus, output, scratch) : budget_for(p, d, gpus, output, scratch));
    if (p.budget.back().peak() > p.budget[tightest].peak()) tightest = d;
  }
  return tightest;
}

std::string budget_text(const GpuBudget& b, int gpu, int gpus, std::uint64_t device_bytes, bool streamed) {
  const char* names[4] = {"partitions", "held", "transfer", "output"};
  if (streamed) names[0] = "resident", names[1] = "chunk slots", names[2] = "run sort", names[3] = "stream";
  return "GPU " + std::to_string(gpu) + " of " + std::to_string(gpus) + " needs " + gib(b.peak()) + " (" + names[0] + " " +
         gib(b.partitions) + ", " + names[1] + " " + gib(b.held) + ", " + names[2] + " " + gib(b.transfer) + ", " +
         names[3] + " " + gib(b.output) + ") of its " + gib(device_bytes);
}

/// Shapes `p` as the streamed variant with the given chunk, run count and landings (beside X's sort or
/// in its place); returns the tightest GPU.
int shape_streamed(CopartPlan& p, std::int64_t chunk, int runs, const std::int64_t (&n)[2], OutputMode output,
                   const ScratchSizes& scratch, bool beside_sort = false) {
  const int gpus = p.partitions.gpus;
  p.streamed = true;
  p.late = false;
  p.map_rows = {};
  p.probe = n[0] <= n[1] ? Side::S : Side::R;  // the larger relation streams
  p.chunk_rows = chunk;
  p.resident_runs = runs;
  p.stream_beside_sort = beside_sort;
  p.landing_rows = chunk * (gpus > 1 ? gpus * p.sizes.max_copies[static_cast<int>(p.probe)] : 1);
  const int tightest = size_buffers(p, gpus, n, output, scratch);
  p.fits = p.budget[tightest].peak() <= p.device_bytes;
  return tightest;
}

/// A streamed plan that fits, reshaped (same chunk) so that Y's landings sit beside X's run sort, where
/// that fits with at most kMaxRunsBesideStream runs: Y then starts crossing once X is in, not once it is
/// sorted. One GPU also takes at least fewest_runs_beside_stream() runs, so that its first runs sort
/// while the next cross (several GPUs sort once everything has arrived). More runs only shrink the run
/// sort's buffers, so when that many do not fit, fewer would not either. Returns the tightest GPU; `p`
/// unchanged when no such shape fits.
int prefer_stream_beside_sort(CopartPlan& p, const std::int64_t (&n)[2], OutputMode output, const ScratchSizes& scratch,
                              int tightest) {
  const CopartPlan found = p;
  const int fewest = fewest_runs_beside_stream(p.partitions.gpus, output);
  for (int runs = std::max(p.resident_runs, fewest); runs <= kMaxRunsBesideStream; runs *= 2) {
    const int t = shape_streamed(p, p.chunk_rows, runs, n, output, scratch, /*beside_sort=*/true);
    if (p.fits) return t;
  }
  p = found;
  return tightest;
}

/// The streamed variant for a plan that is not in core: the smaller relation resident, the larger one
/// streamed with the largest chunks (fewest rescans of the resident runs) and fewest runs that fit.
/// Payloads are carried (late payloads would replay a stream). Leaves `p` streamed, fitting or not.
void plan_streamed(CopartPlan& p, int gpus, const std::int64_t (&n)[2], OutputMode output, const ScratchSizes& scratch) {
  const std::int64_t larger = std::max(n[0], n[1]);
  const std::int64_t wanted = (larger + gpus * kRoundsWanted - 1) / (gpus * kRoundsWanted);
  int tightest = 0;
  for (std::int64_t chunk = std::clamp(wanted, kMinChunkRows, kMaxStreamChunkRows);; chunk = std::max(chunk / 2, kMinChunkRows)) {
    for (int runs = 1; runs <= kMaxResidentRuns && !p.fits; runs *= 2)
      tightest = shape_streamed(p, chunk, runs, n, output, scratch);
    if (p.fits || chunk == kMinChunkRows) break;
  }
  if (p.fits) tightest = prefer_stream_beside_sort(p, n, output, scratch, tightest);
  const char* x_name = p.probe == Side::S ? "R" : "S";
  p.reason += std::string(p.fits ? "; co-partitioned, streamed: " : "; not streamed either: ") + x_name + " resident in " +
              std::to_string(p.resident_runs) + " sorted run(s)" + (p.stream_beside_sort ? " beside the stream" : "") +
              ", " + (p.probe == Side::S ? "S" : "R") + " in chunks of " +
              std::to_string(p.chunk_rows) + " rows per GPU, " + budget_text(p.budget[tightest], tightest, gpus, p.device_bytes, true);
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
  const char* payload_flow = output != OutputMode::Materialize ? "" : p.late ? ", late payloads" : ", payloads carried";
  p.reason = std::string(p.fits ? "co-partitioned: in core" : "not in core") + payload_flow + ", " +
             budget_text(p.budget[tightest], tightest, gpus, device_bytes, false);
  if (payloads == PayloadFlow::Late && !late_possible)
    p.reason += " (late payloads: none to move, or a partition of 2^32 rows or more)";
  if (!p.fits && payloads != PayloadFlow::Late) plan_streamed(p, gpus, n, output, scratch);
  if (!p.fits) p.reason = "paper flow: " + p.reason;
  return p;
}

void force_streamed(CopartPlan& plan, const RelationView& r, const RelationView& s, std::int64_t chunk_rows, int runs,
                    OutputMode output, const ScratchSizes& scratch, bool beside_sort) {
  MGJOIN_EXPECTS(chunk_rows >= 1 && runs >= 1, "a streamed plan needs chunks and runs");
  MGJOIN_EXPECTS(plan.partitions.spill_side < 0, "reshape a pass before its spill is added (it counts the GPUs)");
  const std::int64_t n[2] = {r.size(), s.size()};
  const int tightest = shape_streamed(plan, chunk_rows, runs, n, output, scratch, beside_sort);
  plan.reason = std::string(plan.fits ? "co-partitioned, streamed (forced): " : "not streamed (forced): ") +
                budget_text(plan.budget[tightest], tightest, plan.partitions.gpus, plan.device_bytes, true);
}

void resize_buffers(CopartPlan& plan, const RelationView& r, const RelationView& s, OutputMode output,
                    const ScratchSizes& scratch) {
  const std::int64_t n[2] = {r.size(), s.size()};
  const int tightest = size_buffers(plan, static_cast<int>(plan.budget.size()), n, output, scratch);
  plan.fits = plan.budget[tightest].peak() <= plan.device_bytes;
}

std::uint64_t pinned_bytes_needed(const CopartPlan& plan, OutputMode output) {
  const std::uint64_t small = 2 * 4096;  // segment sizes of two slots, with alignment
  if (output != OutputMode::Materialize) return small;
  const std::uint64_t widest = std::max({plan.r.key_bytes, plan.r.payload_bytes, plan.s.payload_bytes});
  return small + 2 * (plan.window_rows * widest + 4096);
}

}  // namespace mgjoin::copart
