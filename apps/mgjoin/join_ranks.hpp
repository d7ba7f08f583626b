#pragma once
// `mgjoin join` started by an MPI launcher (`mpirun -np N mgjoin join ...`, `srun --mpi=pmix ...`): every
// rank reads its slice of each input file (rows [n·i/N, n·(i+1)/N) of rank i), the ranks join through
// libmgjoin_dist (<mgjoin/distributed.hpp>), rank 0 alone prints the count or summary, and a materialized
// output is written per rank as part directories (`part-<i>/key.npy`, `r.payload.npy`, `s.payload.npy`)
// plus `manifest.json` (`"format": "mgjoin-parts"`), committed only once every rank has staged its part.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <optional>
#include <string>

namespace mgjoin::cli {

/// Whether an MPI launcher started this process (Open MPI, PMI or PMIx environment variables).
bool launched_as_ranks();

/// What one `mgjoin join` across ranks asks for.
struct RankJoinRequest {
  std::string r_key, r_payload, s_key, s_payload;  ///< files; payloads optional
  std::optional<DType> r_type, r_payload_type, s_type, s_payload_type;  ///< raw files' dtypes
  std::string out_dir;  ///< empty: count only
  bool json = false;
  JoinOptions options;  ///< the engine flags, and output Count or Materialize
};

/// Runs the join on this rank (collective over MPI_COMM_WORLD). Rank 0 throws the first failing rank's
/// error (the caller prints it); the other ranks end the process with status 1 without a word, so the
/// error is printed once. @throw InputError where this mgjoin was built without MPI.
void run_join_ranks(const RankJoinRequest& request);

}  // namespace mgjoin::cli
