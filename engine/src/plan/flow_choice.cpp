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

/// Auto: weighs the co-partitioned plan (in core or streamed; bucketed when it does not fit) against the
/// paper flow by the cost model. Adds both predictions to `reason`; false (with `reason` naming the
/// paper flow) when the paper flow is predicted faster.
bool cost_model_keeps_copart(const RelationView& r, const RelationView& s, const FlowChoice& c, const FlowQuestion& q,
                             std::string& reason) {
  const bool payloads = q.request.output == OutputMode::Materialize;
  const std::uint64_t moved = moved_bytes(r, payloads) + moved_bytes(s, payloads);
  const double copart = predict_seconds(copart_traffic(moved, c.plan.fits ? 0 : c.buckets->estimated_bytes), q.rates);
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

/// The co-partitioned plan, and the bucket plan where it does not fit (not with late payloads).
void make_plans(const RelationView& r, const RelationView& s, const FlowQuestion& q, FlowChoice& c) {
  const JoinRequest& req = q.request;
  const auto [r_sample, s_sample] = q.samples();
  c.planned = true;
  c.plan = copart::plan_copart(r_sample, s_sample, r, s, q.gpus, req.output, q.device_bytes, q.scratch, req.payloads);
  c.reason = c.plan.reason;
  if (c.plan.fits || req.payloads == PayloadFlow::Late) return;
  const copart::Residency residency =
      copart::parse_residency(req.bucket_resident ? req.bucket_resident->c_str() : nullptr);
  c.buckets = copart::plan_buckets(r_sample, s_sample, r, s, q.gpus, req.output, q.device_bytes, q.scratch, req.payloads,
                                   /*groups=*/0, req.exchange, residency);
  c.reason = c.buckets->fits ? c.buckets->reason : c.plan.reason + "; " + c.buckets->reason;
}

}  // namespace

FlowChoice choose_flow(const RelationView& r, const RelationView& s, const FlowQuestion& q) {
  FlowChoice c;
  c.reason = paper_only_reason(q.request, q.tuned_paper);
  if (!c.reason.empty()) return c;
  const JoinStrategy strategy = q.request.strategy;
  make_plans(r, s, q, c);
  bool fits = c.plan.fits || (c.buckets && c.buckets->fits);
  if (fits && strategy == JoinStrategy::Auto && !cost_model_keeps_copart(r, s, c, q, c.reason)) fits = false;
  c.plan_seconds = timing::seconds_since(q.start);
  MGJOIN_INPUT_EXPECTS(fits || strategy != JoinStrategy::CoPartitioned,
                       "JoinOptions::strategy: R and S do not fit the GPUs for the co-partitioned flow (" + c.reason +
                           "); ask for the paper flow or auto, or more GPUs");
  // Auto: buckets that host memory cannot hold leave the paper flow, which needs less beside the inputs.
  if (fits && !c.plan.fits && strategy != JoinStrategy::CoPartitioned) {
    if (const std::optional<std::string> short_of = q.host_refuses(c.buckets->host_bytes)) {
      c.reason = "paper flow: " + *short_of;
      fits = false;
    }
  }
  if (fits) c.flow = c.plan.fits ? Flow::CoPartitioned : Flow::Bucketed;
  return c;
}

std::optional<std::string> paper_after(const std::exception_ptr& failure, const FlowChoice& choice, JoinStrategy strategy) {
  try {
    std::rethrow_exception(failure);
  } catch (const copart::PlanMissed& missed) {
    // Nothing was output: the paper flow starts from the untouched inputs.
    return std::string("paper flow: ") + missed.what() + " (the key sample misled the plan)";
  } catch (const OutOfMemory& short_of) {
    // Auto, bucketed: the output outgrew the host memory the buckets left (only they were checked up
    // front); the result was local, and the paper flow needs no buckets.
    if (choice.plan.fits || strategy != JoinStrategy::Auto) return std::nullopt;
    return std::string("paper flow: ") + short_of.what() + " (beside the bucketed flow's buckets)";
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace mgjoin::detail
