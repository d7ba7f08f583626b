#pragma once
// The flow choice: which flow joins R and S and why, from the join's request, the co-partitioned plans
// and the cost model (cost_model.hpp). Pure: what it needs of the machine comes in through the question
// (the key samples, the paper flow's plan, the host memory check), so that CI tests every choice.
//
//   strategy paper, or ranges output, or the tuning file timed the paper flow faster ─► paper
//   otherwise: the co-partitioned plan (in core or streamed), else (not with late payloads) the plan in
//   passes (two GPUs or more) and the bucket plan, the passes taken where they fit and are predicted
//   faster by the margin (or MGJOIN_COPART_PASSES asks for them) and host memory holding the buckets
//   otherwise; Auto keeps the co-partitioned choice unless the paper flow is predicted faster by the
//   margin, or host memory cannot hold the buckets ─► co-partitioned / in passes / bucketed, else paper
//   (CoPartitioned: refused instead)
// When a co-partitioned run fails before any output (a plan missed, or Auto's bucketed output outgrew
// host memory), the paper flow takes over from the untouched inputs: paper_after().
#include "engine/src/copart/bucket_plan.hpp"
#include "engine/src/copart/copart_plan.hpp"
#include "engine/src/copart/pass_plan.hpp"
#include "engine/src/plan/cost_model.hpp"
#include "engine/src/plan/join_request.hpp"
#include "engine/src/sort/planner.hpp"
#include "core/timing.hpp"

#include <mgjoin/join.hpp>

#include <array>
#include <functional>
#include <optional>
#include <string>

namespace mgjoin::detail {

enum class Flow { Paper, CoPartitioned, Passes, Bucketed };

struct FlowChoice {
  Flow flow = Flow::Paper;
  bool planned = false;           ///< the co-partitioned plans were made
  copart::CopartPlan plan;        ///< in core or streamed (CoPartitioned; plan.fits)
  std::optional<copart::PassPlan> passes;     ///< made where `plan` does not fit, on 2 GPUs or more (Passes)
  /// Made where `plan` does not fit, unless the passes fit and beat any bucket plan (Bucketed).
  std::optional<copart::BucketPlan> buckets;
  std::string reason;             ///< one line: JoinResult::strategy_reason
  double plan_seconds = 0;        ///< from the join's start until the plan was chosen (planned)
};

/// What the choice is made from besides the relations.
struct FlowQuestion {
  JoinRequest request;
  int gpus = 1;
  std::uint64_t device_bytes = 0;
  bool tuned_paper = false;  ///< the tuning file timed the paper flow faster on this GPU set
  Rates rates;
  copart::ScratchSizes scratch;
  /// Both relations' key samples, taken when the plans are made (the caller reports its plan phase).
  std::function<std::array<copart::KeySample, 2>()> samples;
  /// The paper flow's plan for these relations, or nullopt where it would refuse them (more chunksets
  /// than the merge phase takes, merge buffers that host memory cannot hold, no plan).
  std::function<std::optional<sort::SortPlan>()> paper_plan;
  /// Why host memory cannot hold `bytes` more (nullopt: it can).
  std::function<std::optional<std::string>(std::uint64_t bytes)> host_refuses;
  timing::Clock::time_point start = timing::Clock::now();  ///< the join's
};

/// Chooses the flow for R and S.
/// @throw InputError when the co-partitioned flow is asked for and cannot run (ranges output, or R
///        and S do not fit), or MGJOIN_BUCKET_RESIDENT or MGJOIN_COPART_PASSES is bad where a bucket
///        plan is made.
FlowChoice choose_flow(const RelationView& r, const RelationView& s, const FlowQuestion& q);

/// Why the paper flow takes over from a co-partitioned run that failed before any output (`failure`,
/// rethrown by the caller when this is nullopt): a plan missed; or, Auto and bucketed, host memory
/// short of the output beside the buckets.
std::optional<std::string> paper_after(const std::exception_ptr& failure, const FlowChoice& choice, JoinStrategy strategy);

}  // namespace mgjoin::detail
