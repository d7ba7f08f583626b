// dist::join (<mgjoin/distributed.hpp> draws the flow): local steps inside agreed(), collectives between
// them (dist/collectives.hpp).
#include <mgjoin/distributed.hpp>

#include "core/timing.hpp"
#include "dist/collectives.hpp"
#include "dist/rank_gpus.hpp"

#include <mgjoin/engine.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mgjoin::dist {
namespace {

using copart::Side;
using namespace detail;
static_assert(kMaxRanks == copart::kMaxGpus, "ranks are the destinations of the co-partitioned plan");
/// What every rank's slices must agree on: the key's type, and each side's payload type or none.
std::string layout_of(const RelationView& r, const RelationView& s) {
  const auto type = [](const std::optional<MutableColumnView>& p) { return p ? std::string(dtype_name(p->type)) : "none"; };
  return std::string(dtype_name(r.key.type)) + "," + type(r.payload) + "," + type(s.payload);
}

/// Sends this rank's slice of one relation to the ranks owning its keys; returns what this rank owns.
Relation shuffle(const Comm& c, const RelationView& rel, Side side, const copart::PartitionPlan& plan, std::int64_t first_row,
                 const NcclRows* nccl) {
  const std::vector<copart::Destinations> dest = agreed(c, [&] { return destinations_of(plan, side, rel.key, first_row); });
  Relation here;
  here.key = send_to_owners(c, rel.key, dest, nccl);
  if (rel.payload) here.payload = send_to_owners(c, *rel.payload, dest, nccl);  // every rank or none (layouts agreed)
  return here;
}

}  // namespace

void agree(MPI_Comm comm, const std::function<void()>& step) {
  agreed(Comm(comm), [&] {
    step();
    return 0;
  });
}

DistributedResult join(RelationView r, RelationView s, const JoinOptions& options, MPI_Comm comm) {
  return join_ranks(r, s, options, Comm(comm), nullptr, nullptr);
}

DistributedResult detail::join_ranks(RelationView r, RelationView s, const JoinOptions& options, const Comm& c,
                                     const NcclRows* nccl, mgjoin::Engine* local) {
  StepClock clock;
  agreed(c, [&] {
    check_rank_count(c);
    MGJOIN_INPUT_EXPECTS(options.output == OutputMode::Count || options.output == OutputMode::Materialize,
                         "JoinOptions::output: a distributed join counts or materializes (ranges index one process's inputs)");
    validate_relations(r, s);
    return 0;
  });
  // Every rank's slices must have the same types: the first rank that differs from rank 0 is named.
  expect_layout_of_root(c, layout_of(r, s), "its slices' key or payload types differ from rank 0's");
  // The options that choose the ranks' steps (the route, what crosses) must agree too: a rank that took
  // other steps would wait in a collective the others never call.
  expect_layout_of_root(c, std::to_string(static_cast<int>(options.output)) + "," + strategy_name(options.strategy),
                        "its join options (output, strategy) differ from rank 0's");

  clock.mark("check");
  // On the ranks' GPUs where they can: the slices start crossing to them before the plan is made.
  std::unique_ptr<RankGpuJoin> on_gpus;
  if (options.strategy != JoinStrategy::Paper && rank_gpus_can_join(c, r, s, options.output, local, nccl))
    on_gpus = RankGpuJoin::start(c, *nccl, *local, r, s, options.output);
  const std::vector<std::int64_t> r_rows = all_gather(c, r.size()), s_rows = all_gather(c, s.size());
  RankPlan plan{{}, global_sample(c, r.key, r_rows), global_sample(c, s.key, s_rows), first_row(c, r_rows), first_row(c, s_rows)};
  plan.partitions = agreed(c, [&] { return copart::choose_plan(plan.r_sample, plan.s_sample, c.size); });

  clock.mark("plan");
  DistributedResult result;
  result.ranks = c.size;
  if (on_gpus) {
    const auto start = timing::Clock::now();
    if (std::optional<RankJoined> joined = on_gpus->finish(c, plan)) {
      clock.mark("gpus");
      result.local = std::move(joined->local);
      result.local.seconds = timing::seconds_since(start);
      result.r_rows = joined->r_rows;
      result.s_rows = joined->s_rows;
      result.count = total_count(c, result.local.count);
      clock.prepend_to(result.local.phases);
      return result;
    }
    on_gpus.reset();  // its GPU memory back before the host route's local join
  }
  Relation r_here = shuffle(c, r, Side::R, plan.partitions, plan.r_first, nccl);
  Relation s_here = shuffle(c, s, Side::S, plan.partitions, plan.s_first, nccl);

  clock.mark("shuffle");
  result.r_rows = r_here.key.size();
  result.s_rows = s_here.key.size();
  const NodePlace place = node_place(c);
  result.local = agreed(c, [&] {
    return local ? local->join(r_here.view(), s_here.view(), options_for_engine(options))
                 : mgjoin::join(r_here.view(), s_here.view(), options_for_rank(options, place));
  });
  clock.mark("local_join");
  result.count = total_count(c, result.local.count);
  clock.prepend_to(result.local.phases);
  return result;
}

}  // namespace mgjoin::dist
