// dist::join (<mgjoin/distributed.hpp> draws the flow): local steps inside agreed(), collectives between
// them (dist/collectives.hpp).
#include <mgjoin/distributed.hpp>

#include "dist/collectives.hpp"

#include <mgjoin/engine.hpp>

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
  return join_ranks(r, s, options, Comm(comm), nullptr);
}

DistributedResult detail::join_ranks(RelationView r, RelationView s, const JoinOptions& options, const Comm& c,
                                     const NcclRows* nccl) {
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

  clock.mark("check");
  const std::vector<std::int64_t> r_rows = all_gather(c, r.size()), s_rows = all_gather(c, s.size());
  const copart::KeySample r_sample = global_sample(c, r.key, r_rows), s_sample = global_sample(c, s.key, s_rows);
  const copart::PartitionPlan plan = agreed(c, [&] { return copart::choose_plan(r_sample, s_sample, c.size); });

  clock.mark("plan");
  Relation r_here = shuffle(c, r, Side::R, plan, first_row(c, r_rows), nccl);
  Relation s_here = shuffle(c, s, Side::S, plan, first_row(c, s_rows), nccl);

  clock.mark("shuffle");
  DistributedResult result;
  result.ranks = c.size;
  result.r_rows = r_here.key.size();
  result.s_rows = s_here.key.size();
  const NodePlace place = node_place(c);
  result.local = agreed(c, [&] { return mgjoin::join(r_here.view(), s_here.view(), options_for_rank(options, place)); });
  clock.mark("local_join");
  result.count = total_count(c, result.local.count);
  clock.prepend_to(result.local.phases);
  return result;
}

}  // namespace mgjoin::dist
