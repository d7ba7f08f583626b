// The paper flow (paper_flow.hpp): sort phase, merge phase, join phase, materialization.
#include "engine/src/flows/paper/paper_flow.hpp"

#include "alloc/host_memory.hpp"
#include "engine/src/exec/kept_inputs.hpp"
#include "engine/src/exec/labels.hpp"
#include "engine/src/exec/nvtx.hpp"
#include "engine/src/exec/phase_stats.hpp"
#include "engine/src/join/join_pipeline.hpp"
#include "engine/src/join/materialize.hpp"
#include "engine/src/join/output_count.hpp"
#include "engine/src/sort/merge_sort.hpp"
#include "engine/src/sort/sort_phase.hpp"
#include "host_merge/multiway_merge.hpp"
#include "core/timing.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

namespace mgjoin::detail {
namespace {

using timing::Clock;
using timing::seconds_since;

/// The sort strategy asked for, FromTuning resolved by the tuning file; the merge sort falls back to the
/// radix sort (saying so) where it does not run.
SortStrategy resolve_sort_strategy(SortStrategy asked, const PaperContext& ctx) {
  const int g = static_cast<int>(ctx.devices.size());
  if (asked == SortStrategy::FromTuning) {
    const auto* best = ctx.tuning ? ctx.tuning->best_for(g) : nullptr;
    asked = best && best->strategy == "merge" ? SortStrategy::Merge : SortStrategy::Radix;
  }
  if (asked == SortStrategy::Merge && !sort::merge_sort_supported(g)) {
    std::fprintf(stderr, "mgjoin: %s\n", sort::merge_sort_unsupported_message(g).c_str());
    asked = SortStrategy::Radix;
  }
  return asked;
}

/// Grows the range stacks for a join that returns ranges: a GPU gets a partition pair of about
/// (|R| + |S|) / g tuples and at most one matching range per distinct key of its smaller side.
void reserve_ranges(const PaperContext& ctx, const RelationView& r, const RelationView& s, OutputMode output) {
  if (output == OutputMode::Count) return;
  const auto g = static_cast<std::uint64_t>(ctx.devices.size());
  const auto rows = static_cast<std::uint64_t>(r.size()), srows = static_cast<std::uint64_t>(s.size());
  const std::uint64_t ranges = std::min({rows, srows, (rows + srows + 2 * g - 1) / (2 * g) + 1});
  const std::uint64_t bound = std::min(exec::kMaxRangeBytes / g, ranges * sizeof(MatchRange) + exec::kMinRangeBytes);
  if ((*ctx.ranges)[0].capacity() >= bound) return;
  alloc::expect_host_memory((bound - (*ctx.ranges)[0].capacity()) * g, "the join phase's pinned range buffers");
  ctx.ranges->make(bound);
}

/// Host memory the paper flow takes beside its inputs before it knows its output: the merge buffers of
/// a relation sorted in several chunksets. Checked before the sort phase, so that a join that cannot
/// fit is refused before it has done anything.
void expect_merge_memory(const RelationView& r, const RelationView& s, const sort::SortPlan& plan, const PaperContext& ctx) {
  if (const std::uint64_t needed = merge_memory_needed(r, s, plan, *ctx.merge_buffers))
    alloc::expect_host_memory(needed, "the merge phase's buffers (the inputs take several chunksets)");
}

/// Sort phase of R and S in one pipeline (S's first chunkset arrives while R's last one is sorted), then
/// the merge phase per relation (k > 1 runs only).
void sort_and_merge(const RelationView (&both)[2], const sort::SortPlan& plan, SortStrategy strategy,
                    const JoinRequest& request, PaperContext& ctx, const Report& progress, std::vector<PhaseStat>& stats) {
  const p2p::NcclComms* comms = ctx.comms(request.exchange);
  progress("sort", 0);
  std::vector<PhaseStat> sort_stats;
  const auto sorted =
      sort::sort_phase(both, plan, ctx.devices, ctx.device_memory, strategy, request.exchange, comms, sort_stats);
  add_phases(stats, sort_stats);
  double merge_seconds = 0;
  for (int i = 0; i < 2; ++i) {
    if (sorted[i].runs.size() <= 1) continue;
    progress(i == 0 ? "merge R" : "merge S", 0);
    const auto t = Clock::now();
    merge_phase(both[i], sorted[i].runs, *ctx.merge_buffers);
    merge_seconds += seconds_since(t);
  }
  add_phase(stats, {"merge", merge_seconds, 0, 0});
}

/// Join phase on all GPUs, then the output: the count, the ranges, or the columns materialized on the
/// CPU. Returns the output's host bytes.
std::uint64_t join_and_output(const RelationView& r, const RelationView& s, const JoinRequest& request,
                              PaperContext& ctx, const Report& progress, std::vector<PhaseStat>& stats,
                              JoinResult& result) {
  progress("join", 0);
  reserve_ranges(ctx, r, s, request.output);
  const OutputMode gpu_output = request.output == OutputMode::Count ? OutputMode::Count : OutputMode::Ranges;
  JoinPhaseResult joined = join_phase(r.key, s.key, ctx.devices, ctx.device_memory, ctx.ranges->view(), gpu_output,
                                      stats, {.topology = ctx.topology});
  result.count = joined.count;
  if (request.output == OutputMode::Ranges) {
    result.ranges = std::move(joined.ranges);
    return 0;
  }
  if (request.output != OutputMode::Materialize) return 0;
  progress("materialize", 0);
  expect_output_memory(joined.count, output_row_bytes(r, s));
  const auto t = Clock::now();
  auto columns = materialize(joined.ranges, r.key, r.payload ? std::optional<ColumnView>(*r.payload) : std::nullopt,
                             s.payload ? std::optional<ColumnView>(*s.payload) : std::nullopt);
  result.key = std::move(columns.key);
  if (columns.r_payload) result.r_payload = std::move(*columns.r_payload);
  if (columns.s_payload) result.s_payload = std::move(*columns.s_payload);
  add_phase(stats, {"materialize", seconds_since(t), 0, 0});
  return result.key.bytes() + result.r_payload.bytes() + result.s_payload.bytes();
}

}  // namespace

sort::SortPlan paper_sort_plan(const RelationView& r, const RelationView& s, const PaperContext& ctx) {
  return sort::plan_sort_with_memory(r, s, ctx.devices, ctx.device_bytes);
}

JoinResult run_paper_flow(RelationView r, RelationView s, const JoinRequest& request, PaperContext& ctx,
                          const std::string& reason, const Report& report, const std::function<double()>& seconds) {
  // The paper flow sorts in place: copies of the inputs where the caller keeps them.
  std::optional<KeptInputs> kept;
  if (request.keep_inputs) {
    kept = copy_inputs(r, s);
    r = kept->r;
    s = kept->s;
  }
  PhaseRanges ranges;  // NVTX: one profiler range per phase
  const Report progress = [&](const char* phase, double fraction) {
    if (fraction < 1) ranges.mark(phase);
    report(phase, fraction);
  };
  const SortStrategy strategy = resolve_sort_strategy(request.sort, ctx);
  JoinResult result;
  result.executor = "GPUs " + exec::gpu_list(ctx.devices) + " (" + exec::sort_label(strategy) + " sort, " +
                    exec::exchange_label(request.exchange) + " exchange)";
  result.strategy = JoinStrategy::Paper;
  result.strategy_reason = reason;

  const sort::SortPlan plan = paper_sort_plan(r, s, ctx);
  // The merge phase merges at most kMaxRuns runs per relation: say so before the sort phase runs.
  MGJOIN_INPUT_EXPECTS(std::max(plan.k_r, plan.k_s) <= static_cast<int>(host_merge::kMaxRuns),
                       "JoinOptions::gpu_memory_limit: " + std::to_string(ctx.device_bytes) + " bytes per GPU would cut a relation into " +
                           std::to_string(std::max(plan.k_r, plan.k_s)) + " chunksets; the merge phase takes at most " +
                           std::to_string(host_merge::kMaxRuns) + " (raise the limit or use more GPUs)");
  expect_merge_memory(r, s, plan, ctx);

  std::vector<PhaseStat> phase_stats;
  const RelationView both[] = {r, s};
  sort_and_merge(both, plan, strategy, request, ctx, progress, phase_stats);
  const std::uint64_t output_bytes = join_and_output(r, s, request, ctx, progress, phase_stats, result);
  progress("done", 1);

  result.phases = std::move(phase_stats);
  result.seconds = seconds();
  result.peak_host_bytes =
      ctx.merge_buffers->bytes() + ctx.ranges->bytes() + output_bytes + result.ranges.size() * sizeof(MatchRange);
  return result;
}

}  // namespace mgjoin::detail
