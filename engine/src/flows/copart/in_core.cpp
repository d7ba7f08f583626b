// The in-core variant (copart_flow.hpp): InCoreJoin's three steps over the partition pairs.
//
//   start   R in, R's partitions sorted on the work streams while S arrives; S in
//   arrive  every byte where it belongs; S's partitions sorted
//   finish  late payloads sent; the resident joins counted, or the output written (count ─► scan ─►
//           windows out: exec/output_writer.hpp)
//
// One GPU counting: R crosses in 2 runs and S in 4, each sorted as it arrives, and every run of S is
// joined with both runs of R as soon as it is sorted, so that once the last byte is in only the last
// run's sort and joins are left. A join reads all of R whatever the run of S, so more runs of S would
// add more joins than they take from the tail; R's two runs let its sort begin halfway through its
// transfer.
#include "engine/src/flows/copart/copart_flow.hpp"

#include "engine/src/exec/lanes.hpp"
#include "engine/src/exec/output_writer.hpp"
#include "engine/src/flows/copart/late_payloads.hpp"
#include "engine/src/flows/copart/partition_pairs.hpp"
#include "engine/src/join/output_count.hpp"
#include "core/cancel.hpp"
#include "core/timing.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <array>
#include <span>
#include <vector>

namespace mgjoin::copart {
namespace {

using timing::Clock;
using timing::seconds_since;

constexpr std::array<int, 2> kArrivalRuns{2, 4};

constexpr exec::LaneStreams kAllStreams{true, true, true, true, true, true, true};

/// What the resident joins counted, per GPU and in all.
struct Counts {
  std::vector<std::uint64_t> per_gpu;
  std::uint64_t total = 0;
};

}  // namespace

/// The in-core flow's state between its steps.
struct InCoreJoin::State {
  State(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
        const CopartContext& context);
  // Work may still be in flight when an error unwinds: wait for it (this flow's streams only) before
  // any buffer goes back.
  ~State() { lanes.synchronize_all(); }

  /// One GPU counting: R and S cross in runs that are sorted (and S's joined) as they arrive, and join()
  /// only reads the count.
  bool counts_on_arrival() const { return output == OutputMode::Count && g == 1; }
  Counts join(std::span<const MatchArrays> arrays);
  std::uint64_t materialize(OutputColumns& out, const OutputInto& into, PhaseStat& stat);
  double tail_seconds(bool join_part) const;

  const CopartPlan& plan;
  OutputMode output;
  int g;
  exec::Lanes lanes;  // before the buffers: they go back first
  PartitionPairs pairs;
  LatePayloads late;
  std::vector<exec::OutputWindows> windows;
  /// The host's time in start() and in arrive()'s wait: the whole transfer when the steps run back to
  /// back, what was not hidden behind another group's finish when they overlap.
  double transfer_seconds = 0;
  bool arrived = false;
};

// The buffers on each GPU, in this order: R's and S's partitions, the join's counter and scratch, (late
// payloads, g > 1: the gather maps and chunk slots, kept to the end) the sort buffers, (carried, g > 1:
// the chunk slots, freed before the sort buffers).
InCoreJoin::State::State(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
                         const CopartContext& context)
    : plan(plan), output(output), g(static_cast<int>(context.devices.size())), lanes(context.devices, kAllStreams, context.staging),
      pairs(r, s, plan, context, lanes, output == OutputMode::Count && g == 1 ? kArrivalRuns : std::array<int, 2>{1, 1}),
      late(pairs) {
  for (const int device : context.devices) windows.emplace_back(device);
  pairs.take_partition(Side::R, plan.late && plan.r.payload_bytes);
  pairs.take_partition(Side::S, plan.late && plan.s.payload_bytes);
  pairs.take_join_buffers();
  if (g > 1 && plan.late) {
    pairs.take_maps();
    pairs.take_slots();
  }
  pairs.take_sort_buffers({true, true});
  if (g > 1 && !plan.late) pairs.take_slots();
}

Counts InCoreJoin::State::join(std::span<const MatchArrays> arrays) {
  const Side x = pairs.x_side(), y = plan.probe;
  for (int d = 0; d < g && !counts_on_arrival(); ++d) {
    PairGpu& gpu = pairs.gpu(d);
    const cudaStream_t work = lanes[d].work;
    gpu::DeviceGuard guard(gpu.device);
    gpu.counter.zero(work);
    gpu.join_begin.record(work);
    resident_join(pairs.pair_of(pairs.whole(d, x), pairs.whole(d, y)), gpu.counter.get(),
                  arrays.empty() ? MatchArrays{} : arrays[d], gpu.join_scratch.data(), work);
    gpu.joined.record(work);
  }
  std::vector<detail::TupleCounter> counters;
  for (int d = 0; d < g; ++d) counters.push_back(pairs.gpu(d).counter.read(lanes[d].work));
  Counts counts{{}, detail::total_tuples(counters, {})};
  for (const auto& c : counters) counts.per_gpu.push_back(c.count);
  return counts;
}

// Key order: GPU by GPU, each in probe-row order. Pinned result columns (from the pinned cache after the
// first join) take the windows straight from the GPUs; pageable ones (no pinned memory to be had) go
// through the pinned staging.
std::uint64_t InCoreJoin::State::materialize(OutputColumns& out, const OutputInto& into, PhaseStat& stat) {
  const auto t0 = Clock::now();
  const Side x = pairs.x_side(), y = plan.probe;
  std::vector<exec::OutputArrays> arrays(g);
  std::vector<MatchArrays> views(g);
  for (int d = 0; d < g; ++d) {
    arrays[d] = exec::make_output_arrays(pairs.gpu(d).device, *pairs.gpu(d).memory,
                                         static_cast<std::uint64_t>(pairs.whole(d, y).rows));
    views[d] = arrays[d].view();
  }
  const Counts counts = join(views);
  std::vector<std::uint64_t> bases(g);
  std::uint64_t total = 0;  // at most counts.total: join() checked the sum
  for (int d = 0; d < g; ++d) {
    gpu::DeviceGuard guard(pairs.gpu(d).device);
    exec::scan_matches(arrays[d], static_cast<std::uint64_t>(pairs.whole(d, y).rows), lanes[d].work);
    bases[d] = total;
    total += counts.per_gpu[d];
  }
  const std::uint64_t row_bytes = output_row_bytes(plan.r, plan.s);
  if (!out.sink()) detail::expect_output_memory(total, row_bytes);  // a sink takes the rows out of host memory
  const std::uint64_t base = out.reserve(total, into.after);
  exec::on_every_gpu(g, [&](int d) {
    const OutputWindowArgs common = pairs.window_args(pairs.whole(d, x), pairs.whole(d, y), arrays[d]);
    const std::array<const gpu::Event*, 2> ready{plan.late ? &late.arrived(d, Side::R) : nullptr,
                                                 plan.late ? &late.arrived(d, Side::S) : nullptr};
    pairs.write_output(d, windows[d], common, base + bases[d], counts.per_gpu[d], out, ready);
  });
  exec::wait_for_windows(lanes);
  for (auto& w : windows) w.release();
  stat.seconds = seconds_since(t0);
  stat.bytes_pcie = total * row_bytes;
  return total;
}

// The join from its issue: the host may issue it well after the sort ended (an overlapped bucket
// group's join waits for the next group to be planned and started).
double InCoreJoin::State::tail_seconds(bool join_part) const {
  float worst = 0;
  for (int d = 0; d < g; ++d) {
    const PairGpu& gpu = pairs.gpu(d);
    const float ms = join_part ? gpu.joined.elapsed_ms_since(gpu.join_begin) : gpu.sorted.elapsed_ms_since(gpu.tail_begin);
    worst = std::max(worst, ms);
  }
  return worst / 1e3;
}

InCoreJoin::InCoreJoin(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
                       const CopartContext& context, const OutputInto& into)
    : output_(output), into_(into) {
  MGJOIN_EXPECTS(plan.fits && !plan.streamed, "InCoreJoin runs an in-core plan");
  MGJOIN_EXPECTS(output != OutputMode::Materialize || into.columns, "a materialized InCoreJoin writes into given columns");
  state_ = std::make_unique<State>(r, s, plan, output, context);
}

InCoreJoin::~InCoreJoin() = default;

void InCoreJoin::start() {
  const auto t0 = Clock::now();
  PartitionPairs& pairs = state_->pairs;
  pairs.transfer(Side::R);
  pairs.sort_partitions(Side::R, /*timed=*/false, /*count_runs=*/false);  // on the work streams while S arrives
  detail::throw_if_cancelled();
  pairs.transfer(Side::S);
  // Counting on one GPU, S's runs are sorted and joined as they arrive (stream-ordered behind them).
  if (state_->counts_on_arrival()) pairs.sort_partitions(Side::S, /*timed=*/true, /*count_runs=*/true);
  state_->transfer_seconds += seconds_since(t0);
}

void InCoreJoin::arrive() {
  if (state_->arrived) return;
  state_->arrived = true;
  const auto t0 = Clock::now();
  state_->pairs.wait_transfer();
  state_->transfer_seconds += seconds_since(t0);
  detail::throw_if_cancelled();
  state_->pairs.sort_partitions(Side::S, /*timed=*/true, /*count_runs=*/state_->counts_on_arrival());
}

void InCoreJoin::finish(JoinResult& result) {
  arrive();
  State& st = *state_;
  // Late payloads cross while S is sorted and joined and the key column goes out (issued after the
  // sort, which must not wait for them).
  st.late.send(Side::R);
  st.late.send(Side::S);
  st.pairs.release_transfer_buffers(/*keep_slots=*/st.plan.late);
  PhaseStat out_stat{"copart.output", 0, 0, 0};
  detail::throw_if_cancelled();
  const bool materialize = output_ == OutputMode::Materialize;
  result.count = materialize ? st.materialize(*into_.columns, into_, out_stat) : st.join({}).total;
  result.phases.push_back({"copart.transfer", st.transfer_seconds, st.pairs.bytes_pcie_in(), st.pairs.bytes_nvlink()});
  result.phases.push_back({"copart.sort_tail", st.tail_seconds(false), 0, 0});
  result.phases.push_back({"copart.join", st.tail_seconds(true), 0, 0});
  if (st.plan.late) result.phases.push_back({"copart.late_payloads", st.late.seconds(), 0, 0});
  if (materialize) result.phases.push_back(out_stat);
}

}  // namespace mgjoin::copart
