// The CPU path (`--gpus 0`): parallel sort of both relations, a merge join in parallel over the
// merge-path partition pairs of the sorted inputs (the same partitioning as the GPU join phase,
// paper Section 3.3.1), and parallel materialization.
#include "engine/src/join/cpu_join.hpp"

#include "engine/src/join/cpu_merge_join.hpp"
#include "engine/src/join/cpu_sort.hpp"
#include "engine/src/join/materialize.hpp"
#include "engine/src/join/merge_path_partition.hpp"
#include "engine/src/join/output_count.hpp"
#include "core/timing.hpp"
#include "core/cancel.hpp"

#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>

namespace mgjoin::detail {
namespace {

using timing::Clock;
using timing::seconds_since;

/// Matching ranges in a buffer filled in parallel (a std::vector would zero it on one thread first).
struct RangeBuffer {
  std::unique_ptr<MatchRange[]> data;
  std::size_t size = 0;
  std::span<const MatchRange> view() const { return {data.get(), size}; }
};

/// A piece of the merge join's output, in key order: a pair to join or a range found at a cut.
struct WorkItem {
  PairRange pair;
  std::optional<MatchRange> boundary;
  std::uint64_t r_begin() const { return boundary ? boundary->r_begin : pair.r_begin; }
};

std::vector<WorkItem> work_items(const JoinPartitionPlan& plan) {
  std::vector<WorkItem> items;
  for (const PartitionPair& p : plan.partitions)
    for (const PairRange& sub : p.subpartitions) items.push_back({sub, std::nullopt});
  for (const MatchRange& m : plan.boundary_ranges) items.push_back({{}, m});
  // Pieces are disjoint with non-empty R sides, so R order is key order.
  std::sort(items.begin(), items.end(), [](const WorkItem& a, const WorkItem& b) { return a.r_begin() < b.r_begin(); });
  return items;
}

/// Matching ranges of sorted R and S, in key order: a counting pass sizes each piece's output exactly,
/// a second pass writes it in place.
RangeBuffer merge_join(ColumnView r_keys, ColumnView s_keys, int threads) {
  // A few partition pairs per thread evens out the boundary validation's uneven cuts.
  const PartitionOptions options{.partitions = static_cast<std::uint64_t>(threads) * 4,
                                 .max_subpartition_rows = ~0ull,
                                 .min_subpartitions = 1};
  JoinPartitionPlan plan = plan_join_partitions(r_keys, s_keys, options);
  const std::vector<WorkItem> items = work_items(plan);
  const auto n = static_cast<std::int64_t>(items.size());

  std::vector<std::uint64_t> offsets(items.size() + 1, 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t i = 0; i < n; ++i)
    offsets[i + 1] = items[i].boundary ? 1 : count_matching_ranges(r_keys, s_keys, items[i].pair);
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());

  RangeBuffer ranges{std::unique_ptr<MatchRange[]>(new MatchRange[offsets.back()]), offsets.back()};
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t i = 0; i < n; ++i) {
    if (items[i].boundary)
      ranges.data[offsets[i]] = *items[i].boundary;
    else
      write_matching_ranges(r_keys, s_keys, items[i].pair, ranges.data.get() + offsets[i]);
  }
  return ranges;
}

/// Every progress report is a cancellation point, as on the GPUs.
void report(const JoinOptions& options, const char* phase, double fraction) {
  detail::throw_if_cancelled();
  if (options.progress) options.progress(phase, fraction);
}

std::uint64_t sort_scratch_bytes(const RelationView& rel) {
  if (!rel.payload) return 0;
  const std::size_t row = std::max(dtype_size(rel.key.type), dtype_size(rel.payload->type)) * 2;
  return static_cast<std::uint64_t>(rel.size()) * row;
}

}  // namespace

JoinResult cpu_join(RelationView r, RelationView s, const JoinOptions& options) {
  const auto start = Clock::now();
  const int threads = omp_get_max_threads();
  JoinResult result;
  result.executor = "CPU (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");

  report(options, "sort", 0.0);
  auto t = Clock::now();
  sort_relation_cpu(r);
  report(options, "sort", 0.5);
  sort_relation_cpu(s);
  result.phases.push_back({"sort", seconds_since(t)});
  report(options, "sort", 1.0);

  report(options, "join", 0.0);
  t = Clock::now();
  const RangeBuffer ranges = merge_join(r.key, s.key, threads);
  result.count = count_tuples(ranges.view());
  result.phases.push_back({"join", seconds_since(t)});
  report(options, "join", 1.0);

  const std::uint64_t range_bytes = ranges.size * sizeof(MatchRange);
  std::uint64_t output_bytes = 0;
  if (options.output == OutputMode::Materialize) {
    report(options, "materialize", 0.0);
    expect_output_memory(result.count, output_row_bytes(r, s));
    t = Clock::now();
    std::optional<ColumnView> r_payload, s_payload;
    if (r.payload) r_payload = ColumnView(*r.payload);
    if (s.payload) s_payload = ColumnView(*s.payload);
    MaterializedColumns columns = materialize(ranges.view(), r.key, r_payload, s_payload);
    result.key = std::move(columns.key);
    if (columns.r_payload) result.r_payload = std::move(*columns.r_payload);
    if (columns.s_payload) result.s_payload = std::move(*columns.s_payload);
    output_bytes = result.key.bytes() + result.r_payload.bytes() + result.s_payload.bytes() +
                   (ranges.size + 1) * sizeof(std::uint64_t);
    result.phases.push_back({"materialize", seconds_since(t)});
    report(options, "materialize", 1.0);
  }
  if (options.output == OutputMode::Ranges) result.ranges.assign(ranges.data.get(), ranges.data.get() + ranges.size);
  result.peak_host_bytes = std::max(std::max(sort_scratch_bytes(r), sort_scratch_bytes(s)), range_bytes + output_bytes);
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace mgjoin::detail
