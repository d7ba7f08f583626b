// The GPU engine (paper Section 3): planner -> sort phase (R, then S) -> merge phase when a relation
// took several chunksets -> join phase on all GPUs -> CPU materialization.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>

#include "alloc/host_memory.hpp"
#include "alloc/host_pin.hpp"
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "engine/src/flows/copart/bucketed.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"
#include "engine/src/cost_model.hpp"
#include "engine/src/engine_internals.hpp"
#include "engine/src/kept_inputs.hpp"
#include "engine/src/join/join_pipeline.hpp"
#include "engine/src/join/materialize.hpp"
#include "engine/src/join/output_count.hpp"
#include "engine/src/merge_phase.hpp"
#include "engine/src/exec/nvtx.hpp"
#include "engine/src/exec/phase_stats.hpp"
#include "engine/src/sort/merge_sort.hpp"
#include "engine/src/sort/sort_phase.hpp"
#include "host_merge/multiway_merge.hpp"
#include "core/timing.hpp"
#include "core/cancel.hpp"
#include "core/device.hpp"
#include "p2p/nccl_comms.hpp"
#include "p2p/peer_access.hpp"
#include "topology/gpu_set.hpp"
#include "topology/log.hpp"
#include "topology/numa_binding.hpp"
#include "topology/topology.hpp"
#include "topology/tuning_file.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>
#include <string>

namespace mgjoin {
namespace {

using timing::Clock;
using timing::seconds_since;

/// Mapped pinned memory per GPU for the join kernels' matching ranges when only counting (the kernels
/// still need somewhere to write); joins that return ranges grow it to their bound.
constexpr std::uint64_t kMinRangeBytes = 64ull << 20;
/// Largest range memory kept, all GPUs together: subpartition pairs whose ranges overflow it are
/// joined again on the CPU.
constexpr std::uint64_t kMaxRangeBytes = 16ull << 30;

std::string join_ids(const std::vector<int>& ids) {
  std::string s;
  for (const int d : ids) {
    if (!s.empty()) s += ',';
    s += std::to_string(d);
  }
  return s;
}

std::vector<int> explicit_gpu_set(const std::vector<int>& ids, int present) {
  std::set<int> seen;
  for (const int d : ids) {
    MGJOIN_INPUT_EXPECTS(d >= 0 && d < present, "JoinOptions::gpu_ids: GPU " + std::to_string(d) + " does not exist (" +
                                                    std::to_string(present) + " GPUs present)");
    MGJOIN_INPUT_EXPECTS(seen.insert(d).second, "JoinOptions::gpu_ids: GPU " + std::to_string(d) + " is listed twice");
  }
  return ids;
}

using alloc::HostPin;

using detail::add_phase;
using detail::add_phases;

const char* sort_name(SortStrategy s) { return s == SortStrategy::Merge ? "merge" : "radix"; }
const char* exchange_name(Exchange e) { return e == Exchange::Nccl ? "NCCL" : "copy engines"; }

}  // namespace

struct Engine::Impl {
  EngineOptions made_with;  ///< what the engine was constructed from (joins may not ask for other GPUs)
  std::vector<int> devices;
  std::uint64_t device_bytes = 0;
  std::optional<topology::TuningFile> tuning;
  p2p::PeerAccess peers;
  alloc::StackSet<alloc::DeviceStackAllocator> stacks;
  std::unique_ptr<p2p::NcclComms> nccl;
  topology::Topology topo;
  /// One mapped pinned range stack per GPU, on that GPU's NUMA node: its kernels write there.
  alloc::StackSet<alloc::PinnedStackAllocator> range_stacks;
  detail::MergeBuffers merge_buffers;

  Impl(std::vector<int> set, std::uint64_t bytes, std::optional<topology::TuningFile> tuning_file,
       topology::Topology topology)
      : devices(std::move(set)), device_bytes(bytes), tuning(std::move(tuning_file)), peers(devices),
        topo(std::move(topology)) {
    for (const int d : devices) stacks.add(d, device_bytes);
    make_range_stacks(kMinRangeBytes);
  }

  /// (Re)creates the range stacks with `bytes` each; pinning touches every page, so each stack is
  /// made under its GPU's NUMA memory policy (a no-op on one node).
  void make_range_stacks(std::uint64_t bytes) {
    range_stacks.clear();
    for (const int d : devices) {
      const topology::ScopedGpuNumaMemory near(topo, d);
      range_stacks.add(bytes, /*mapped=*/true);
    }
  }

  std::uint64_t range_bytes() const {
    std::uint64_t total = 0;
    for (const auto& m : range_stacks) total += m->capacity();
    return total;
  }

  SortStrategy resolve_strategy(SortStrategy asked) const {
    const int g = static_cast<int>(devices.size());
    if (asked == SortStrategy::FromTuning) {
      const auto* best = tuning ? tuning->best_for(g) : nullptr;
      asked = best && best->strategy == "merge" ? SortStrategy::Merge : SortStrategy::Radix;
    }
    if (asked == SortStrategy::Merge && !sort::merge_sort_supported(g)) {
      std::fprintf(stderr, "mgjoin: %s\n", sort::merge_sort_unsupported_message(g).c_str());
      asked = SortStrategy::Radix;
    }
    return asked;
  }

  const p2p::NcclComms* comms_for(Exchange exchange) {
    if (exchange != Exchange::Nccl) return nullptr;
    if (!nccl) nccl = std::make_unique<p2p::NcclComms>(devices);
    return nccl.get();
  }

  /// The sort plan for this engine's stacks: every GPU's stack is the usable memory.
  sort::SortPlan plan(const RelationView& r, const RelationView& s) const {
    return sort::plan_sort_with_memory(r, s, devices, device_bytes);
  }

  /// The co-partitioned flow's context on this engine's GPUs and stacks, with at least `pinned` bytes of
  /// pinned staging per GPU (the range stacks, grown once when a plan needs more).
  copart::CopartContext copart_context(Exchange exchange, std::uint64_t pinned) {
    if (range_stacks[0].available() < pinned) make_range_stacks(pinned + kMinRangeBytes);
    return {devices, stacks.view(), range_stacks.view(), exchange, comms_for(exchange)};
  }

  /// The co-partitioned flow on this engine's GPUs and stacks: in core or streamed (`plan`), or bucketed
  /// (`buckets`, when set). Its pinned staging comes from the range stacks (grown once when a plan needs
  /// more).
  JoinResult join_copart(const RelationView& r, const RelationView& s, const copart::CopartPlan& plan,
                         const copart::BucketPlan* buckets, const JoinOptions& options, const std::string& reason) {
    JoinResult result;
    result.strategy = JoinStrategy::CoPartitioned;
    result.strategy_reason = reason;
    result.executor = "GPUs " + join_ids(devices) + " (co-partitioned, " + (buckets ? "bucketed, " : "") +
                      exchange_name(options.exchange) + " exchange)";
    const std::uint64_t pinned = buckets ? buckets->pinned_bytes : copart::pinned_bytes_needed(plan, options.output);
    const copart::CopartContext context = copart_context(options.exchange, pinned);
    if (buckets)
      copart::run_bucketed(r, s, *buckets, options.output, options.payloads, context, result);
    else
      copart::run_copart(r, s, plan, options.output, context, result);
    result.peak_host_bytes = range_bytes() + (buckets ? buckets->host_bytes : 0) + result.key.bytes() +
                             result.r_payload.bytes() + result.s_payload.bytes();
    return result;
  }

  /// Auto: weighs the co-partitioned plan (in core or streamed; bucketed when `buckets` is set) against
  /// the paper flow by the cost model (cost_model.hpp). Adds both predictions to `reason`; false (with
  /// `reason` naming the paper flow) when the paper flow is predicted faster.
  bool cost_model_keeps_copart(const RelationView& r, const RelationView& s, const copart::CopartPlan& plan,
                               const std::optional<copart::BucketPlan>& buckets, const JoinOptions& options,
                               std::string& reason) const {
    const detail::Rates rates = detail::rates_for(tuning ? &tuning->bandwidths : nullptr, static_cast<int>(devices.size()));
    const bool payloads = options.output == OutputMode::Materialize;
    const std::uint64_t moved = detail::moved_bytes(r, payloads) + detail::moved_bytes(s, payloads);
    const double copart = detail::predict_seconds(detail::copart_traffic(moved, plan.fits ? 0 : buckets->estimated_bytes), rates);
    double paper = 0;
    try {
      const sort::SortPlan paper_plan = this->plan(r, s);
      // The paper flow would refuse these: it is no choice then.
      if (std::max(paper_plan.k_r, paper_plan.k_s) > static_cast<int>(host_merge::kMaxRuns)) return true;
      if (!alloc::host_memory_would_hold(merge_memory_needed(r, s, paper_plan))) return true;
      paper = detail::predict_seconds(detail::paper_traffic(r, s, paper_plan), rates);
    } catch (const Error&) {
      return true;  // the paper flow has no plan here
    }
    char text[160];
    std::snprintf(text, sizeof text, "cost model (%s): %.3f s, the paper flow %.3f s", rates.source.c_str(), copart, paper);
    if (detail::paper_predicted_faster(copart, paper)) {
      reason = std::string("paper flow: ") + text;
      return false;
    }
    reason += std::string("; ") + text;
    return true;
  }

  /// Whether host memory holds `bytes` more; if not, `reason` says so and names the paper flow.
  static bool host_holds(std::uint64_t bytes, std::string& reason) {
    try {
      alloc::expect_host_memory(bytes, "the bucketed flow's pinned buckets");
      return true;
    } catch (const OutOfMemory& e) {
      reason = std::string("paper flow: ") + e.what();
      return false;
    }
  }

  void reserve_ranges(const RelationView& r, const RelationView& s, OutputMode output) {
    if (output == OutputMode::Count) return;
    // A GPU gets a partition pair of about (|R| + |S|) / g tuples and at most one matching range per
    // distinct key of its smaller side.
    const auto g = static_cast<std::uint64_t>(devices.size());
    const auto rows = static_cast<std::uint64_t>(r.size()), srows = static_cast<std::uint64_t>(s.size());
    const std::uint64_t ranges = std::min({rows, srows, (rows + srows + 2 * g - 1) / (2 * g) + 1});
    const std::uint64_t bound = std::min(kMaxRangeBytes / g, ranges * sizeof(MatchRange) + kMinRangeBytes);
    if (range_stacks[0].capacity() >= bound) return;
    alloc::expect_host_memory((bound - range_stacks[0].capacity()) * g, "the join phase's pinned range buffers");
    make_range_stacks(bound);
  }

  /// Host memory the paper flow takes beside its inputs before it knows its output: the merge buffers
  /// of a relation sorted in several chunksets. Checked before the sort phase, so that a join that
  /// cannot fit is refused before it has done anything.
  void expect_merge_memory(const RelationView& r, const RelationView& s, const sort::SortPlan& plan) const {
    if (const std::uint64_t needed = merge_memory_needed(r, s, plan))
      alloc::expect_host_memory(needed, "the merge phase's buffers (the inputs take several chunksets)");
  }

  /// Host bytes the merge phase's buffers need beyond those the engine holds (0: none, or one chunkset).
  std::uint64_t merge_memory_needed(const RelationView& r, const RelationView& s, const sort::SortPlan& plan) const {
    std::uint64_t keys = 0, payloads = 0;
    for (const auto& [rel, k] : {std::pair{&r, plan.k_r}, std::pair{&s, plan.k_s}}) {
      if (k <= 1) continue;
      keys = std::max<std::uint64_t>(keys, rel->key.bytes());
      if (rel->payload) payloads = std::max<std::uint64_t>(payloads, rel->payload->bytes());
    }
    const auto more = [](std::uint64_t want, std::uint64_t have) { return want > have ? want - have : 0; };
    return more(keys, merge_buffers.keys.bytes()) + more(payloads, merge_buffers.payloads.bytes());
  }

  /// One join on this engine (Engine::join_checked's body, inside its cancel scope and pins).
  JoinResult run(RelationView r, RelationView s, const JoinOptions& options);

  /// Waits for every GPU's work: an error or a cancellation unwinds with copies in flight, which must
  /// finish before the caller's memory (inputs, pinned stacks) is unpinned, freed or reused.
  void synchronize() const noexcept {
    int previous = 0;
    cudaGetDevice(&previous);
    for (const int d : devices)
      if (cudaSetDevice(d) == cudaSuccess) cudaDeviceSynchronize();
    cudaSetDevice(previous);
    cudaGetLastError();
  }
};

Engine::Engine(const EngineOptions& options) {
  const int present = gpu::device_count();
  MGJOIN_INPUT_EXPECTS(present > 0, "JoinOptions::gpus: no CUDA GPU found on this machine");
  const topology::Topology topo = topology::probe_topology();
  const std::string tuning_path = options.tuning_file.empty() ? topology::default_tuning_path() : options.tuning_file;
  std::optional<topology::TuningFile> tuning = topology::read_tuning_file(tuning_path, topo);

  std::vector<int> set;
  if (!options.gpu_ids.empty()) {
    set = explicit_gpu_set(options.gpu_ids, present);
  } else {
    const int g = options.gpus < 0 ? present : options.gpus;
    MGJOIN_INPUT_EXPECTS(g <= present, "JoinOptions::gpus " + std::to_string(g) + ": only " + std::to_string(present) +
                                           " GPUs present");
    set = topology::choose_gpu_set(topo, g, tuning ? &*tuning : nullptr);
  }
  topology::log_verbose("GPUs " + join_ids(set) +
                        (!options.gpu_ids.empty() ? " (JoinOptions::gpu_ids)"
                         : tuning               ? " (tuning file " + tuning_path + ")"
                                                : std::string(" (topology model)")));
  impl_ = std::make_unique<Impl>(set, sort::usable_device_bytes(sort::free_device_bytes(set), options.gpu_memory_limit),
                                 std::move(tuning), topo);
  impl_->made_with = options;
}

Engine::~Engine() = default;

const std::vector<int>& Engine::devices() const { return impl_->devices; }
std::uint64_t Engine::device_bytes() const { return impl_->device_bytes; }

std::span<alloc::DeviceStackAllocator* const> detail::EngineInternals::device_stacks(Engine& engine) {
  return engine.impl_->stacks.view();
}

copart::CopartContext detail::EngineInternals::copart_context(Engine& engine, Exchange exchange, std::uint64_t pinned) {
  return engine.impl_->copart_context(exchange, pinned);
}

detail::Rates detail::EngineInternals::rates(const Engine& engine) {
  const Engine::Impl& e = *engine.impl_;
  return rates_for(e.tuning ? &e.tuning->bandwidths : nullptr, static_cast<int>(e.devices.size()));
}

namespace {

/// Why the paper flow runs when the co-partitioned one is not even tried; empty when it is to be tried.
/// @throw InputError when the co-partitioned flow was asked for an output it does not make.
std::string paper_only_reason(const JoinOptions& options) {
  if (options.strategy == JoinStrategy::Paper) return "paper flow: asked for";
  if (options.output != OutputMode::Ranges) return "";
  MGJOIN_INPUT_EXPECTS(options.strategy != JoinStrategy::CoPartitioned,
                       "JoinOptions::strategy: the co-partitioned flow has no ranges output: ranges indexes the sorted inputs, which only the paper flow "
                       "makes (ask for the paper flow or auto)");
  return "paper flow: ranges output indexes the sorted inputs";
}

}  // namespace

JoinResult Engine::join(RelationView r, RelationView s, const JoinOptions& options) {
  validate_relations(r, s);
  alloc::check_host_memory_environment();
  return join_checked(r, s, options);
}

JoinResult Engine::join_checked(RelationView r, RelationView s, const JoinOptions& options) {
  Impl& e = *impl_;
  const EngineOptions& asked = options;
  MGJOIN_INPUT_EXPECTS(asked == EngineOptions{} || asked == e.made_with,
                       "JoinOptions::gpus: this join asks for other GPUs, memory or tuning file than its Engine was "
                       "made with (EngineOptions are fixed per Engine: make another one)");
  const detail::CancelScope cancel(options.cancel);
  detail::expect_inputs_keepable(options);
  const HostPin input_pins[] = {{r.key.data, r.key.bytes()},
                                {r.payload ? r.payload->data : nullptr, r.payload ? r.payload->bytes() : 0},
                                {s.key.data, s.key.bytes()},
                                {s.payload ? s.payload->data : nullptr, s.payload ? s.payload->bytes() : 0}};
  try {
    return e.run(r, s, options);
  } catch (...) {
    e.synchronize();  // before the pins above go and the stacks serve another join
    throw;
  }
}

JoinResult Engine::Impl::run(RelationView r, RelationView s, const JoinOptions& options) {
  Impl& e = *this;
  const auto start = Clock::now();
  // Every progress report is a cancellation point.
  const auto report = [&](const char* phase, double fraction) {
    detail::throw_if_cancelled();
    if (options.progress) options.progress(phase, fraction);
  };
  std::string reason = paper_only_reason(options);
  const auto* tuned = e.tuning ? e.tuning->best_for(static_cast<int>(e.devices.size())) : nullptr;
  if (reason.empty() && options.strategy == JoinStrategy::Auto && tuned && tuned->flow == "paper" &&
      std::is_permutation(tuned->gpus.begin(), tuned->gpus.end(), e.devices.begin(), e.devices.end()))
    reason = "paper flow: the tuning file timed it faster on this GPU set";
  if (reason.empty()) {
    report("plan", 0);
    const int g = static_cast<int>(e.devices.size());
    const copart::ScratchSizes scratch = copart::device_scratch_sizes();
    const copart::KeySample r_sample = copart::sample_keys(r.key), s_sample = copart::sample_keys(s.key);
    const copart::CopartPlan plan =
        copart::plan_copart(r_sample, s_sample, r, s, g, options.output, e.device_bytes, scratch, options.payloads);
    reason = plan.reason;
    std::optional<copart::BucketPlan> buckets;
    if (!plan.fits && options.payloads != PayloadFlow::Late) {
      buckets = copart::plan_buckets(r_sample, s_sample, r, s, g, options.output, e.device_bytes, scratch, options.payloads,
                                     /*groups=*/0, options.exchange, copart::parse_residency(std::getenv("MGJOIN_BUCKET_RESIDENT")));
      reason = buckets->fits ? buckets->reason : plan.reason + "; " + buckets->reason;
    }
    bool fits = plan.fits || (buckets && buckets->fits);
    if (fits && options.strategy == JoinStrategy::Auto && !e.cost_model_keeps_copart(r, s, plan, buckets, options, reason))
      fits = false;
    const double plan_seconds = seconds_since(start);
    MGJOIN_INPUT_EXPECTS(fits || options.strategy != JoinStrategy::CoPartitioned,
                         "JoinOptions::strategy: R and S do not fit the GPUs for the co-partitioned flow (" + reason +
                             "); ask for the paper flow or auto, or more GPUs");
    // Auto: buckets that host memory cannot hold leave the paper flow, which needs less beside the inputs.
    const bool host_fits = !fits || plan.fits || options.strategy == JoinStrategy::CoPartitioned ||
                           e.host_holds(buckets->host_bytes, reason);
    if (fits && host_fits) {
      try {
        report("co-partitioned join", 0);
        JoinResult result = e.join_copart(r, s, plan, plan.fits ? nullptr : &*buckets, options, reason);
        result.phases.insert(result.phases.begin(), PhaseStat{"copart.plan", plan_seconds, 0, 0});
        report("done", 1);
        result.seconds = seconds_since(start);
        return result;
      } catch (const copart::PlanMissed& missed) {
        // Nothing was output: the paper flow starts from the untouched inputs.
        reason = std::string("paper flow: ") + missed.what() + " (the key sample misled the plan)";
      } catch (const OutOfMemory& short_of) {
        // Auto, bucketed: the output outgrew the host memory the buckets left (only they were checked up
        // front); the result was local, and the paper flow needs no buckets.
        if (plan.fits || options.strategy != JoinStrategy::Auto) throw;
        reason = std::string("paper flow: ") + short_of.what() + " (beside the bucketed flow's buckets)";
      }
    }
  }
  // The paper flow sorts in place: copies of the inputs where the caller keeps them.
  std::optional<detail::KeptInputs> kept;
  if (options.keep_inputs) {
    kept = detail::copy_inputs(r, s);
    r = kept->r;
    s = kept->s;
  }
  detail::PhaseRanges ranges;  // NVTX: one profiler range per phase
  const auto progress = [&](const char* phase, double fraction) {
    if (fraction < 1) ranges.mark(phase);
    report(phase, fraction);
  };
  const SortStrategy strategy = e.resolve_strategy(options.sort);
  JoinResult result;
  result.executor = "GPUs " + join_ids(e.devices) + " (" + sort_name(strategy) + " sort, " +
                    exchange_name(options.exchange) + " exchange)";
  result.strategy = JoinStrategy::Paper;
  result.strategy_reason = reason;

  const sort::SortPlan plan = e.plan(r, s);
  // The merge phase merges at most kMaxRuns runs per relation: say so before the sort phase runs.
  MGJOIN_INPUT_EXPECTS(std::max(plan.k_r, plan.k_s) <= static_cast<int>(host_merge::kMaxRuns),
                       "JoinOptions::gpu_memory_limit: " + std::to_string(e.device_bytes) + " bytes per GPU would cut a relation into " +
                           std::to_string(std::max(plan.k_r, plan.k_s)) + " chunksets; the merge phase takes at most " +
                           std::to_string(host_merge::kMaxRuns) + " (raise the limit or use more GPUs)");
  e.expect_merge_memory(r, s, plan);
  const p2p::NcclComms* comms = e.comms_for(options.exchange);

  // Sort phase of R and S in one pipeline (S's first chunkset arrives while R's last one is sorted),
  // then the merge phase per relation (k > 1 runs only).
  std::vector<PhaseStat> phase_stats;
  progress("sort", 0);
  std::vector<PhaseStat> sort_stats;
  const RelationView both[] = {r, s};
  const auto sorted = sort::sort_phase(both, plan, e.devices, e.stacks.view(), strategy, options.exchange, comms, sort_stats);
  add_phases(phase_stats, sort_stats);
  double merge_seconds = 0;
  for (int i = 0; i < 2; ++i) {
    if (sorted[i].runs.size() <= 1) continue;
    progress(i == 0 ? "merge R" : "merge S", 0);
    const auto t = Clock::now();
    detail::merge_phase(both[i], sorted[i].runs, e.merge_buffers);
    merge_seconds += seconds_since(t);
  }
  add_phase(phase_stats, {"merge", merge_seconds, 0, 0});

  // Join phase on all GPUs.
  progress("join", 0);
  e.reserve_ranges(r, s, options.output);
  const OutputMode gpu_output = options.output == OutputMode::Count ? OutputMode::Count : OutputMode::Ranges;
  detail::JoinPhaseResult joined =
      detail::join_phase(r.key, s.key, e.devices, e.stacks.view(), e.range_stacks.view(), gpu_output, phase_stats,
                         {.topology = &e.topo});
  result.count = joined.count;

  std::uint64_t output_bytes = 0;
  if (options.output == OutputMode::Materialize) {
    progress("materialize", 0);
    detail::expect_output_memory(joined.count, detail::output_row_bytes(r, s));
    const auto t = Clock::now();
    auto columns = detail::materialize(joined.ranges, r.key,
                                       r.payload ? std::optional<ColumnView>(*r.payload) : std::nullopt,
                                       s.payload ? std::optional<ColumnView>(*s.payload) : std::nullopt);
    result.key = std::move(columns.key);
    if (columns.r_payload) result.r_payload = std::move(*columns.r_payload);
    if (columns.s_payload) result.s_payload = std::move(*columns.s_payload);
    output_bytes = result.key.bytes() + result.r_payload.bytes() + result.s_payload.bytes();
    add_phase(phase_stats, {"materialize", seconds_since(t), 0, 0});
  } else if (options.output == OutputMode::Ranges) {
    result.ranges = std::move(joined.ranges);
  }
  progress("done", 1);

  result.phases = std::move(phase_stats);
  result.seconds = seconds_since(start);
  result.peak_host_bytes = e.merge_buffers.bytes() + e.range_bytes() + output_bytes +
                           result.ranges.size() * sizeof(MatchRange);
  return result;
}

}  // namespace mgjoin
