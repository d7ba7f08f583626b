// The streamed variant (streamed.hpp): X resident, Y through in rounds.
//
//   resident  X in and sorted run by run, as the in-core variant brings a relation in
//   stream    round t of Y lands in landing t % kLandings on each GPU (one GPU: straight H2D; several:
//             partitioned where it lands and sent on, as X was), is sorted there and joined against
//             every run of X; counting: summed on the GPU; materializing: each (round, run) is an output
//             job written on `out` from one of two alternating sets of match arrays, so that round t's
//             output crosses PCIe while round t + 1 is sorted and joined
//
// A landing is refilled once the windows of its previous round are written (`consumed`); the next
// rounds' chunks cross PCIe and NVLink while round t is sorted, joined and written out.
#include "engine/src/flows/copart/streamed.hpp"

#include "engine/src/exec/key_order.hpp"
#include "engine/src/exec/output_writer.hpp"
#include "engine/src/join/output_count.hpp"
#include "core/cancel.hpp"
#include "core/checked_math.hpp"
#include "core/timing.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace mgjoin::copart {
namespace {

using timing::Clock;
using timing::seconds_since;

constexpr exec::LaneStreams kAllStreams{true, true, true, true, true, true, true};

}  // namespace

StreamedJoin::StreamedJoin(const RelationView& r, const RelationView& s, const CopartPlan& plan,
                           const CopartContext& context)
    : plan_(plan), g_(static_cast<int>(context.devices.size())), lanes_(context.devices, kAllStreams, context.staging),
      pairs_(r, s, plan, context, lanes_, runs_of(plan)), landings_(g_) {
  for (int d = 0; d < g_; ++d) {
    windows_.emplace_back(context.devices[d]);
    for (auto& e : landings_[d].arrays_free) e = gpu::Event(context.devices[d], false);
  }
  // X's partition and, on top (freed once X is sorted), the sort buffers of one run.
  pairs_.take_partition(x_, /*positions=*/false);
  pairs_.take_join_buffers();
  if (g_ > 1) pairs_.take_slots();
  pairs_.take_sort_buffers({x_ == Side::R, x_ == Side::S});
}

std::array<int, 2> StreamedJoin::runs_of(const CopartPlan& plan) {
  std::array<int, 2> runs{1, 1};
  runs[static_cast<int>(plan.probe == Side::S ? Side::R : Side::S)] = plan.resident_runs;
  return runs;
}

void StreamedJoin::run(OutputColumns* out, const OutputInto& into, JoinResult& result) {
  const auto t0 = Clock::now();
  if (g_ > 1) pairs_.sort_runs_as_filled(x_);
  pairs_.transfer(x_);
  pairs_.sort_partitions(x_, /*timed=*/false, /*count_runs=*/false);
  pairs_.wait_transfer();
  begin_stream(out != nullptr);
  const double resident = seconds_since(t0);
  const std::uint64_t resident_in = pairs_.bytes_pcie_in(), resident_nvlink = pairs_.bytes_nvlink();
  detail::throw_if_cancelled();
  const auto t1 = Clock::now();
  const std::uint64_t rows_before = out ? out->rows() : 0;
  stream(result, out, into);
  std::uint64_t bytes_out = 0;
  if (out) {
    result.count = out->rows() - rows_before;
    bytes_out = result.count * output_row_bytes(plan_.r, plan_.s);
  }
  result.phases.push_back({"copart.resident", resident, resident_in + pairs_.bytes_spilled(), resident_nvlink});
  result.phases.push_back({"copart.stream", seconds_since(t1), pairs_.bytes_pcie_in() - resident_in + bytes_out,
                           pairs_.bytes_nvlink() - resident_nvlink});
}

// The landings take the sort buffers' place once X is sorted, or sit beside them (the rounds' sorts
// follow X's on the work stream): CopartPlan::stream_beside_sort.
void StreamedJoin::begin_stream(bool materialize) {
  const sort::TupleLayout l = pairs_.layout(y_);
  for (int d = 0; d < g_; ++d) {
    PairGpu& gpu = pairs_.gpu(d);
    Landings& land = landings_[d];
    gpu::DeviceGuard guard(gpu.device);
    if (!plan_.stream_beside_sort) {
      lanes_[d].work.synchronize();
      pairs_.free_sort_buffers(d);
    }
    for (int lb = 0; lb < kLandings; ++lb) {
      land.landing[lb].capacity = plan_.landing_rows;
      take_rows(land.landing[lb], *gpu.memory, pairs_.widths(y_));
      land.consumed[lb] = gpu::Event(gpu.device, false);
      land.landed[lb] = gpu::Event(gpu.device, false);
    }
    land.alt_keys = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, plan_.landing_rows * l.key_bytes));
    if (l.payload_bytes) land.alt_payload = DeviceBuffer(*gpu.memory, plan_.landing_rows * l.payload_bytes);
    land.temp = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, sort::local_sort_temp_bytes(l, plan_.landing_rows)));
    if (materialize)
      for (auto& a : land.arrays)
        a = exec::make_output_arrays(gpu.device, *gpu.memory, static_cast<std::uint64_t>(plan_.landing_rows));
    gpu.counter.zero(lanes_[d].work);
  }
}

void StreamedJoin::stream(JoinResult& result, OutputColumns* out, const OutputInto& into) {
  const std::int64_t n = pairs_.relation(y_).size();
  const std::int64_t per_round = plan_.chunk_rows * g_;
  const std::int64_t rounds = (n + per_round - 1) / per_round;
  // Rounds t + 1 .. t + ahead are issued before round t is joined, so that they cross while it is: on
  // one GPU every landing but the joined one's (the copies wait for their landings' earlier rounds),
  // on several one round (its chunks fill one of the two chunk slots that land_round empties).
  const std::int64_t ahead = g_ == 1 ? kLandings - 1 : 1;
  std::vector<int> slots(static_cast<std::size_t>(rounds), -1);
  for (std::int64_t t = 0; t < std::min(ahead, rounds); ++t) slots[t] = bring_round(t);
  for (std::int64_t t = 0; t < rounds; ++t) {
    detail::throw_if_cancelled();
    if (t + ahead < rounds) slots[t + ahead] = bring_round(t + ahead);
    const int lb = static_cast<int>(t % kLandings);
    if (g_ > 1) land_round(slots[t], t);
    if (out)
      output_round(lb, *out, into.at(static_cast<double>(t * per_round) / static_cast<double>(n)),
                   into.at(static_cast<double>(std::min(n, (t + 1) * per_round)) / static_cast<double>(n)));
    else
      count_round(lb);
  }
  if (out) return exec::wait_for_windows(lanes_);
  std::vector<detail::TupleCounter> counters;
  for (int d = 0; d < g_; ++d) counters.push_back(pairs_.gpu(d).counter.read(lanes_[d].work));
  result.count = detail::total_tuples(counters, {});
}

/// One GPU: round t's chunk goes straight into landing t % kLandings. Several: each GPU's chunk goes into
/// a slot and is partitioned there (land_round sends it on). Returns the slot.
int StreamedJoin::bring_round(std::int64_t t) {
  if (g_ > 1) return pairs_.start_round(y_, t);
  const PairGpu& gpu = pairs_.gpu(0);
  const cudaStream_t h2d = lanes_[0].h2d;
  Landings& land = landings_[0];
  const int lb = static_cast<int>(t % kLandings);
  Partition& l = land.landing[lb];
  const std::int64_t first = t * plan_.chunk_rows;
  gpu::DeviceGuard guard(gpu.device);
  wait_consumed(0, lb, h2d);
  l.rows = std::min(plan_.chunk_rows, pairs_.relation(y_).size() - first);
  pairs_.copy_rows_in(y_, first, l.rows, l, 0);
  land.landed[lb].record(h2d);
  return 0;
}

/// Several GPUs: sends round t's partitioned chunks (slot `slot`) into the owners' landings t % kLandings,
/// once the landing's previous round is consumed; the work streams then wait for the copies.
void StreamedJoin::land_round(int slot, std::int64_t t) {
  const int lb = static_cast<int>(t % kLandings);
  for (int d = 0; d < g_; ++d) {
    gpu::DeviceGuard guard(lanes_[d].device);
    landings_[d].landing[lb].rows = 0;
    for (auto& from : lanes_[d].from) wait_consumed(d, lb, from);
    wait_consumed(d, lb, lanes_[d].xchg);
  }
  pairs_.exchange(slot, y_, static_cast<std::size_t>(t), [&](int d) -> Partition& { return landings_[d].landing[lb]; });
  for (int d = 0; d < g_; ++d) {
    gpu::DeviceGuard guard(lanes_[d].device);
    pairs_.wait_inbound(d, lanes_[d].work, /*with_h2d=*/false);  // h2d carries round t + 1 by now
  }
}

/// Sorts landing lb on the work stream once it has arrived (one GPU: its keys came unflipped).
void StreamedJoin::sort_landing(int d, int lb) {
  Landings& land = landings_[d];
  Partition& l = land.landing[lb];
  if (g_ == 1) {
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lanes_[d].work, land.landed[lb], 0));
    exec::flip_keys(pairs_.widths(y_).key_bytes, l.keys.data(), l.rows, pairs_.key_xor(), lanes_[d].work,
                    exec::kCopartFlipBlocks);
  }
  pairs_.sort_rows(d, y_, l, 0, l.rows, land.alt_keys, land.alt_payload, land.temp);
}

void StreamedJoin::count_round(int lb) {
  for (int d = 0; d < g_; ++d) {
    PairGpu& gpu = pairs_.gpu(d);
    const cudaStream_t work = lanes_[d].work;
    gpu::DeviceGuard guard(gpu.device);
    sort_landing(d, lb);
    const SortedRows y{&landings_[d].landing[lb], 0, landings_[d].landing[lb].rows};
    for (int i = 0; i < pairs_.runs(x_) && y.rows; ++i) {
      const SortedRows x = pairs_.run_of(gpu.partition[static_cast<int>(x_)], x_, i);
      if (x.rows) resident_join(pairs_.pair_of(x, y), gpu.counter.get(), {}, gpu.join_scratch.data(), work);
    }
    consumed(d, lb, work);
  }
}

void StreamedJoin::output_round(int lb, OutputColumns& out, double before, double after) {
  for (int d = 0; d < g_; ++d) {
    gpu::DeviceGuard guard(lanes_[d].device);
    sort_landing(d, lb);
  }
  const int n_runs = pairs_.runs(x_);
  for (int i = 0; i < n_runs; ++i) {
    // The last run ends exactly at `after` (1 for the last round: the columns grow to their rows).
    output_job(lb, i, out, i + 1 == n_runs ? after : before + (after - before) * (i + 1) / n_runs);
  }
  for (int d = 0; d < g_; ++d) {
    gpu::DeviceGuard guard(lanes_[d].device);
    consumed(d, lb, lanes_[d].out);  // out has followed the round's joins, and written its windows
  }
}

// Every GPU counts and scans its pair into one of its two sets of match arrays, the host places each
// GPU's rows in the output, and every GPU's `out` stream writes them while its work stream goes on to
// the next job.
void StreamedJoin::output_job(int lb, int i, OutputColumns& out, double arrived) {
  const auto set = static_cast<int>(output_jobs_++ % 2);
  std::vector<SortedRows> xs(g_), ys(g_);
  std::vector<std::uint64_t> counts(g_, 0), bases(g_, 0);
  for (int d = 0; d < g_; ++d) {
    PairGpu& gpu = pairs_.gpu(d);
    Landings& land = landings_[d];
    const cudaStream_t work = lanes_[d].work;
    gpu::DeviceGuard guard(gpu.device);
    xs[d] = pairs_.run_of(gpu.partition[static_cast<int>(x_)], x_, i);
    ys[d] = {&land.landing[lb], 0, land.landing[lb].rows};
    if (xs[d].rows == 0 || ys[d].rows == 0) continue;
    // The set is free once the windows of the job two before have been written from it.
    if (land.arrays_free_recorded[set]) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(work, land.arrays_free[set], 0));
    gpu.counter.zero(work);
    resident_join(pairs_.pair_of(xs[d], ys[d]), gpu.counter.get(), land.arrays[set].view(), gpu.join_scratch.data(), work);
    exec::scan_matches(land.arrays[set], static_cast<std::uint64_t>(ys[d].rows), work);
  }
  CheckedSum rows;
  for (int d = 0; d < g_; ++d) {
    if (xs[d].rows == 0 || ys[d].rows == 0) continue;
    const detail::TupleCounter c = pairs_.gpu(d).counter.read(lanes_[d].work);
    counts[d] = detail::total_tuples({&c, 1}, {});
    rows.add(counts[d]);
  }
  if (rows.overflowed) detail::throw_output_overflow("the joined parts");
  // Columns that must grow are copied: the windows still crossing into them land first.
  if (!out.holds(rows.value)) exec::wait_for_windows(lanes_);
  // The job's rows are reserved together, at the share of Y arrived with the whole job: reserving one
  // GPU's rows at that share guessed 1/g of the output, and the columns grew by copying every run.
  if (rows.value) {
    std::uint64_t base = out.reserve(rows.value, arrived);
    for (int d = 0; d < g_; ++d) bases[d] = std::exchange(base, base + counts[d]);
  }
  exec::on_every_gpu(g_, [&](int d) {
    if (counts[d])
      pairs_.write_output(d, windows_[d], pairs_.window_args(xs[d], ys[d], landings_[d].arrays[set]), bases[d], counts[d],
                          out);
  });
  for (int d = 0; d < g_; ++d) {
    const exec::Lane& lane = lanes_[d];
    gpu::DeviceGuard guard(lane.device);
    exec::follow(lane.device, lane.work, lane.out);  // a job without windows still frees its set after its join
    landings_[d].arrays_free[set].record(lane.out);
    landings_[d].arrays_free_recorded[set] = true;
  }
}

void StreamedJoin::consumed(int d, int lb, cudaStream_t stream) {
  landings_[d].consumed[lb].record(stream);
  landings_[d].consumed_recorded[lb] = true;
}

void StreamedJoin::wait_consumed(int d, int lb, cudaStream_t stream) {
  if (landings_[d].consumed_recorded[lb]) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(stream, landings_[d].consumed[lb], 0));
}

}  // namespace mgjoin::copart
