// run_bucketed: executes a bucket plan (bucket_join.hpp draws the flow).
//
// Pass 1 on each GPU: two chunk slots; chunk c of a relation goes to GPU c % g. While chunk t is
// partitioned by the group splitters (keys in the ordered form, turned back on the way out), chunk
// t + 1 crosses in and chunk t - 1's segments cross out into their groups' buckets: PCIe carries both
// directions at once. One host thread drives every GPU; it blocks only to read a chunk's segment sizes,
// which address the copies out and are checked against the buckets' bounds.
//
// Pass 2 hands each group's buckets to run_copart, whose output goes into one set of result columns.
#include "engine/src/copart/bucket_join.hpp"

#include "engine/src/copart/chunk_slot.hpp"

#include "alloc/host_memory.hpp"
#include "alloc/stack_buffer.hpp"
#include "engine/src/join/output_count.hpp"
#include "engine/src/phase_stats.hpp"
#include "core/cancel.hpp"
#include "core/checked_math.hpp"
#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace mgjoin::copart {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// One side's pinned buckets: one region per group, each as long as the group's bound.
class Buckets {
 public:
  Buckets(const RelationView& rel, const Widths& w, const std::vector<std::int64_t>& bound)
      : rel_(rel), w_(w), bound_(bound), filled_(bound.size(), 0) {
    std::int64_t rows = 0;
    for (const std::int64_t b : bound) {
      first_.push_back(rows);
      rows += b;
    }
    keys_ = HostColumn::allocate(rel.key.type, rows, MemoryKind::Pinned);
    if (w.payload_bytes) payload_ = HostColumn::allocate(rel.payload->type, rows, MemoryKind::Pinned);
  }

  /// Where `rows` more rows of group q go: key and payload destinations (payload nullptr when none).
  /// @throw PlanMissed when they pass the group's bound.
  std::pair<std::byte*, std::byte*> append(int q, std::int64_t rows, const char* side) {
    if (filled_[q] + rows > bound_[q])
      throw PlanMissed(std::string("bucket group ") + std::to_string(q) + " of " + side + " outgrew the " +
                       std::to_string(bound_[q]) + " rows its sample planned");
    const std::int64_t row = first_[q] + filled_[q];
    filled_[q] += rows;
    return {row_at(keys_.as<std::byte>(), row, w_.key_bytes),
            w_.payload_bytes ? row_at(payload_.as<std::byte>(), row, w_.payload_bytes) : nullptr};
  }

  /// Group q's rows as a relation of the input's types.
  RelationView group(int q) {
    RelationView v{{row_at(keys_.as<std::byte>(), first_[q], w_.key_bytes), filled_[q], rel_.key.type}, std::nullopt};
    if (w_.payload_bytes)
      v.payload = MutableColumnView{row_at(payload_.as<std::byte>(), first_[q], w_.payload_bytes), filled_[q], rel_.payload->type};
    return v;
  }

  std::int64_t rows(int q) const { return filled_[q]; }

 private:
  const RelationView& rel_;
  Widths w_;
  std::vector<std::int64_t> bound_, filled_, first_;
  HostColumn keys_, payload_;
};

/// A pass-1 chunk slot, and when its segments have crossed out.
struct Slot : ChunkSlot {
  gpu::Event drained;
  bool drained_recorded = false;
};

struct Pass1Gpu {
  int device = 0;
  gpu::Stream h2d, part, d2h;
  std::array<Slot, 2> slots;
};

/// Pass 1: both relations through the GPUs into the buckets.
class Pass1 {
 public:
  Pass1(const BucketPlan& plan, const CopartContext& ctx, std::uint64_t key_xor) : plan_(plan), key_xor_(key_xor) {
    gpus_.resize(ctx.devices.size());
    for (std::size_t d = 0; d < gpus_.size(); ++d) {
      Pass1Gpu& gpu = gpus_[d];
      gpu.device = ctx.devices[d];
      gpu::DeviceGuard guard(gpu.device);
      gpu.h2d = gpu::Stream(gpu.device);
      gpu.part = gpu::Stream(gpu.device);
      gpu.d2h = gpu::Stream(gpu.device);
      for (Slot& slot : gpu.slots) {
        static_cast<ChunkSlot&>(slot) = ChunkSlot(gpu.device, *ctx.device_memory[d], *ctx.pinned[d], plan.chunk_rows, plan.r,
                                                  plan.s, plan.sizes.max_copies, plan.groups.gpus);
        slot.drained = gpu::Event(gpu.device, false);
      }
    }
  }

  // Copies may still be in flight when an error unwinds: wait for them before any buffer goes back.
  ~Pass1() {
    for (const auto& gpu : gpus_) {
      gpu::DeviceGuard guard(gpu.device);
      cudaDeviceSynchronize();
    }
  }
  Pass1(const Pass1&) = delete;
  Pass1& operator=(const Pass1&) = delete;

  /// Partitions `rel` (side `side`) into `buckets`, chunk by chunk on every GPU.
  void run(const RelationView& rel, Side side, Buckets& buckets) {
    const Widths& w = side == Side::R ? plan_.r : plan_.s;
    const int g = static_cast<int>(gpus_.size());
    const std::int64_t per_round = plan_.chunk_rows * g;
    const std::int64_t rounds = (rel.size() + per_round - 1) / per_round;
    for (std::int64_t t = 0; t <= rounds; ++t) {
      mgjoin::detail::throw_if_cancelled();
      for (int j = 0; j < g && t < rounds; ++j) {
        const std::int64_t first = t * per_round + j * plan_.chunk_rows;
        start(gpus_[j], gpus_[j].slots[t % 2], rel, side, w, first, std::clamp<std::int64_t>(rel.size() - first, 0, plan_.chunk_rows));
      }
      for (int j = 0; j < g && t > 0; ++j) drain(gpus_[j], gpus_[j].slots[(t - 1) % 2], side, w, buckets);
    }
    for (auto& gpu : gpus_) gpu.d2h.synchronize();
  }

  std::uint64_t bytes_in() const { return bytes_in_; }
  std::uint64_t bytes_out() const { return bytes_out_; }

 private:
  /// H2D of rows [first, first + rows) into the slot, then their partitioning, on the GPU's streams.
  void start(Pass1Gpu& gpu, Slot& slot, const RelationView& rel, Side side, const Widths& w, std::int64_t first,
             std::int64_t rows) {
    slot.rows = rows;
    if (rows == 0) return;
    gpu::DeviceGuard guard(gpu.device);
    // The input buffers are free: drain() waited for the slot's previous partitioning.
    bytes_in_ += slot.copy_in(rel, w, first, rows, gpu.h2d);
    // The output buffers are free once the previous chunk's segments have crossed out.
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.part, slot.h2d_done, 0));
    if (slot.drained_recorded) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.part, slot.drained, 0));
    slot.partition(plan_.groups, slot.partition_args(w, side, key_xor_, first), gpu.part);
  }

  /// Once the slot's chunk is partitioned: its keys back to the input's form, and each group's segment
  /// D2H into its bucket.
  void drain(Pass1Gpu& gpu, Slot& slot, Side side, const Widths& w, Buckets& buckets) {
    if (slot.rows == 0) return;
    gpu::DeviceGuard guard(gpu.device);
    slot.part_done.synchronize();
    const auto* seg = reinterpret_cast<const std::uint64_t*>(slot.segments_host.data());
    const int groups = plan_.groups.gpus;
    // On the D2H stream, in order before the copies: the partition stream has the next chunk's work.
    flip_keys(w.key_bytes, slot.out_keys.data(), static_cast<std::int64_t>(seg[groups]), key_xor_, gpu.d2h);
    for (int q = 0; q < groups; ++q) {
      const auto rows = static_cast<std::int64_t>(seg[q + 1] - seg[q]);
      if (rows == 0) continue;
      const auto [keys, payload] = buckets.append(q, rows, side == Side::R ? "R" : "S");
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(keys, row_at(slot.out_keys.data(), static_cast<std::int64_t>(seg[q]), w.key_bytes),
                                      rows * w.key_bytes, cudaMemcpyDeviceToHost, gpu.d2h));
      if (payload)
        MGJOIN_CUDA_TRY(cudaMemcpyAsync(payload, row_at(slot.out_payload.data(), static_cast<std::int64_t>(seg[q]), w.payload_bytes),
                                        rows * w.payload_bytes, cudaMemcpyDeviceToHost, gpu.d2h));
    }
    bytes_out_ += seg[groups] * (w.key_bytes + w.payload_bytes);
    slot.drained.record(gpu.d2h);
    slot.drained_recorded = true;
  }

  const BucketPlan& plan_;
  std::uint64_t key_xor_;
  std::vector<Pass1Gpu> gpus_;
  std::uint64_t bytes_in_ = 0, bytes_out_ = 0;
};

}  // namespace

void run_bucketed(const RelationView& r, const RelationView& s, const BucketPlan& plan, OutputMode output,
                  PayloadFlow payloads, const CopartContext& context, JoinResult& result) {
  MGJOIN_EXPECTS(output != OutputMode::Ranges, "the co-partitioned flow has no ranges output");
  MGJOIN_EXPECTS(plan.fits, "run_bucketed needs a plan that fits");
  const int groups = plan.groups.gpus;
  const auto t0 = Clock::now();
  alloc::expect_host_memory(plan.host_bytes, "the bucketed flow's pinned buckets (" + std::to_string(groups) + " groups)");
  Buckets r_buckets(r, plan.r, plan.sizes.bound[0]);
  Buckets s_buckets(s, plan.s, plan.sizes.bound[1]);
  std::uint64_t pass1_in = 0, pass1_out = 0;
  {
    Pass1 pass1(plan, context, ordered_key_xor(r.key.type));
    pass1.run(r, Side::R, r_buckets);
    pass1.run(s, Side::S, s_buckets);
    pass1_in = pass1.bytes_in();
    pass1_out = pass1.bytes_out();
  }
  const double pass1_seconds = seconds_since(t0);

  const auto t1 = Clock::now();
  std::optional<OutputColumns> columns;
  if (output == OutputMode::Materialize) columns.emplace(r, s, plan.r, plan.s, result);
  // Shares of the input by the groups that join anything (an inner join skips a group with an empty
  // side): the last group that joins ends at share 1, where the columns grow to exactly their rows.
  const auto joins = [&](int q) { return r_buckets.rows(q) > 0 && s_buckets.rows(q) > 0; };
  std::uint64_t all = 0, done = 0;
  for (int q = 0; q < groups; ++q)
    if (joins(q)) all += r_buckets.rows(q) + s_buckets.rows(q);
  CheckedSum count{0};
  std::vector<PhaseStat> phases;
  const ScratchSizes scratch = device_scratch_sizes();
  for (int q = 0; q < groups; ++q) {
    mgjoin::detail::throw_if_cancelled();
    if (!joins(q)) continue;
    const RelationView rq = r_buckets.group(q), sq = s_buckets.group(q);
    const std::uint64_t rows = rq.size() + sq.size();
    const OutputInto into{columns ? &*columns : nullptr, static_cast<double>(done) / static_cast<double>(all),
                          done + rows == all ? 1.0 : static_cast<double>(done + rows) / static_cast<double>(all)};
    done += rows;
    const CopartPlan group_plan = plan_copart(rq, sq, static_cast<int>(context.devices.size()), output,
                                              plan.device_bytes, scratch, payloads);
    if (!group_plan.fits)
      throw PlanMissed("bucket group " + std::to_string(q) + " (" + std::to_string(rq.size()) + " R and " +
                       std::to_string(sq.size()) + " S rows) does not fit: " + group_plan.reason);
    JoinResult part;
    run_copart(rq, sq, group_plan, output, context, part, into);
    count.add(part.count);
    mgjoin::detail::add_phases(phases, part.phases);
  }
  if (count.overflowed) mgjoin::detail::throw_output_overflow("the bucket groups");
  if (columns)
    columns->finish();
  else
    result.count = count.value;
  result.phases.push_back({"bucket.pass1", pass1_seconds, pass1_in + pass1_out, 0});
  std::uint64_t pass2_pcie = 0, pass2_nvlink = 0;
  for (const PhaseStat& p : phases) {
    pass2_pcie += p.bytes_pcie;
    pass2_nvlink += p.bytes_nvlink;
  }
  result.phases.push_back({"bucket.pass2", seconds_since(t1), pass2_pcie, pass2_nvlink});
  for (PhaseStat& p : phases) result.phases.push_back({"bucket.pass2." + p.name, p.seconds, p.bytes_pcie, p.bytes_nvlink});
}

}  // namespace mgjoin::copart
