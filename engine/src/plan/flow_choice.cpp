// The flow choice (flow_choice.hpp).
#include "engine/src/plan/flow_choice.hpp"

#include <mgjoin/error.hpp>

#include <cstdio>
#include <exception>

namespace mgjoin::detail {
namespace {

/// Why the paper flow runs when the co-partitioned one is not even tried; empty when it is to be tried.
/// @throw InputError when the co-partitioned flow was asked for an output it does not make.
std::string paper_only_reason(const JoinRequest& request, bool tuned_paper) {
  if (request.strategy == JoinStrategy::Paper) return "paper flow: asked for";
  if (request.output == OutputMode::Ranges) {
    MGJOIN_INPUT_EXPECTS(request.strategy != JoinStrategy::CoPartitioned,
                         "JoinOptions::strategy: the co-partitioned flow has no ranges output: ranges indexes the sorted inputs, which only the paper flow "
                         "makes (ask for the paper flow or auto)");
    return "paper flow: ranges output indexes the sorted inputs";
  }
  if (request.strategy == JoinStrategy::Auto && tuned_paper) return "paper flow: the tuning file timed it faster on this GPU set";
  return "";
}

/// Whether the co-partitioned flows move payloads: when materializing.
bool moves_payloads(const FlowQuestion& q) { return q.request.output == OutputMode::Materialize; }

/// The bytes R and S move in any co-partitioned flow: keys, and payloads when materializing.
std::uint64_t moved_by(const RelationView& r, const RelationView& s, const FlowQuestion& q) {
  return moved_bytes(r, moves_payloads(q)) + moved_bytes(s, moves_payloads(q));
}

/// What the plan in passes moves.
FlowTraffic traffic_in_passes(const RelationView& r, const RelationView& s, const FlowQuestion& q, const copart::PassPlan& p) {
  const copart::PassBytes bytes = copart::pass_bytes(p, moved_bytes(r, moves_payloads(q)), moved_bytes(s, moves_payloads(q)));
  return passes_traffic(bytes.in, bytes.spilled);
}

/// What the co-partitioned flow chosen (in core or streamed, in passes, bucketed) moves.
FlowTraffic chosen_traffic(const RelationView& r, const RelationView& s, const FlowQuestion& q, const FlowChoice& c) {
  if (c.flow == Flow::Passes) return traffic_in_passes(r, s, q, *c.passes);
  return copart_traffic(moved_by(r, s, q), c.flow == Flow::Bucketed ? c.buckets->estimated_bytes : 0);
}

/// Auto: weighs the co-partitioned flow chosen against the paper flow by the cost model. Adds both
/// predictions to `reason`; false (with `reason` naming the paper flow) when the paper flow is
/// predicted faster.
bool cost_model_keeps_copart(const RelationView& r, const RelationView& s, const FlowChoice& c, const FlowQuestion& q,
                             std::string& reason) {
  const double copart = predict_seconds(chosen_traffic(r, s, q, c), q.rates);
  const std::optional<sort::SortPlan> paper_plan = q.paper_plan();
  if (!paper_plan) return true;  // the paper flow would refuse these: it is no choice then
  const double paper = predict_seconds(paper_traffic(r, s, *paper_plan), q.rates);
  char text[160];
  std::snprintf(text, sizeof text, "cost model (%s): %.3f s, the paper flow %.3f s", q.rates.source.c_str(), copart, paper);
  if (paper_predicted_faster(copart, paper)) {
    reason = std::string("paper flow: ") + text;
    return false;
  }
  reason += std::string("; ") + text;
  return true;
}

/// Where neither relation pair fits in core or streamed and the passes fit: whether they are taken over
/// buckets that would move `bucket_bytes` out and in again (the cost model's margin; asked for, always).
/// Adds both predictions to `reason`.
bool passes_over_buckets(const RelationView& r, const RelationView& s, const FlowQuestion& q, int passes_asked,
                         const copart::PassPlan& passes, std::uint64_t bucket_bytes, std::string& reason) {
  if (passes_asked > 0) return true;
  const double in_passes = predict_seconds(traffic_in_passes(r, s, q, passes), q.rates);
  const double bucketed = predict_seconds(copart_traffic(moved_by(r, s, q), bucket_bytes), q.rates);
  char text[128];
  std::snprintf(text, sizeof text, "; cost model: in passes %.3f s, bucketed %.3f s", in_passes, bucketed);
  reason += text;
  return passes_predicted_faster(bucketed, in_passes);
}

/// The co-partitioned plan; where it does not fit (not with late payloads), the plan in passes (two GPUs
/// or more, unless MGJOIN_COPART_PASSES is off) and the bucket plan, the passes taken where they fit and
/// are asked for or predicted faster. Sets c.flow to the one chosen (Paper where none fits).
void make_plans(const RelationView& r, const RelationView& s, const FlowQuestion& q, FlowChoice& c) {
  const JoinRequest& req = q.request;
  const auto [r_sample, s_sample] = q.samples();
  c.planned = true;
  c.plan = copart::plan_copart(r_sample, s_sample, r, s, q.gpus, req.output, q.device_bytes, q.scratch, req.payloads);
  c.reason = c.plan.reason;
  if (c.plan.fits) c.flow = Flow::CoPartitioned;
  if (c.plan.fits || req.payloads == PayloadFlow::Late) return;
  // MGJOIN_COPART_PASSES is read where passes could run: a bad value is refused there only.
  const int passes = q.gpus > 1 ? copart::parse_passes(req.passes ? req.passes->c_str() : nullptr) : -1;
  if (passes >= 0)
    c.passes = copart::plan_passes(r_sample, s_sample, r, s, q.gpus, req.output, q.device_bytes, q.scratch, passes);
  const bool passes_fit = c.passes && c.passes->fits;
  const copart::Residency residency =
      copart::parse_residency(req.bucket_resident ? req.bucket_resident->c_str() : nullptr);
  // Without resident groups the buckets move every byte out and in again (and a hot key's copies): where
  // the passes beat that, the bucket plan (tens of milliseconds at 10^9 rows) is not needed.
  std::string weighed;
  if (passes_fit && residency.share == 0 && passes_over_buckets(r, s, q, passes, *c.passes, moved_by(r, s, q), weighed)) {
    c.flow = Flow::Passes;
    c.reason = c.passes->reason + weighed;
    return;
  }
  c.buckets = copart::plan_buckets(r_sample, s_sample, r, s, q.gpus, req.output, q.device_bytes, q.scratch, req.payloads,
                                   /*groups=*/0, req.exchange, residency);
  if (!passes_fit && !c.buckets->fits) {
    c.reason = c.plan.reason + "; " + (c.passes ? c.passes->reason + "; " : "") + c.buckets->reason;
    return;
  }
  weighed.clear();
  const bool take_passes =
      passes_fit && (!c.buckets->fits || passes_over_buckets(r, s, q, passes, *c.passes, c.buckets->estimated_bytes, weighed));
  c.flow = take_passes ? Flow::Passes : Flow::Bucketed;
  c.reason = (take_passes ? c.passes->reason : c.buckets->reason) + weighed;
}

}  // namespace

FlowChoice choose_flow(const RelationView& r, const RelationView& s, const FlowQuestion& q) {
  FlowChoice c;
  c.reason = paper_only_reason(q.request, q.tuned_paper);
  if (!c.reason.empty()) return c;
  const JoinStrategy strategy = q.request.strategy;
  make_plans(r, s, q, c);
  bool fits = c.flow != Flow::Paper;
  if (fits && strategy == JoinStrategy::Auto && !cost_model_keeps_copart(r, s, c, q, c.reason)) fits = false;
  c.plan_seconds = timing::seconds_since(q.start);
  MGJOIN_INPUT_EXPECTS(fits || strategy != JoinStrategy::CoPartitioned,
                       "JoinOptions::strategy: R and S do not fit the GPUs for the co-partitioned flow (" + c.reason +
                           "); ask for the paper flow or auto, or more GPUs");
  // Auto: buckets that host memory cannot hold leave the passes where they fit, else the paper flow,
  // which needs less beside the inputs.
  if (fits && c.flow == Flow::Bucketed && strategy != JoinStrategy::CoPartitioned) {
    if (const std::optional<std::string> short_of = q.host_refuses(c.buckets->host_bytes)) {
      if (c.passes && c.passes->fits) {
        c.flow = Flow::Passes;
        c.reason = c.passes->reason + "; not bucketed: " + *short_of;
        // The passes were not weighed against the paper flow yet.
        if (strategy == JoinStrategy::Auto && !cost_model_keeps_copart(r, s, c, q, c.reason)) fits = false;
      } else {
        c.reason = "paper flow: " + *short_of;
        fits = false;
      }
    }
  }
  if (!fits) c.flow = Flow::Paper;
  return c;
}

std::optional<std::string> paper_after(const std::exception_ptr& failure, const FlowChoice& choice, JoinStrategy strategy) {
  try {
    std::rethrow_exception(failure);
  } catch (const copart::PlanMissed& missed) {
    // Nothing was output into result columns (a sink may have had a bucket group's or a pass's rows:
    // the paper flow writes every row again, and a sink's last write holds): the paper flow starts from
    // the untouched inputs.
    return std::string("paper flow: ") + missed.what() + " (the key sample misled the plan)";
  } catch (const OutOfMemory& short_of) {
    // Auto, bucketed: the output outgrew the host memory the buckets left (only they were checked up
    // front); the result was local, and the paper flow needs no buckets.
    if (choice.flow != Flow::Bucketed || strategy != JoinStrategy::Auto) return std::nullopt;
    return std::string("paper flow: ") + short_of.what() + " (beside the bucketed flow's buckets)";
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace mgjoin::detail
