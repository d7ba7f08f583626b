// dist::join (<mgjoin/distributed.hpp> draws the flow): local steps inside agreed(), collectives between
// them (dist/collectives.hpp).
#include <mgjoin/distributed.hpp>

#include "dist/collectives.hpp"

#include <mgjoin/engine.hpp>

#include <array>
#include <utility>
#include <vector>

namespace mgjoin::dist {
namespace {

using copart::Side;
using namespace detail;
static_assert(kMaxRanks == copart::kMaxGpus, "ranks are the destinations of the co-partitioned plan");
/// What every rank's slices must agree on: key type, and each side's payload type (-1: none).
std::array<int, 3> layout_of(const RelationView& r, const RelationView& s) {
  return {static_cast<int>(r.key.type), r.payload ? static_cast<int>(r.payload->type) : -1,
          s.payload ? static_cast<int>(s.payload->type) : -1};
}

/// Sends this rank's slice of one relation to the ranks owning its keys; returns what this rank owns.
Relation shuffle(const Comm& c, const RelationView& rel, Side side, const copart::PartitionPlan& plan, std::int64_t first_row) {
  const int key_width = static_cast<int>(dtype_size(rel.key.type));
  const int payload_width = rel.payload ? static_cast<int>(dtype_size(rel.payload->type)) : 0;
  auto [keys, payloads] = agreed(c, [&] {
    const std::vector<copart::Destinations> dest = destinations_of(plan, side, rel.key, first_row);
    std::pair<Outbound, Outbound> out{pack(rel.key.data, key_width, dest, c.size), {}};
    if (rel.payload) out.second = pack(rel.payload->data, payload_width, dest, c.size);
    return out;
  });
  Relation here;
  here.key = exchange(c, keys, rel.key.type);
  if (rel.payload) here.payload = exchange(c, payloads, rel.payload->type);  // every rank or none (layouts agreed)
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
  const Comm c(comm);
  agreed(c, [&] {
    MGJOIN_INPUT_EXPECTS(c.size <= kMaxRanks, "a distributed join spans at most " + std::to_string(kMaxRanks) + " ranks, not " +
                                                  std::to_string(c.size));
    MGJOIN_INPUT_EXPECTS(options.output == OutputMode::Count || options.output == OutputMode::Materialize,
                         "JoinOptions::output: a distributed join counts or materializes (ranges index one process's inputs)");
    validate_relations(r, s);
    return 0;
  });
  // Every rank's slices must have the same types: the first rank that differs from rank 0 is named.
  std::array<int, 3> layout = layout_of(r, s), root = layout;
  MPI_Bcast(root.data(), 3, MPI_INT, 0, comm);
  agreed(c, [&] {
    MGJOIN_INPUT_EXPECTS(layout == root, "its slices' key or payload types differ from rank 0's");
    return 0;
  });

  const std::vector<std::int64_t> r_rows = all_gather(c, r.size()), s_rows = all_gather(c, s.size());
  const copart::KeySample r_sample = global_sample(c, r.key, r_rows), s_sample = global_sample(c, s.key, s_rows);
  const copart::PartitionPlan plan = agreed(c, [&] { return copart::choose_plan(r_sample, s_sample, c.size); });

  Relation r_here = shuffle(c, r, Side::R, plan, first_row(c, r_rows));
  Relation s_here = shuffle(c, s, Side::S, plan, first_row(c, s_rows));

  DistributedResult result;
  result.ranks = c.size;
  result.r_rows = r_here.key.size();
  result.s_rows = s_here.key.size();
  const NodePlace place = node_place(c);
  result.local = agreed(c, [&] { return mgjoin::join(r_here.view(), s_here.view(), options_for_rank(options, place)); });
  result.count = total_count(c, result.local.count);
  return result;
}

}  // namespace mgjoin::dist
