// dist::join (<mgjoin/distributed.hpp> draws the flow). Steps alternate: a local step, which may fail on
// one rank, runs inside agreed() so that every rank learns of a failure before the next collective;
// collectives run only between local steps (a rank that throws inside one would leave the others
// waiting in it).
#include <mgjoin/distributed.hpp>

#include "core/checked_math.hpp"
#include "core/device.hpp"
#include "engine/src/copart/partition_plan.hpp"
#include "engine/src/copart/splitters.hpp"

#include <mgjoin/engine.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <exception>
#include <numeric>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace mgjoin::dist {
namespace {

using copart::Side;
static_assert(kMaxRanks == copart::kMaxGpus, "ranks are the destinations of the co-partitioned plan");

struct Comm {
  MPI_Comm comm;
  int rank = 0, size = 1;
  explicit Comm(MPI_Comm c) : comm(c) {
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
  }
};

/// Runs the local `step` on every rank, then the ranks agree on whether it failed anywhere: if so every
/// rank throws RankError with the message of the lowest rank that failed.
template <class Step>
auto agreed(const Comm& c, Step&& step) -> decltype(step()) {
  std::optional<decltype(step())> value;
  std::string error;
  RankError::Kind kind = RankError::Kind::Error;
  try {
    value.emplace(step());
  } catch (const std::exception& e) {
    error = *e.what() ? e.what() : "failed";
    if (dynamic_cast<const InputError*>(&e)) kind = RankError::Kind::Input;
    if (dynamic_cast<const OutOfMemory*>(&e)) kind = RankError::Kind::OutOfMemory;
    if (dynamic_cast<const Cancelled*>(&e)) kind = RankError::Kind::Cancelled;
  } catch (...) {
    error = "failed with an exception that is not a std::exception";
  }
  const int mine = error.empty() ? INT_MAX : c.rank;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c.comm);
  if (first == INT_MAX) return std::move(*value);
  int head[2] = {c.rank == first ? static_cast<int>(error.size()) : 0, static_cast<int>(kind)};
  MPI_Bcast(head, 2, MPI_INT, first, c.comm);
  error.resize(static_cast<std::size_t>(head[0]));
  MPI_Bcast(error.data(), head[0], MPI_CHAR, first, c.comm);
  throw RankError(first, static_cast<RankError::Kind>(head[1]), error);
}

/// What every rank's slices must agree on: key type, and each side's payload type (-1: none).
std::array<int, 3> layout_of(const RelationView& r, const RelationView& s) {
  return {static_cast<int>(r.key.type), r.payload ? static_cast<int>(r.payload->type) : -1,
          s.payload ? static_cast<int>(s.payload->type) : -1};
}

/// Every rank's value of `mine`, rank by rank.
template <class T>
std::vector<T> all_gather(const Comm& c, T mine) {
  static_assert(sizeof(T) == 8);
  std::vector<T> all(static_cast<std::size_t>(c.size));
  MPI_Allgather(&mine, 1, std::is_signed_v<T> ? MPI_INT64_T : MPI_UINT64_T, all.data(), 1,
                std::is_signed_v<T> ? MPI_INT64_T : MPI_UINT64_T, c.comm);
  return all;
}

/// The key sample of one relation over all ranks: each rank samples in proportion to its rows (all of
/// them while the relation has at most kSampleRows rows), so the gathered keys weigh the same.
copart::KeySample global_sample(const Comm& c, const ColumnView& keys, const std::vector<std::int64_t>& rows) {
  const std::int64_t total = std::accumulate(rows.begin(), rows.end(), std::int64_t{0});
  const copart::KeySample mine = agreed(c, [&] {
    const std::int64_t m = total <= copart::kSampleRows
                               ? keys.size
                               : std::max<std::int64_t>(keys.size ? 1 : 0, keys.size * copart::kSampleRows / total);
    return copart::sample_keys(keys, m, 1 + static_cast<std::uint64_t>(c.rank));
  });
  const std::vector<std::int64_t> counts = all_gather(c, static_cast<std::int64_t>(mine.keys.size()));
  std::vector<int> n(counts.begin(), counts.end()), at(counts.size(), 0);
  std::exclusive_scan(n.begin(), n.end(), at.begin(), 0);
  copart::KeySample all;
  all.rows = total;
  all.keys.resize(static_cast<std::size_t>(std::accumulate(n.begin(), n.end(), 0)));
  MPI_Allgatherv(mine.keys.data(), n[static_cast<std::size_t>(c.rank)], MPI_UINT64_T, all.keys.data(), n.data(), at.data(),
                 MPI_UINT64_T, c.comm);
  std::sort(all.keys.begin(), all.keys.end());
  return all;
}

/// One column of rows bound for the ranks, destination by destination.
struct Outbound {
  std::vector<std::byte> bytes;
  std::vector<int> rows;  ///< per destination rank
};

/// Lays out `column` (rows of `width` bytes) by destination: row i goes to each rank of dest[i].
Outbound pack(const void* column, int width, const std::vector<copart::Destinations>& dest, int ranks) {
  Outbound out;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(ranks), 0);
  for (const auto& d : dest)
    for (int k = 0; k < d.count; ++k) ++rows[static_cast<std::size_t>(d.first + k)];
  // MPI counts and displacements are ints.
  const std::int64_t sent = std::accumulate(rows.begin(), rows.end(), std::int64_t{0});
  MGJOIN_INPUT_EXPECTS(sent <= INT_MAX, "this rank sends " + std::to_string(sent) +
                                            " rows, more than one MPI exchange holds (2^31 - 1): use more ranks");
  std::vector<std::int64_t> next(static_cast<std::size_t>(ranks), 0);
  std::exclusive_scan(rows.begin(), rows.end(), next.begin(), std::int64_t{0});
  out.bytes.resize(static_cast<std::size_t>(std::accumulate(rows.begin(), rows.end(), std::int64_t{0})) * width);
  const auto* in = static_cast<const std::byte*>(column);
  for (std::size_t i = 0; i < dest.size(); ++i)
    for (int k = 0; k < dest[i].count; ++k)
      std::memcpy(out.bytes.data() + next[static_cast<std::size_t>(dest[i].first + k)]++ * width, in + i * width,
                  static_cast<std::size_t>(width));
  out.rows.assign(rows.begin(), rows.end());
  return out;
}

/// Sends each rank its rows of `out` and returns, in a column of `type`, the rows every rank sent this
/// one, rank by rank. The column is taken in an agreed step between the two collectives: a rank that
/// cannot hold what it is sent fails there, not inside the exchange.
HostColumn exchange(const Comm& c, const Outbound& out, DType type) {
  const int width = static_cast<int>(dtype_size(type));
  std::vector<int> in_rows(static_cast<std::size_t>(c.size));
  MPI_Alltoall(out.rows.data(), 1, MPI_INT, in_rows.data(), 1, MPI_INT, c.comm);
  HostColumn in = agreed(c, [&] {
    const std::int64_t total = std::accumulate(in_rows.begin(), in_rows.end(), std::int64_t{0});
    MGJOIN_INPUT_EXPECTS(total <= INT_MAX, "this rank receives " + std::to_string(total) +
                                               " rows, more than one MPI exchange holds (2^31 - 1): use more ranks");
    return HostColumn::allocate(type, total);
  });
  std::vector<int> send_at(out.rows.size()), recv_at(in_rows.size());
  std::exclusive_scan(out.rows.begin(), out.rows.end(), send_at.begin(), 0);
  std::exclusive_scan(in_rows.begin(), in_rows.end(), recv_at.begin(), 0);
  MPI_Datatype row;
  MPI_Type_contiguous(width, MPI_BYTE, &row);
  MPI_Type_commit(&row);
  MPI_Alltoallv(out.bytes.data(), out.rows.data(), send_at.data(), row, in.data(), in_rows.data(), recv_at.data(), row,
                c.comm);
  MPI_Type_free(&row);
  return in;
}

/// Sends this rank's slice of one relation to the ranks owning its keys; returns what this rank owns.
Relation shuffle(const Comm& c, const RelationView& rel, Side side, const copart::PartitionPlan& plan, std::int64_t first_row) {
  const int key_width = static_cast<int>(dtype_size(rel.key.type));
  const int payload_width = rel.payload ? static_cast<int>(dtype_size(rel.payload->type)) : 0;
  auto [keys, payloads] = agreed(c, [&] {
    std::vector<copart::Destinations> dest(static_cast<std::size_t>(rel.size()));
    for (std::int64_t i = 0; i < rel.size(); ++i)
      dest[static_cast<std::size_t>(i)] =
          copart::destinations(plan, side, copart::ordered_key(rel.key, i), static_cast<std::uint64_t>(first_row + i));
    std::pair<Outbound, Outbound> out{pack(rel.key.data, key_width, dest, c.size), {}};
    if (rel.payload) out.second = pack(rel.payload->data, payload_width, dest, c.size);
    return out;
  });
  Relation here;
  here.key = exchange(c, keys, rel.key.type);
  if (rel.payload) here.payload = exchange(c, payloads, rel.payload->type);  // every rank or none (layouts agreed)
  return here;
}

/// This rank's place among the ranks of its node (collective).
struct NodePlace {
  int rank = 0, size = 1;
};
NodePlace node_place(const Comm& c) {
  MPI_Comm node;
  MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node);
  const Comm on_node(node);
  MPI_Comm_free(&node);
  return {on_node.rank, on_node.size};
}

/// The local join's options: unless they name GPUs, each rank of a node takes its own share of the
/// node's GPUs (one each by default: one rank per GPU), so that ranks on one node never share one.
JoinOptions options_for_rank(const JoinOptions& options, NodePlace place) {
  JoinOptions local = options;
  const int devices = gpu::device_count();
  if (options.gpus == 0 || !options.gpu_ids.empty() || devices == 0) return local;
  const int each = options.gpus > 0 ? options.gpus : std::max(1, devices / place.size);
  MGJOIN_INPUT_EXPECTS((place.rank + 1) * each <= devices,
                       "JoinOptions::gpus: " + std::to_string(place.size) + " ranks on this node with " + std::to_string(each) +
                           " GPU(s) each need " + std::to_string(place.size * each) + " GPUs; it has " + std::to_string(devices));
  local.gpu_ids.resize(static_cast<std::size_t>(each));
  std::iota(local.gpu_ids.begin(), local.gpu_ids.end(), place.rank * each);
  return local;
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
  const auto first_row = [&](const std::vector<std::int64_t>& rows) {
    return std::accumulate(rows.begin(), rows.begin() + c.rank, std::int64_t{0});
  };
  const copart::KeySample r_sample = global_sample(c, r.key, r_rows), s_sample = global_sample(c, s.key, s_rows);
  const copart::PartitionPlan plan = agreed(c, [&] { return copart::choose_plan(r_sample, s_sample, c.size); });

  Relation r_here = shuffle(c, r, Side::R, plan, first_row(r_rows));
  Relation s_here = shuffle(c, s, Side::S, plan, first_row(s_rows));

  DistributedResult result;
  result.ranks = c.size;
  result.r_rows = r_here.key.size();
  result.s_rows = s_here.key.size();
  const NodePlace place = node_place(c);
  result.local = agreed(c, [&] { return mgjoin::join(r_here.view(), s_here.view(), options_for_rank(options, place)); });
  CheckedSum total;
  for (const std::uint64_t n : all_gather(c, result.local.count)) total.add(n);
  agreed(c, [&] {
    MGJOIN_INPUT_EXPECTS(!total.overflowed, "the ranks' outputs add up to 2^64 rows or more");
    return 0;
  });
  result.count = total.value;
  return result;
}

}  // namespace mgjoin::dist
