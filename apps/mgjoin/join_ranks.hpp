#pragma once
// `mgjoin join` started by an MPI launcher (`mpirun -np N mgjoin join ...`, `srun --mpi=pmix ...`): every
// rank reads its slice of each input file (rows [n·i/N, n·(i+1)/N) of rank i), the ranks join through
// libmgjoin_dist (<mgjoin/distributed.hpp>), rank 0 alone prints the count or summary, and a materialized
// output is written per rank as part directories (`part-<i>/key.npy`, `r.payload.npy`, `s.payload.npy`)
// plus `manifest.json` (`"format": "mgjoin-parts"`), committed only once every rank has staged its part.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <functional>
#include <optional>
#include <string>

namespace mgjoin::cli {

/// Whether an MPI launcher started this process as one of two or more ranks (Open MPI's, PMI's or
/// Slurm's world size in the environment).
bool launched_as_ranks();

/// What one `mgjoin join` across ranks asks for.
struct RankJoinRequest {
  std::string r_key, r_payload, s_key, s_payload;  ///< files; payloads optional
  std::optional<DType> r_type, r_payload_type, s_type, s_payload_type;  ///< raw files' dtypes
  std::string out_dir;  ///< empty: count only
  bool json = false;
  JoinOptions options;  ///< the engine flags, and output Count or Materialize
};

/// Runs the join on this rank (collective over MPI_COMM_WORLD); `request` reads and checks the options
/// (on every rank, inside the ranks' agreement). An error on any rank ends every rank: rank 0 prints
/// the first failing rank's error once, and every rank exits with the status one process would (2 for
/// bad input, the interrupted status after Ctrl-C, else 1). @throw InputError where this mgjoin was
/// built without MPI.
void run_join_ranks(const std::function<RankJoinRequest()>& request);

}  // namespace mgjoin::cli
