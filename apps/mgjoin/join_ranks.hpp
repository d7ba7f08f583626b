#pragma once
// `mgjoin join` started by an MPI launcher (`mpirun -np N mgjoin join ...`, `srun --mpi=pmix ...`): every
// rank reads its slice of each input column (rows [n·i/N, n·(i+1)/N) of rank i, of a whole file or across
// the parts of a table in parts, which need not number N), the ranks join the
// tables through libmgjoin_dist (dist::join_tables in <mgjoin/distributed.hpp>), rank 0 alone prints the
// count or summary, and an output is written per rank as part directories (`part-<i>/` holding the files
// one process writes: `key.npy`, `r.<name>.npy`, ..., or `r.row.npy` and `s.row.npy` for gather maps)
// plus `manifest.json` (`"format": "mgjoin-parts"`), committed only once every rank has staged its part.
#include <mgjoin/table.hpp>
#include <mgjoin/types.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mgjoin::cli {

/// Whether an MPI launcher started this process as one of two or more ranks (Open MPI's, PMI's or
/// Slurm's world size in the environment).
bool launched_as_ranks();

/// One column every rank reads its rows of: its name in the table, its file and, for a raw file, its dtype;
/// for a table in parts, its file in every part with each part's rows (the parts read as one column).
struct RankColumn {
  std::string name, path;
  std::optional<DType> raw_type;
  std::vector<std::string> parts;
  std::vector<std::int64_t> part_rows;
};

/// What one `mgjoin join` across ranks asks for (checked: the files' headers agree in length and types).
struct RankJoinRequest {
  std::vector<RankColumn> left, right;  ///< the columns the join reads: keys, then chosen payloads
  std::int64_t left_rows = 0, right_rows = 0;  ///< rows of every column file of each side
  TableJoinOptions options;             ///< kind, output form, keys, chosen columns and the engine flags
  std::string out_dir;                  ///< empty: count only
  bool overwrite = false;               ///< --overwrite: replace the table an earlier run left in out_dir
  bool json = false;
  std::string rank_exchange = "auto";  ///< --rank-exchange: auto, mpi or nccl (checked)
};

/// Runs the join on this rank (collective over MPI_COMM_WORLD); `request` reads and checks the options
/// (on every rank, inside the ranks' agreement). An error on any rank ends every rank: rank 0 prints
/// the first failing rank's error once, and every rank exits with the status one process would (2 for
/// bad input, the interrupted status after Ctrl-C, else 1). @throw InputError where this mgjoin was
/// built without MPI.
void run_join_ranks(const std::function<RankJoinRequest()>& request);

}  // namespace mgjoin::cli
