// run_passes: a plan in passes run pass by pass (passes.hpp; copart/pass_plan.hpp draws the flow).
#include "engine/src/flows/copart/passes.hpp"

#include "alloc/host_memory.hpp"
#include "engine/src/flows/copart/bucket_pass1.hpp"
#include "engine/src/join/output_count.hpp"
#include "core/cancel.hpp"
#include "core/checked_math.hpp"

#include <mgjoin/error.hpp>

#include <optional>
#include <string>
#include <vector>

namespace mgjoin::copart {
namespace {

/// The first pass's spill for `plan`, where it has one and host memory holds it: one pinned bucket of X's
/// rows beyond the first range (from the pinned column cache), which the passes after read as their X;
/// nullopt otherwise (they then read X whole).
std::optional<Buckets> make_spill(const RelationView& r, const RelationView& s, const PassPlan& plan) {
  if (!plan.spill_rows) return std::nullopt;
  const bool r_spills = plan.spill_side == Side::R;
  const CopartPlan& first = plan.passes.front();
  try {
    alloc::expect_host_memory(plan.spill_bytes, "the first pass's spill");
    return std::optional<Buckets>(std::in_place, r_spills ? r : s, r_spills ? first.r : first.s,
                                  std::vector<std::int64_t>{plan.spill_rows});
  } catch (const OutOfMemory&) {
    return std::nullopt;
  }
}

}  // namespace

void run_passes(const RelationView& r, const RelationView& s, const PassPlan& plan, OutputMode output,
                const CopartContext& context, JoinResult& result) {
  MGJOIN_EXPECTS(output != OutputMode::Ranges, "the co-partitioned flow has no ranges output");
  MGJOIN_EXPECTS(plan.fits && plan.count() >= 1, "run_passes needs a plan that fits");
  const int k = plan.count();
  std::optional<OutputColumns> columns;
  if (output == OutputMode::Materialize)
    columns.emplace(r, s, plan.passes[0].r, plan.passes[0].s, result, static_cast<int>(context.devices.size()),
                    context.sink);
  std::optional<Buckets> spill = make_spill(r, s, plan);
  CheckedSum count;
  for (int p = 0; p < k; ++p) {
    detail::throw_if_cancelled();
    // Pass p joins its range of the keys: about its share of the whole output, which the columns'
    // growth extrapolates from.
    const OutputInto into{columns ? &*columns : nullptr, static_cast<double>(p) / k, static_cast<double>(p + 1) / k};
    CopartContext pass_context = context;
    pass_context.spill = p == 0 && spill ? &*spill : nullptr;
    RelationView pr = r, ps = s;
    if (p > 0 && spill) (plan.spill_side == Side::R ? pr : ps) = spill->group(0);
    JoinResult part;
    run_copart(pr, ps, plan.passes[p], output, pass_context, part, into);
    count.add(part.count);
    for (const PhaseStat& phase : part.phases)
      result.phases.push_back({"pass" + std::to_string(p + 1) + "." + phase.name, phase.seconds, phase.bytes_pcie, phase.bytes_nvlink});
  }
  if (count.overflowed) mgjoin::detail::throw_output_overflow("the passes");
  if (columns)
    columns->finish();
  else
    result.count = count.value;
}

}  // namespace mgjoin::copart
