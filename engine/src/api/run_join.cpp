// One join on an Engine's resources: the options unpacked, the flow chosen (plan/flow_choice.hpp), the
// flow run; the paper flow takes over from the untouched inputs where a co-partitioned run fails before
// any output (into result columns: a sink may have had some rows, which the paper flow writes again).
#include "engine/src/api/engine_resources.hpp"

#include "alloc/host_memory.hpp"
#include "alloc/host_pin.hpp"
#include "engine/src/exec/kept_inputs.hpp"
#include "engine/src/exec/labels.hpp"
#include "engine/src/exec/output_columns.hpp"
#include "engine/src/flows/copart/bucketed.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"
#include "engine/src/flows/copart/passes.hpp"
#include "engine/src/flows/paper/paper_flow.hpp"
#include "engine/src/plan/flow_choice.hpp"
#include "engine/src/plan/join_request.hpp"
#include "core/cancel.hpp"
#include "core/timing.hpp"

#include <mgjoin/error.hpp>

#include <string>
#include <vector>

namespace mgjoin::detail {
namespace {

using timing::Clock;
using timing::seconds_since;

/// One join's run on an engine.
class JoinRun {
 public:
  /// `pins`: where the run registers the inputs it does not stage, held by the caller, which waits for the
  /// GPUs' copies before they go when the run fails.
  JoinRun(EngineResources& e, const JoinSettings& options, std::vector<alloc::HostPin>& pins)
      : e_(e), options_(options), request_(unpack_join(options)), pins_(pins) {}

  JoinResult run(const RelationView& r, const RelationView& s) {
    const FlowChoice choice = choose_flow(r, s, question(r, s));
    std::string reason = choice.reason;
    if (choice.flow != Flow::Paper) {
      try {
        if (!request_.stage_inputs) pin(r, s);
        return run_copart(r, s, choice);
      } catch (...) {
        const std::optional<std::string> paper = paper_after(std::current_exception(), choice, request_.strategy);
        if (!paper) throw;
        reason = *paper;
      }
    }
    // The paper flow copies whole runs in on several streams of its phases: its inputs are registered,
    // unless it sorts pinned copies of them (keep_inputs: the caller's columns are then only read once, by
    // the host, and may be a read-only mapping, which plain registration refuses).
    if (!request_.keep_inputs) pin(r, s);
    PaperContext ctx = e_.paper_context();
    return run_paper_flow(r, s, request_, ctx, reason, report(), [this] { return seconds_since(start_); });
  }

 private:
  /// Registers the inputs' pageable columns (once; pinned ones are left alone). A column that cannot be
  /// registered (a read-only mapping where the GPU takes no read-only registration) stays as it is: the
  /// copies from it go through the driver's staging, slower but right.
  void pin(const RelationView& r, const RelationView& s) {
    if (!pins_.empty()) return;
    for (const RelationView* rel : {&r, &s}) {
      pins_.emplace_back(rel->key.data, rel->key.bytes(), alloc::Unpinnable::CopyStaged);
      if (rel->payload) pins_.emplace_back(rel->payload->data, rel->payload->bytes(), alloc::Unpinnable::CopyStaged);
    }
  }

  /// Every progress report is a cancellation point.
  Report report() const {
    return [this](const char* phase, double fraction) {
      throw_if_cancelled();
      if (options_.progress) options_.progress(phase, fraction);
    };
  }

  FlowQuestion question(const RelationView& r, const RelationView& s) {
    FlowQuestion q;
    q.request = request_;
    q.gpus = static_cast<int>(e_.devices().size());
    q.device_bytes = e_.device_bytes();
    q.tuned_paper = e_.tuning_says_paper();
    q.rates = e_.rates();
    q.scratch = copart::device_scratch_sizes();
    q.samples = [this, r, s] {
      report()("plan", 0);
      return std::array<copart::KeySample, 2>{copart::sample_keys(r.key), copart::sample_keys(s.key)};
    };
    q.paper_plan = [this, r, s] { return e_.paper_plan_if_runnable(r, s); };
    q.host_refuses = [](std::uint64_t bytes) -> std::optional<std::string> {
      try {
        alloc::expect_host_memory(bytes, "the bucketed flow's pinned buckets");
        return std::nullopt;
      } catch (const OutOfMemory& e) {
        return std::string(e.what());
      }
    };
    q.start = start_;
    return q;
  }

  /// The co-partitioned flow on the engine's GPUs and stacks: in core or streamed, in passes, or bucketed.
  /// Its pinned staging comes from the range stacks (grown once when a plan needs more).
  JoinResult run_copart(const RelationView& r, const RelationView& s, const FlowChoice& choice) {
    report()("co-partitioned join", 0);
    const copart::BucketPlan* buckets = choice.flow == Flow::Bucketed ? &*choice.buckets : nullptr;
    const copart::PassPlan* passes = choice.flow == Flow::Passes ? &*choice.passes : nullptr;
    JoinResult result;
    result.strategy = JoinStrategy::CoPartitioned;
    result.strategy_reason = choice.reason;
    const std::string variant = buckets ? "bucketed, " : passes ? "in " + std::to_string(passes->count()) + " passes, " : "";
    result.executor = "GPUs " + exec::gpu_list(e_.devices()) + " (co-partitioned, " + variant +
                      exec::exchange_label(request_.exchange) + " exchange)";
    const std::uint64_t pinned = buckets  ? buckets->pinned_bytes
                                 : passes ? passes->pinned_bytes
                                          : copart::pinned_bytes_needed(choice.plan, request_.output);
    copart::CopartContext context = e_.copart_context(request_.exchange, pinned, request_.stage_inputs);
    if (request_.output == OutputMode::Materialize) context.sink = options_.sink;
    const PhaseStat staged_before = e_.staged_inputs();
    if (buckets)
      copart::run_bucketed(r, s, *buckets, request_.output, request_.payloads, context, result);
    else if (passes)
      copart::run_passes(r, s, *passes, request_.output, context, result);
    else
      copart::run_copart(r, s, choice.plan, request_.output, context, result);
    result.peak_host_bytes = e_.range_bytes() + (buckets ? buckets->host_bytes : 0) + (passes ? passes->spill_bytes : 0) +
                             result.key.bytes() +
                             result.r_payload.bytes() + result.s_payload.bytes();
    result.phases.insert(result.phases.begin(), PhaseStat{"copart.plan", choice.plan_seconds, 0, 0});
    if (PhaseStat staged = e_.staged_inputs(); staged.bytes_pcie > staged_before.bytes_pcie) {
      staged.seconds -= staged_before.seconds;
      staged.bytes_pcie -= staged_before.bytes_pcie;
      result.phases.push_back(staged);  // host time inside the phases above, not after them
    }
    report()("done", 1);
    result.seconds = seconds_since(start_);
    return result;
  }

  EngineResources& e_;
  const JoinSettings& options_;
  Clock::time_point start_ = Clock::now();
  JoinRequest request_;
  std::vector<alloc::HostPin>& pins_;
};

}  // namespace

JoinResult join_on(EngineResources& e, RelationView r, RelationView s, const JoinOptions& options) {
  const EngineOptions& asked = options;
  MGJOIN_INPUT_EXPECTS(asked == EngineOptions{} || asked == e.made_with(),
                       "JoinOptions::gpus: this join asks for other GPUs, memory or tuning file than its Engine was "
                       "made with (EngineOptions are fixed per Engine: make another one)");
  return join_on(e, r, s, static_cast<const JoinSettings&>(options));
}

JoinResult join_on(EngineResources& e, RelationView r, RelationView s, const JoinSettings& options) {
  const CancelScope cancel(options.cancel);
  expect_inputs_keepable(options);
  std::vector<alloc::HostPin> pins;  // the inputs a run registers rather than stages
  try {
    JoinResult result = JoinRun(e, options, pins).run(r, s);
    if (options.output == OutputMode::Materialize) exec::pour_into_sink(result, options.sink);  // the paper flow's
    return result;
  } catch (...) {
    e.synchronize();  // before the pins above go and the stacks serve another join
    throw;
  }
}

}  // namespace mgjoin::detail
