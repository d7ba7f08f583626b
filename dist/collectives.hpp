#pragma once
// The MPI steps of libmgjoin_dist's joins (private to dist/): a communicator's rank and size, the
// agreement after each local step, gathers, the global key sample, and the exchange of rows by
// destination. A local step that may fail on one rank runs inside agreed(), so that every rank learns of
// a failure before the next collective; collectives run only between local steps (a rank that threw
// inside one would leave the others waiting in it).
#include <mgjoin/distributed.hpp>
#include <mgjoin/engine.hpp>

#include "core/timing.hpp"
#include "engine/src/api/copart.hpp"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mgjoin::dist::detail {

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

/// Every rank's value of `mine`, rank by rank.
template <class T>
std::vector<T> all_gather(const Comm& c, T mine) {
  static_assert(sizeof(T) == 8);
  std::vector<T> all(static_cast<std::size_t>(c.size));
  MPI_Allgather(&mine, 1, std::is_signed_v<T> ? MPI_INT64_T : MPI_UINT64_T, all.data(), 1,
                std::is_signed_v<T> ? MPI_INT64_T : MPI_UINT64_T, c.comm);
  return all;
}

/// Rows of the ranks before this one, from every rank's row count.
std::int64_t first_row(const Comm& c, const std::vector<std::int64_t>& rows);

/// The key sample of one relation over all ranks: each rank samples in proportion to its rows (all of
/// them while the relation has at most kSampleRows rows), so the gathered keys weigh the same.
copart::KeySample global_sample(const Comm& c, const ColumnView& keys, const std::vector<std::int64_t>& rows);

/// One column of rows bound for the ranks, destination by destination.
struct Outbound {
  std::unique_ptr<std::byte[]> bytes;  ///< (not zeroed: pack writes every byte, on all threads)
  std::vector<std::int64_t> rows;      ///< per destination rank
};

/// Lays out `column` (rows of `width` bytes) by destination: row i goes to each rank of dest[i].
Outbound pack(const void* column, int width, const std::vector<copart::Destinations>& dest, int ranks);

/// Where each row of `keys` goes under `plan` (rows numbered globally from `first_row`).
std::vector<copart::Destinations> destinations_of(const copart::PartitionPlan& plan, copart::Side side,
                                                  const ColumnView& keys, std::int64_t first_row);

/// Throws InputError where the communicator has more ranks than a join spans (kMaxRanks).
void check_rank_count(const Comm& c);

/// Checks that this rank's `layout` (what its slices hold: column names and types) equals rank 0's
/// (collective). @throw RankError on every rank, naming the first rank whose layout differs, with `message`.
void expect_layout_of_root(const Comm& c, const std::string& layout, const std::string& message);

class NcclRows;

/// Where an exchange's rows lie: the rows this rank sends each rank and each rank sends this one, where
/// each destination's rows start in what is sent (the Outbound), and where each source's rows start in
/// what is received.
struct ExchangeLayout {
  std::vector<std::int64_t> out_rows, in_rows, send_at, recv_at;
  std::int64_t received() const { return recv_at.back() + in_rows.back(); }
};

/// The layout of an exchange in which this rank sends out_rows[d] rows to rank d, in rank order
/// (collective: every rank learns what it is sent).
ExchangeLayout exchange_layout(const Comm& c, std::vector<std::int64_t> out_rows);

/// Sends each rank its rows of `out` and returns, in a column of `type`, the rows every rank sent this
/// one, rank by rank: through host memory over MPI, or through the ranks' GPUs over `nccl` when given
/// (nccl_rows.hpp). The column is taken in an agreed step between the two collectives: a rank that
/// cannot hold what it is sent fails there, not inside the exchange. Any number of rows: where a rank's
/// rows outgrow MPI's int counts, the MPI exchange goes in rounds of at most 64 MiB per rank.
HostColumn exchange(const Comm& c, const Outbound& out, DType type, const NcclRows* nccl = nullptr);

/// Sends each row of `column` to the ranks of its `dest` entry (an agreed pack, then exchange) and
/// returns the rows every rank sent this one, rank by rank (collective).
HostColumn send_to_owners(const Comm& c, const ColumnView& column, const std::vector<copart::Destinations>& dest,
                          const NcclRows* nccl = nullptr);

/// The wall time of a collective call's steps on this rank, as phases named "ranks.<step>" (put before
/// the local join's own in the result).
class StepClock {
 public:
  StepClock() : last_(timing::Clock::now()) {}
  /// Ends the step running since the last mark.
  void mark(const char* step) {
    const auto now = timing::Clock::now();
    phases_.push_back({std::string("ranks.") + step, std::chrono::duration<double>(now - last_).count(), 0, 0});
    last_ = now;
  }
  /// Puts the steps before `phases`.
  void prepend_to(std::vector<PhaseStat>& phases) const { phases.insert(phases.begin(), phases_.begin(), phases_.end()); }

 private:
  timing::Clock::time_point last_;
  std::vector<PhaseStat> phases_;
};

/// This rank's place among the ranks of its node (collective).
struct NodePlace {
  int rank = 0, size = 1;
};
NodePlace node_place(const Comm& c);

/// The local join's options: unless they name GPUs, each rank of a node takes its own share of the
/// node's GPUs (one each by default: one rank per GPU), so that ranks on one node never share one.
JoinOptions options_for_rank(const JoinOptions& options, NodePlace place);

/// The first GPU a rank of a node takes by default (options_for_rank's share): its NCCL device.
/// @throw InputError when the node has no GPU for it.
int default_rank_gpu(NodePlace place);

/// dist::join and dist::join_tables over `c`, the rows travelling over `nccl` when given, each rank's
/// local joins on `local` when given (else on an engine made for the call); on the ranks' GPUs whole
/// where both are given and the join allows it (rank_gpus.hpp). The public functions and dist::Engine
/// call these.
DistributedResult join_ranks(RelationView r, RelationView s, const JoinOptions& options, const Comm& c,
                             const NcclRows* nccl, mgjoin::Engine* local);
DistributedTableResult join_tables_ranks(const TableView& left, const TableView& right, const TableJoinOptions& options,
                                         const Comm& c, const NcclRows* nccl, mgjoin::Engine* local);

/// The local join's options for `local`: options_for_rank's, with the EngineOptions part left at its
/// default (the engine was made from it).
JoinOptions options_for_engine(const JoinOptions& options);

/// The ranks' counts added up (collective). @throw RankError on every rank when they reach 2^64.
std::uint64_t total_count(const Comm& c, std::uint64_t mine);

}  // namespace mgjoin::dist::detail
