#pragma once
// Joins across MPI ranks (libmgjoin_dist, built where MPI is found): each rank holds a slice of R and
// of S, the ranks agree on shared splitters from a global key sample, every rank's rows go to the rank
// that owns their key range (the co-partitioned flow's plan, hot keys included, with ranks in the place
// of GPUs), and each rank joins what it received with the single-process engine (its GPUs, or the CPU
// path). The count is summed over the ranks; a materialized output stays with the rank that made it,
// one part of the whole per rank.
//
//   rank i: R_i, S_i ── sample ─► allgather ─► splitters (same on every rank)
//           R_i, S_i ── partition by the splitters ─► exchange (MPI_Alltoallv of host memory) ─►
//           R'_i, S'_i ─► mgjoin::join ─► count (summed) │ part i of the output
//
// Every call is collective over the communicator. A rank that fails (bad input, no memory) does not
// leave the others waiting: after each step the ranks agree on whether all went well, and every rank
// throws RankError with the first failing rank's message.
#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>

namespace mgjoin::dist {

/// Another rank (or this one) failed a step of a collective call; what() names the rank, kind() says
/// what the failing rank threw (so that callers answer as they would in one process).
class RankError : public Error {
 public:
  enum class Kind : int { Error = 0, Input = 1, OutOfMemory = 2, Cancelled = 3 };
  RankError(int rank, Kind kind, const std::string& message)
      : Error("rank " + std::to_string(rank) + ": " + message), rank_(rank), kind_(kind) {}
  int rank() const { return rank_; }
  Kind kind() const { return kind_; }

 private:
  int rank_;
  Kind kind_;
};

struct DistributedResult {
  std::uint64_t count = 0;  ///< output rows of all ranks together (the same on every rank)
  int ranks = 1;
  JoinResult local;         ///< this rank's part: its output rows (Materialize), its count, its phases
  std::int64_t r_rows = 0, s_rows = 0;  ///< rows of R and S this rank joined (its key range's)
};

/// Runs `step` on this rank, then the ranks of `comm` agree on whether it failed on any of them: if so
/// every rank throws RankError with the message of the lowest rank that failed (collective). Callers wrap
/// their own local steps between collectives in it (reading a rank's slice, writing its part).
void agree(MPI_Comm comm, const std::function<void()>& step);

/// Most ranks one join spans (the splitters' plan; as many as the co-partitioned flow's GPUs).
inline constexpr int kMaxRanks = 16;

/// Joins the slices `r` and `s` of this rank with those of every other rank of `comm` (collective; slices
/// may be empty and of any length; their order across ranks is the rank order). `options` is the
/// single-process join every rank runs on what it receives (OutputMode::Count or Materialize). Unless
/// it names GPUs (`gpu_ids`) or asks for none (`gpus = 0`: the CPU path), each rank of a node takes its
/// own `gpus` of the node's GPUs, in node-rank order (by default an equal share: one rank per GPU).
/// @throw RankError when any rank fails a step (every rank throws it, naming the first that failed).
DistributedResult join(RelationView r, RelationView s, const JoinOptions& options, MPI_Comm comm);

struct DistributedTableResult {
  std::uint64_t count = 0;  ///< output rows of all ranks together (the same on every rank)
  int ranks = 1;
  /// This rank's part of the output, as join_tables() gives it for the rows this rank joined: its
  /// columns (TableOutput::Columns), or its gather maps, whose row indices are into the whole tables
  /// (every rank's slice, one after another in rank order). The parts of all ranks, in any order, are
  /// the output of the join of the whole tables; within a part, the pairs come first, then the part's
  /// unmatched rows.
  TableJoinResult local;
  std::int64_t left_received = 0, right_received = 0;  ///< rows of each table this rank received and joined
};

/// join_tables() across the ranks of `comm` (collective): each rank holds a slice of the left and of the
/// right table (the same column names and types on every rank, any lengths, in rank order). Every kind,
/// output form and key of join_tables: the ranks agree on splitters of the packed key, send each row's
/// key columns (and, for TableOutput::Columns, its chosen payload columns; for gather maps, its row
/// index) to the rank owning its key, and each rank runs join_tables on what it received. A hot key is
/// spread over several ranks only where the kind allows it: an inner join either side, a left outer,
/// semi or anti join only the left side's rows (the right side's are copied), a right outer join only
/// the right side's, a full outer join neither (its rows all go to one rank).
/// @throw RankError when any rank fails a step (every rank throws it, naming the first that failed).
DistributedTableResult join_tables(const TableView& left, const TableView& right, const TableJoinOptions& options,
                                   MPI_Comm comm);

}  // namespace mgjoin::dist
