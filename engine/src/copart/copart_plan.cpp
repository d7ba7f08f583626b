// plan_copart: splitters, buffer sizes and the in-core decision of the co-partitioned flow, from sizes
// and samples alone (no GPU needed: CUB's scratch sizes come in through ScratchSizes).
#include "engine/src/copart/bucket_join.hpp"
#include "engine/src/copart/copart_join.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace mgjoin::copart {
namespace {

/// Chunks per GPU per relation the transfer aims at, so that H2D, partitioning and NVLink overlap.
constexpr std::int64_t kRoundsWanted = 8;
constexpr std::int64_t kMinChunkRows = std::int64_t{1} << 20;
constexpr std::int64_t kMaxChunkRows = std::int64_t{1} << 25;
constexpr std::int64_t kMinPass1ChunkRows = std::int64_t{1} << 16;
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

/// Two chunk slots of `chunk` rows partitioned over `destinations`, as ChunkSlot allocates them: the
/// input and the partitioned output (with the most copies of a row either side has) at the widest key
/// and payload of either side, and the partition scratch.
std::uint64_t two_slots_bytes(std::int64_t chunk, const Widths& r, const Widths& s, const std::array<int, 2>& copies,
                              int destinations, const ScratchSizes& scratch) {
  const auto row = static_cast<std::uint64_t>(std::max(r.key_bytes, s.key_bytes) + std::max(r.payload_bytes, s.payload_bytes));
  const auto most = static_cast<std::uint64_t>(std::max(copies[0], copies[1]));
  return 2 * (u64(chunk) * row * (1 + most) + scratch.partition(chunk, destinations));
}

/// Several GPUs: the in-core and streamed flows' chunk slots.
std::uint64_t slot_bytes(const CopartPlan& p, int gpus, const ScratchSizes& scratch) {
  return two_slots_bytes(p.chunk_rows, p.r, p.s, p.sizes.max_copies, gpus, scratch);
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
    const std::uint64_t slots = slot_bytes(p, gpus, scratch);
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

/// The streamed variant's buffers on GPU d (copart_join.hpp: GpuBudget's fields in that variant).
GpuBudget streamed_budget_for(const CopartPlan& p, int d, int gpus, OutputMode output, const ScratchSizes& scratch) {
  GpuBudget b;
  const int y = static_cast<int>(p.probe), x = 1 - y;
  const Widths* w[2] = {&p.r, &p.s};
  const std::uint64_t rows_x = u64(p.sizes.bound[x][d]);
  const std::uint64_t run_rows = (rows_x + p.resident_runs - 1) / p.resident_runs;
  b.partitions = rows_x * width(*w[x]) + kSlackBytes;
  b.transfer = run_rows * width(*w[x]) + scratch.sort(static_cast<std::int64_t>(run_rows), w[x]->key_bytes, w[x]->payload_bytes);
  if (gpus > 1) b.held = slot_bytes(p, gpus, scratch);
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

}  // namespace

KeySample group_sample(const KeySample& sample, Side side, const PartitionPlan& groups, int q, std::int64_t rows) {
  KeySample out;
  out.rows = rows;
  for (std::size_t i = 0; i < sample.keys.size();) {
    const std::uint64_t key = sample.keys[i];
    std::size_t end = i;
    while (end < sample.keys.size() && sample.keys[end] == key) ++end;
    const Destinations d = destinations(groups, side, key, 0);
    const HotKey* hot = nullptr;
    for (int h = 0; h < groups.hot_count; ++h)
      if (groups.hot[h].key == key && groups.hot[h].split_side == side) hot = &groups.hot[h];
    for (std::size_t j = i; j < end; ++j) {
      bool here = q >= d.first && q < d.first + d.count;
      if (hot) {
        // The j-th of c copies of a split key stands for the share of the hash at (j + 1/2) / c.
        const auto u = static_cast<std::uint32_t>((static_cast<double>(j - i) + 0.5) / static_cast<double>(end - i) * kShareUnits);
        int k = 0;
        while (k < hot->span - 1 && u >= hot->cut[k]) ++k;
        here = hot->first + k == q;
      }
      if (here) out.keys.push_back(key);
    }
    i = end;
  }
  return out;
}

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
  CopartPlan tightest;
  std::uint64_t resident_pinned = 0;
  std::string resident_why;
  for (const double share : resident_shares(residency, p, r, s, gpus, device_bytes)) {
    const int resident = share > 0 ? gpus : 0;
    if (resident && (groups ? groups : 1) + resident > kMaxBucketGroups) {  // the partition kernels' destinations
      resident_why = std::to_string(resident) + " resident groups beside " + std::to_string(groups ? groups : 1) +
                     " host group(s) pass the " + std::to_string(kMaxBucketGroups) + " groups a plan cuts";
      continue;
    }
    // The resident groups' bounds hardly depend on how the rest is cut: try them with one host group
    // first (cheap), then again with the host groups chosen.
    if (resident) {
      shape_groups(p, {1, resident, share}, r_sample, s_sample, r, s, gpus, output, device_bytes, scratch, payloads, false, tightest);
      if (!residents_fit(p, r_sample, s_sample, r, s, output, device_bytes, scratch, resident_pinned, resident_why)) continue;
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
                               scratch, payloads, /*in_core_only=*/true, tightest);
    p.fits = p.overlap;
    for (int q = first; q <= last && !p.fits; ++q)
      p.fits = shape_groups(p, {q, resident, share}, r_sample, s_sample, r, s, gpus, output, device_bytes, scratch, payloads,
                            false, tightest);
    if (resident && p.fits &&
        !residents_fit(p, r_sample, s_sample, r, s, output, device_bytes, scratch, resident_pinned, resident_why))
      p.fits = false;
    if (p.fits || residency.share > 0) break;
  }
  if (p.sizes.bound[0].size() != static_cast<std::size_t>(p.groups.gpus)) {  // no shape was possible (forced)
    p.fits = false;
    p.reason = "not bucketed with resident groups: " + resident_why;
    return p;
  }
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
  p.group_pinned_bytes = pinned_bytes_needed(tightest, output);
  p.pinned_bytes = std::max<std::uint64_t>({2 * 4096, p.overlap ? 2 * (p.group_pinned_bytes + 64) : p.group_pinned_bytes,
                                            p.resident ? resident_pinned : 0});
  std::string head = std::to_string(p.host_groups()) + " bucket group(s) in " + gib(p.host_bytes) + " of pinned host buckets" +
                     (p.overlap ? ", two on the GPUs at once" : "");
  if (p.resident) head += ", and " + std::to_string(p.resident) + " resident on the GPUs (" + gib(p.resident_bytes) + " on the fullest)";
  if (p.fits)
    p.reason = "co-partitioned, bucketed: " + head + ", the tightest group " + tightest.reason;
  else if (residency.share > 0 && !resident_why.empty())
    p.reason = "not bucketed with resident groups: " + resident_why;
  else if (p.pass1_device_bytes > beside)
    p.reason = "not bucketed: pass 1's chunk slots need " + gib(p.pass1_device_bytes) + " per GPU of its " + gib(beside);
  else
    p.reason = "not bucketed either: even " + head + " leave a group that does not fit (" + tightest.reason + ")";
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
  const std::int64_t n[2] = {r.size(), s.size()};
  const int tightest = shape_streamed(plan, chunk_rows, runs, n, output, scratch, beside_sort);
  plan.reason = std::string(plan.fits ? "co-partitioned, streamed (forced): " : "not streamed (forced): ") +
                budget_text(plan.budget[tightest], tightest, plan.partitions.gpus, plan.device_bytes, true);
}

}  // namespace mgjoin::copart
