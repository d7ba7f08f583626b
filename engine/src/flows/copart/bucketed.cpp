// run_bucketed: a bucket plan run (bucketed.hpp; copart/bucket_plan.hpp draws the flow): pass 1
// (bucket_pass1.hpp) fills the buckets and the resident groups, pass 2 joins the groups.
//
// Pass 2 first joins the resident groups: each GPU plans its group from a strided sample of its keys
// (read from the GPU: the rows are nowhere else) and runs the one-GPU flow on its own stacks, all GPUs
// started before the first is finished; then the host groups, in order into one set of result columns.
// Overlapped: per GPU, two device stacks over halves of its stack and two pinned stacks over blocks of
// its pinned stack (Halves); group q + 1's InCoreJoin is started on the other half once group q's inputs
// have arrived, and group q is finished (its last sort, join and output) while q + 1's bytes cross PCIe;
// group q + 2 is planned on another thread meanwhile.
// A group whose bucket outgrew its half (the sample misled) waits for the one before it and runs alone
// in all the memory. One by one: each group's buckets go to run_copart in all the memory.
#include "engine/src/flows/copart/bucketed.hpp"

#include "engine/src/flows/copart/bucket_pass1.hpp"

#include "alloc/host_memory.hpp"
#include "alloc/stack_buffer.hpp"
#include "alloc/stack_set.hpp"
#include "engine/src/exec/phase_stats.hpp"
#include "engine/src/join/output_count.hpp"
#include "engine/src/exec/key_order.hpp"
#include "core/cancel.hpp"
#include "core/checked_math.hpp"
#include "core/timing.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <array>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>

namespace mgjoin::copart {
namespace {

using timing::Clock;
using timing::seconds_since;

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
    std::future<CopartPlan> planned;  // the next group's plan, made while this one crosses
    int k = 0;
    for (std::size_t i = 0; i < joining_.size(); ++i) {
      const int q = joining_[i];
      mgjoin::detail::throw_if_cancelled();
      if (!halves) halves.emplace(context_, plan_.device_bytes, plan_.group_pinned_bytes);
      auto next = std::make_unique<Running>(r_.group(q), s_.group(q));
      if (planned.valid()) next->plan = planned.get();
      // None made beside (the first group) or made for other halves (remade after a group ran alone).
      if (next->plan.device_bytes != halves->device_bytes()) next->plan = plan_group(next->r, next->s, halves->device_bytes());
      if (i + 1 < joining_.size()) planned = plan_beside(joining_[i + 1], halves->device_bytes());
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

  /// Group q's plan for GPUs of `device_bytes` each, made on another thread: it samples the group's keys
  /// on the host (35-45 ms a group on 4 H200s, s25), which the GPUs waited for between two groups when
  /// the loop made it.
  std::future<CopartPlan> plan_beside(int q, std::uint64_t device_bytes) const {
    return std::async(std::launch::async, [this, q, device_bytes] { return plan_group(r_.group(q), s_.group(q), device_bytes); });
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
    Pass1 pass1(plan, context, exec::ordered_key_xor(r.key.type), *resident);
    pass1.run(r, Side::R, r_buckets);
    pass1.run(s, Side::S, s_buckets);
    pass1_in = pass1.bytes_in();
    pass1_out = pass1.bytes_out();
    pass1_nvlink = pass1.bytes_nvlink();
  }
  const double pass1_seconds = seconds_since(t0);

  const auto t1 = Clock::now();
  std::optional<OutputColumns> columns;
  if (output == OutputMode::Materialize) columns.emplace(r, s, plan.r, plan.s, result, static_cast<int>(context.devices.size()), context.sink);
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
