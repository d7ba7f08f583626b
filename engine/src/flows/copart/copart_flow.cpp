// run_copart: a co-partitioned plan run by its variant (copart_flow.hpp).
#include "engine/src/flows/copart/copart_flow.hpp"

#include "engine/src/flows/copart/streamed.hpp"

#include <mgjoin/error.hpp>

#include <optional>

namespace mgjoin::copart {

void run_copart(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
                const CopartContext& context, JoinResult& result, const OutputInto& into) {
  MGJOIN_EXPECTS(output != OutputMode::Ranges, "the co-partitioned flow has no ranges output");
  std::optional<OutputColumns> own;
  OutputColumns* out = into.columns;
  if (output == OutputMode::Materialize && !out) out = &own.emplace(r, s, plan.r, plan.s, result, static_cast<int>(context.devices.size()), context.sink);
  if (output != OutputMode::Materialize) out = nullptr;
  if (plan.streamed) {
    StreamedJoin join(r, s, plan, context);
    join.run(out, into, result);
  } else {
    OutputInto in_core = into;
    in_core.columns = out;
    InCoreJoin join(r, s, plan, output, context, in_core);
    join.start();
    join.finish(result);
  }
  if (own) own->finish();
}

}  // namespace mgjoin::copart
