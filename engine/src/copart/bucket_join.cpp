// run_bucketed: executes a bucket plan (bucket_join.hpp draws the flow).
//
// Pass 1 on each GPU: two chunk slots; chunk c of a relation goes to GPU c % g. While chunk t is
// partitioned by the group splitters (keys in the ordered form, turned back on the way out), chunk
// t + 1 crosses in and chunk t - 1's segments cross out into their groups' buckets: PCIe carries both
// directions at once. One host thread drives every GPU; it blocks only to read a chunk's segment sizes,
// which address the copies out and are checked against the buckets' bounds.
//
// Resident groups (hybrid) take their device buffers from each GPU's stack before pass 1's slots, so
// they stay when the slots go. A chunk's segment of resident group k crosses to GPU k (a device copy,
// over NVLink from another GPU) on the D2H stream, in order with the host buckets' copies. Pass 2
// first joins them: each GPU plans its group from a strided sample of its keys (read from the GPU:
// the rows are nowhere else) and runs the one-GPU flow on its own stacks, all GPUs started before the
// first is finished; then the host groups.
//
// Pass 2 joins the host groups in order into one set of result columns. Overlapped: per GPU, two device
// stacks over halves of its stack and two pinned stacks over blocks of its pinned stack (Halves); group
// q + 1's InCoreJoin is started on the other half once group q's inputs have arrived, and group q is
// finished (its last sort, join and output) while q + 1's bytes cross PCIe. A group whose bucket outgrew
// its half (the sample misled) waits for the one before it and runs alone in all the memory. One by
// one: each group's buckets go to run_copart in all the memory.
#include "engine/src/copart/bucket_join.hpp"

#include "engine/src/copart/chunk_slot.hpp"

#include "alloc/host_memory.hpp"
#include "alloc/stack_buffer.hpp"
#include "alloc/stack_set.hpp"
#include "engine/src/join/output_count.hpp"
#include "engine/src/phase_stats.hpp"
#include "core/cancel.hpp"
#include "core/checked_math.hpp"
#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <future>
#include <memory>
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

using DeviceBuffer = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;

/// The resident groups: group host_groups() + k of each side in GPU k's memory, as long as its bound.
class Resident {
 public:
  Resident(const BucketPlan& plan, const CopartContext& ctx, const RelationView& r, const RelationView& s)
      : host_groups_(plan.host_groups()), rel_{r, s}, w_{plan.r, plan.s} {
    MGJOIN_EXPECTS(plan.resident == 0 || plan.resident == static_cast<int>(ctx.devices.size()),
                   "one resident group per GPU");
    for (int k = 0; k < plan.resident; ++k) {
      GpuPart& gpu = gpus_.emplace_back();
      gpu.context = {ctx.devices.subspan(k, 1), ctx.device_memory.subspan(k, 1), ctx.pinned.subspan(k, 1), ctx.exchange,
                     ctx.comms};
      for (int side = 0; side < 2; ++side) {
        Part& part = gpu.side[side];
        part.bound = plan.sizes.bound[side][host_groups_ + k];
        const Widths& w = w_[side];
        if (part.bound == 0) continue;
        part.keys = DeviceBuffer(*ctx.device_memory[k], static_cast<std::size_t>(part.bound) * w.key_bytes);
        if (w.payload_bytes)
          part.payload = DeviceBuffer(*ctx.device_memory[k], static_cast<std::size_t>(part.bound) * w.payload_bytes);
      }
    }
  }

  int gpus() const { return static_cast<int>(gpus_.size()); }
  int device(int k) const { return gpus_[k].context.devices[0]; }
  /// GPU k's stacks alone: its group's one-GPU flow runs on them.
  const CopartContext& context(int k) const { return gpus_[k].context; }

  /// Where `rows` more rows of `side` go on GPU k: key and payload destinations (payload nullptr when none).
  /// @throw PlanMissed when they pass the group's bound.
  std::pair<std::byte*, std::byte*> append(int k, Side side, std::int64_t rows) {
    Part& part = gpus_[k].side[static_cast<int>(side)];
    if (part.filled + rows > part.bound)
      throw PlanMissed("resident group " + std::to_string(host_groups_ + k) + " of " + (side == Side::R ? "R" : "S") +
                       " outgrew the " + std::to_string(part.bound) + " rows its sample planned");
    const Widths& w = w_[static_cast<int>(side)];
    const std::int64_t row = part.filled;
    part.filled += rows;
    return {row_at(part.keys.data(), row, w.key_bytes), w.payload_bytes ? row_at(part.payload.data(), row, w.payload_bytes) : nullptr};
  }

  /// GPU k's rows of `side` as a relation of the input's types, in device memory.
  RelationView group(int k, Side side) const {
    const Part& part = gpus_[k].side[static_cast<int>(side)];
    const RelationView& rel = rel_[static_cast<int>(side)];
    RelationView v{{part.keys.data(), part.filled, rel.key.type}, std::nullopt};
    if (w_[static_cast<int>(side)].payload_bytes) v.payload = MutableColumnView{part.payload.data(), part.filled, rel.payload->type};
    return v;
  }

  std::int64_t rows(int k, Side side) const { return gpus_[k].side[static_cast<int>(side)].filled; }

 private:
  struct Part {
    std::int64_t bound = 0, filled = 0;
    DeviceBuffer keys, payload;  // (payload freed first: the stack takes any order, but so it is LIFO)
  };
  struct GpuPart {
    CopartContext context;  ///< GPU k alone
    std::array<Part, 2> side;
  };
  int host_groups_;
  std::array<RelationView, 2> rel_;
  std::array<Widths, 2> w_;
  std::deque<GpuPart> gpus_;
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
  Pass1(const BucketPlan& plan, const CopartContext& ctx, std::uint64_t key_xor, Resident& resident)
      : plan_(plan), key_xor_(key_xor), resident_(resident) {
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
  /// Resident rows' bytes copied to another GPU than the one that partitioned them.
  std::uint64_t bytes_nvlink() const { return bytes_nvlink_; }

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
      const std::byte* keys_from = row_at(slot.out_keys.data(), static_cast<std::int64_t>(seg[q]), w.key_bytes);
      const std::byte* payload_from = row_at(slot.out_payload.data(), static_cast<std::int64_t>(seg[q]), w.payload_bytes);
      const std::uint64_t bytes = static_cast<std::uint64_t>(rows) * (w.key_bytes + w.payload_bytes);
      if (const int k = plan_.resident_gpu(q); k >= 0) {  // stays on the GPUs: to GPU k
        const auto [keys, payload] = resident_.append(k, side, rows);
        const int to = resident_.device(k);
        MGJOIN_CUDA_TRY(cudaMemcpyPeerAsync(keys, to, keys_from, gpu.device, rows * w.key_bytes, gpu.d2h));
        if (payload) MGJOIN_CUDA_TRY(cudaMemcpyPeerAsync(payload, to, payload_from, gpu.device, rows * w.payload_bytes, gpu.d2h));
        if (to != gpu.device) bytes_nvlink_ += bytes;
        continue;
      }
      const auto [keys, payload] = buckets.append(q, rows, side == Side::R ? "R" : "S");
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(keys, keys_from, rows * w.key_bytes, cudaMemcpyDeviceToHost, gpu.d2h));
      if (payload) MGJOIN_CUDA_TRY(cudaMemcpyAsync(payload, payload_from, rows * w.payload_bytes, cudaMemcpyDeviceToHost, gpu.d2h));
      bytes_out_ += bytes;
    }
    slot.drained.record(gpu.d2h);
    slot.drained_recorded = true;
  }

  const BucketPlan& plan_;
  std::uint64_t key_xor_;
  Resident& resident_;
  std::vector<Pass1Gpu> gpus_;
  std::uint64_t bytes_in_ = 0, bytes_out_ = 0, bytes_nvlink_ = 0;
};

/// Pass 2's stacks when two groups are on the GPUs at once: per GPU, two device stacks over halves of
/// what its stack has (at most the plan's memory) and two pinned stacks over blocks of its pinned stack.
class Halves {
 public:
  Halves(const CopartContext& ctx, std::uint64_t device_bytes, std::uint64_t pinned_bytes) {
    std::uint64_t least = device_bytes;
    for (const alloc::DeviceStackAllocator* stack : ctx.device_memory) least = std::min<std::uint64_t>(least, stack->available());
    half_ = overlap_half(least);
    for (std::size_t d = 0; d < ctx.devices.size(); ++d)
      for (int k = 0; k < 2; ++k) {
        const DeviceBuffer& block = device_blocks_.emplace_back(*ctx.device_memory[d], half_);
        device_[k].add(ctx.devices[d], alloc::Region{block.data(), block.size()});
        const PinnedBuffer& staging = pinned_blocks_.emplace_back(*ctx.pinned[d], pinned_bytes);
        pinned_[k].add(alloc::Region{staging.data(), staging.size()});
      }
    for (int k = 0; k < 2; ++k) contexts_[k] = {ctx.devices, device_[k].view(), pinned_[k].view(), ctx.exchange, ctx.comms};
  }

  /// The stacks of half k (0 or 1).
  const CopartContext& context(int k) const { return contexts_[k]; }
  /// What each half has on every GPU.
  std::uint64_t device_bytes() const { return half_; }

 private:
  using PinnedBuffer = alloc::StackBuffer<std::byte, alloc::PinnedStackAllocator>;
  std::uint64_t half_ = 0;
  // The blocks outlive the stacks over them (members are destroyed in reverse order).
  std::deque<DeviceBuffer> device_blocks_;
  std::deque<PinnedBuffer> pinned_blocks_;
  std::array<alloc::StackSet<alloc::DeviceStackAllocator>, 2> device_;
  std::array<alloc::StackSet<alloc::PinnedStackAllocator>, 2> pinned_;
  std::array<CopartContext, 2> contexts_;
};

/// Pass 2: the groups that join anything, in order, into one count or one set of result columns.
class Pass2 {
 public:
  Pass2(Buckets& r, Buckets& s, const BucketPlan& plan, OutputMode output, PayloadFlow payloads,
        const CopartContext& context, OutputColumns* columns)
      : r_(r), s_(s), plan_(plan), output_(output), payloads_(payloads), context_(context), columns_(columns),
        scratch_(device_scratch_sizes()) {
    // An inner join skips a group with an empty side.
    for (int q = 0; q < plan.host_groups(); ++q)
      if (r.rows(q) > 0 && s.rows(q) > 0) {
        joining_.push_back(q);
        all_ += r.rows(q) + s.rows(q);
      }
  }

  /// Joins the resident groups, each on its GPU with the one-GPU flow (payloads carried: they are on
  /// the GPU already), all GPUs started before the first is finished; before the host groups, whose
  /// shares of the output come after theirs (`resident` holds the rows: call once, first).
  void run_resident(const Resident& resident) {
    const auto t0 = Clock::now();
    std::vector<int> joining;
    for (int k = 0; k < resident.gpus(); ++k)
      if (resident.rows(k, Side::R) > 0 && resident.rows(k, Side::S) > 0) {
        joining.push_back(k);
        all_ += resident.rows(k, Side::R) + resident.rows(k, Side::S);
      }
    std::vector<std::unique_ptr<Running>> started;
    std::vector<std::pair<int, std::unique_ptr<Running>>> streamed;
    for (const int k : joining) {
      mgjoin::detail::throw_if_cancelled();
      const CopartContext& ctx = resident.context(k);
      auto job = std::make_unique<Running>(resident.group(k, Side::R), resident.group(k, Side::S));
      job->plan = plan_copart(one_gpu_sample(job->r.size()), one_gpu_sample(job->s.size()), job->r, job->s, 1, output_,
                              ctx.device_memory[0]->available(), scratch_, PayloadFlow::Carry);
      if (!job->plan.fits)
        throw PlanMissed("resident group on GPU " + std::to_string(resident.device(k)) + " (" + std::to_string(job->r.size()) +
                         " R and " + std::to_string(job->s.size()) + " S rows) is not joined beside itself: " + job->plan.reason);
      job->into = into_rows(static_cast<std::uint64_t>(job->r.size() + job->s.size()));
      if (job->plan.streamed) {  // its rounds block the host: after the in-core ones have started
        streamed.emplace_back(k, std::move(job));
        continue;
      }
      job->join = std::make_unique<InCoreJoin>(job->r, job->s, job->plan, output_, ctx, job->into);
      job->join->start();
      started.push_back(std::move(job));
    }
    for (auto& job : started) finish(std::move(job), true);
    for (const auto& [k, job] : streamed) {
      JoinResult part;
      run_copart(job->r, job->s, job->plan, output_, resident.context(k), part, job->into);
      add(part, true);
    }
    groups_.push_back({"bucket.pass2.resident", seconds_since(t0), 0, 0});
  }

  /// Each group alone in all the memory, in core or streamed.
  void run_one_by_one() {
    const auto t0 = Clock::now();
    for (const int q : joining_) run_alone(q);
    groups_.push_back({"bucket.pass2.one_by_one", seconds_since(t0), 0, 0});
  }

  /// Two groups at once. For each group in turn: the next group is planned and its buffers taken on
  /// the other half while this one's inputs still cross; then, once they have arrived, the next one is
  /// started (its inputs cross) while this one is finished. Between two groups' transfers the host
  /// only starts a thread.
  void run_overlapped() {
    const auto t0 = Clock::now();
    double alone = 0;
    std::optional<Halves> halves;
    std::unique_ptr<Running> running;  // started
    int k = 0;
    for (const int q : joining_) {
      mgjoin::detail::throw_if_cancelled();
      if (!halves) halves.emplace(context_, plan_.device_bytes, plan_.group_pinned_bytes);
      auto next = std::make_unique<Running>(r_.group(q), s_.group(q));
      next->plan = plan_group(next->r, next->s, halves->device_bytes());
      if (!next->plan.fits || next->plan.streamed) {  // its bucket outgrew the half its sample planned
        finish(std::move(running));
        halves.reset();
        const auto t = Clock::now();
        run_alone(q);
        alone += seconds_since(t);
        continue;
      }
      next->into = into(q);
      next->join = std::make_unique<InCoreJoin>(next->r, next->s, next->plan, output_, halves->context(k), next->into);
      k ^= 1;
      if (running) running->join->arrive();  // before `next`'s transfer, which must not share PCIe with it
      start_while_finishing(*next->join, std::move(running));
      running = std::move(next);
    }
    finish(std::move(running));
    groups_.push_back({"bucket.pass2.overlapped", seconds_since(t0) - alone, 0, 0});
    if (alone > 0) groups_.push_back({"bucket.pass2.alone", alone, 0, 0});
  }

  const CheckedSum& count() const { return count_; }
  /// The groups' own phases, summed by name.
  const std::vector<PhaseStat>& phases() const { return phases_; }
  /// The resident groups' phases, summed by name.
  const std::vector<PhaseStat>& resident_phases() const { return resident_phases_; }
  /// How long pass 2 ran its groups overlapped, and alone.
  const std::vector<PhaseStat>& groups() const { return groups_; }

 private:
  /// A group on the GPUs: its join keeps references to the views, the plan and `into`.
  struct Running {
    Running(RelationView r, RelationView s) : r(r), s(s) {}
    RelationView r, s;
    CopartPlan plan;
    OutputInto into;
    std::unique_ptr<InCoreJoin> join;
  };

  /// A group's plan from its bucket for GPUs of `device_bytes` each.
  CopartPlan plan_group(const RelationView& r, const RelationView& s, std::uint64_t device_bytes) const {
    return plan_copart(r, s, static_cast<int>(context_.devices.size()), output_, device_bytes, scratch_, payloads_);
  }

  /// Where group q's output goes: the shares of the input joined before and after it (the last group
  /// that joins ends at share 1, where the columns grow to exactly their rows).
  OutputInto into(int q) { return into_rows(static_cast<std::uint64_t>(r_.rows(q) + s_.rows(q))); }

  /// The same for a part of `rows` input rows.
  OutputInto into_rows(std::uint64_t rows) {
    const OutputInto shares{columns_, static_cast<double>(done_) / static_cast<double>(all_),
                            done_ + rows == all_ ? 1.0 : static_cast<double>(done_ + rows) / static_cast<double>(all_)};
    done_ += rows;
    return shares;
  }

  void run_alone(int q) {
    mgjoin::detail::throw_if_cancelled();
    const RelationView rq = r_.group(q), sq = s_.group(q);
    const CopartPlan plan = plan_group(rq, sq, plan_.device_bytes);
    if (!plan.fits)
      throw PlanMissed("bucket group " + std::to_string(q) + " (" + std::to_string(rq.size()) + " R and " +
                       std::to_string(sq.size()) + " S rows) does not fit: " + plan.reason);
    JoinResult part;
    run_copart(rq, sq, plan, output_, context_, part, into(q));
    add(part);
  }

  /// Starts `next` on a worker thread while this one finishes `previous`: with several GPUs, start()
  /// blocks until the last chunk is partitioned (the host reads segment sizes), and the previous
  /// group's join and output must not wait for that. The two use different stacks and streams; the
  /// worker checks the join's cancel flag.
  void start_while_finishing(InCoreJoin& next, std::unique_ptr<Running> previous) {
    const std::atomic<bool>* cancel = mgjoin::detail::cancel_flag();
    std::future<void> started = std::async(std::launch::async, [&next, cancel] {
      const mgjoin::detail::CancelScope scope(cancel);
      next.start();
    });
    try {
      finish(std::move(previous));
    } catch (...) {
      started.wait();  // `next` is unwound after: its start must be over
      throw;
    }
    started.get();
  }

  void finish(std::unique_ptr<Running> group, bool resident = false) {
    if (!group) return;
    JoinResult part;
    group->join->finish(part);
    add(part, resident);
  }

  /// Adds a group's count and phases; a resident group's phases apart, their copies being on the GPU
  /// (not PCIe bytes).
  void add(const JoinResult& part, bool resident = false) {
    count_.add(part.count);
    if (!resident) {
      mgjoin::detail::add_phases(phases_, part.phases);
      return;
    }
    std::vector<PhaseStat> phases = part.phases;
    for (PhaseStat& p : phases) p.bytes_pcie = 0;
    mgjoin::detail::add_phases(resident_phases_, phases);
  }

  Buckets &r_, &s_;
  const BucketPlan& plan_;
  OutputMode output_;
  PayloadFlow payloads_;
  const CopartContext& context_;
  OutputColumns* columns_;
  ScratchSizes scratch_;
  std::vector<int> joining_;
  std::uint64_t all_ = 0, done_ = 0;
  CheckedSum count_{0};
  std::vector<PhaseStat> phases_, resident_phases_, groups_;
};

}  // namespace

void run_bucketed(const RelationView& r, const RelationView& s, const BucketPlan& plan, OutputMode output,
                  PayloadFlow payloads, const CopartContext& context, JoinResult& result) {
  MGJOIN_EXPECTS(output != OutputMode::Ranges, "the co-partitioned flow has no ranges output");
  MGJOIN_EXPECTS(plan.fits, "run_bucketed needs a plan that fits");
  const int groups = plan.groups.gpus;
  const auto t0 = Clock::now();
  alloc::expect_host_memory(plan.host_bytes, "the bucketed flow's pinned buckets (" + std::to_string(groups) + " groups)");
  const auto host_bounds = [&](int side) {
    const std::vector<std::int64_t>& bound = plan.sizes.bound[side];
    return std::vector<std::int64_t>(bound.begin(), bound.begin() + plan.host_groups());
  };
  Buckets r_buckets(r, plan.r, host_bounds(0));
  Buckets s_buckets(s, plan.s, host_bounds(1));
  std::optional<Resident> resident(std::in_place, plan, context, r, s);  // before pass 1's slots: they stay
  std::uint64_t pass1_in = 0, pass1_out = 0, pass1_nvlink = 0;
  {
    Pass1 pass1(plan, context, ordered_key_xor(r.key.type), *resident);
    pass1.run(r, Side::R, r_buckets);
    pass1.run(s, Side::S, s_buckets);
    pass1_in = pass1.bytes_in();
    pass1_out = pass1.bytes_out();
    pass1_nvlink = pass1.bytes_nvlink();
  }
  const double pass1_seconds = seconds_since(t0);

  const auto t1 = Clock::now();
  std::optional<OutputColumns> columns;
  if (output == OutputMode::Materialize) columns.emplace(r, s, plan.r, plan.s, result);
  Pass2 pass2(r_buckets, s_buckets, plan, output, payloads, context, columns ? &*columns : nullptr);
  if (plan.resident) pass2.run_resident(*resident);
  resident.reset();  // the host groups take all the memory
  // A plan made for another exchange (overlap_possible) runs one group at a time: its groups fit in
  // half the memory, and so in all of it.
  if (plan.overlap && overlap_possible(context.exchange, static_cast<int>(context.devices.size())))
    pass2.run_overlapped();
  else
    pass2.run_one_by_one();
  const CheckedSum& count = pass2.count();
  const std::vector<PhaseStat>& phases = pass2.phases();
  if (count.overflowed) mgjoin::detail::throw_output_overflow("the bucket groups");
  if (columns)
    columns->finish();
  else
    result.count = count.value;
  result.phases.push_back({"bucket.pass1", pass1_seconds, pass1_in + pass1_out, pass1_nvlink});
  std::uint64_t pass2_pcie = 0, pass2_nvlink = 0;
  for (const PhaseStat& p : phases) {
    pass2_pcie += p.bytes_pcie;
    pass2_nvlink += p.bytes_nvlink;
  }
  result.phases.push_back({"bucket.pass2", seconds_since(t1), pass2_pcie, pass2_nvlink});
  for (const PhaseStat& p : pass2.groups()) result.phases.push_back(p);
  for (const PhaseStat& p : phases) result.phases.push_back({"bucket.pass2." + p.name, p.seconds, p.bytes_pcie, p.bytes_nvlink});
  for (const PhaseStat& p : pass2.resident_phases())
    result.phases.push_back({"bucket.pass2.resident." + p.name, p.seconds, p.bytes_pcie, p.bytes_nvlink});
}

}  // namespace mgjoin::copart
