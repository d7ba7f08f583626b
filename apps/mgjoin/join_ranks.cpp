#include "join_ranks.hpp"

#include "interrupt.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "core/device.hpp"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#ifdef MGJOIN_WITH_MPI
#include <mgjoin/distributed.hpp>

#include <mpi.h>
#endif

namespace mgjoin::cli {

bool launched_as_ranks() {
  // A one-rank job (srun -n1, mpirun -np 1) runs as one process: every option of `mgjoin join` works.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (const char* size = std::getenv(name); size && std::atoi(size) > 1) return true;
  return false;
}

#ifndef MGJOIN_WITH_MPI

void run_join_ranks(const std::function<RankJoinRequest()>&) {
  throw InputError("this mgjoin was built without MPI (install libopenmpi-dev and rebuild): it cannot join across "
                   "the ranks an MPI launcher started; run it without mpirun");
}

#else

namespace {

namespace fs = std::filesystem;

/// MPI for the length of one command (the engine's OpenMP threads never call it).
class MpiSession {
 public:
  MpiSession() {
    int ready = 0;
    MPI_Initialized(&ready);
    if (ready) return;
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    owned_ = true;
  }
  ~MpiSession() {
    if (owned_) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool owned_ = false;
};

/// This rank's slice of one input: rows [n·rank/ranks, n·(rank + 1)/ranks) of the key file and of the
/// payload file, if any (which must have as many rows).
Relation read_slice(const std::string& key, const std::string& payload, std::optional<DType> key_type,
                    std::optional<DType> payload_type, int rank, int ranks, MemoryKind memory) {
  const ColumnFileInfo info = inspect_column_file(key, key_type);
  if (!payload.empty()) {
    const ColumnFileInfo p = inspect_column_file(payload, payload_type);
    MGJOIN_INPUT_EXPECTS(p.size == info.size, payload + ": " + std::to_string(p.size) + " rows, but its key file " + key +
                                                  " has " + std::to_string(info.size));
  }
  const std::int64_t first = info.size * rank / ranks, last = info.size * (rank + 1) / ranks;
  Relation s;
  s.key = read_column_rows(key, first, last - first, key_type, memory);
  if (!payload.empty()) s.payload = read_column_rows(payload, first, last - first, payload_type, memory);
  return s;
}

/// Test hook (MGJOIN_TEST_KILL_RANK="<rank>:<step>"): that rank ends itself with SIGKILL at `step` (read:
/// its slices read, before the exchange; staged: its part staged, before any rank commits), as a rank
/// lost to the OOM killer or a node's failure would, so that the launcher's handling can be tested.
void test_kill_point(int rank, const char* step) {
  const char* spec = std::getenv("MGJOIN_TEST_KILL_RANK");
  if (spec && std::string(spec) == std::to_string(rank) + ":" + step) ::raise(SIGKILL);
}

/// Ends every rank after a failed step: rank 0 prints the error once, and all finalize MPI (so no launcher
/// kills rank 0 before it has printed) and exit with the status one process would.
[[noreturn]] void fail(const dist::RankError& e, int rank) {
  if (rank == 0) {
    if (e.kind() == dist::RankError::Kind::Cancelled)
      std::fprintf(stderr, "\nmgjoin: interrupted: stopped cleanly, no output was committed (%s)\n", e.what());
    else
      std::fprintf(stderr, "mgjoin: error: %s\n", e.what());
    std::fflush(stderr);
  }
  MPI_Finalize();
  std::exit(e.kind() == dist::RankError::Kind::Input ? 2 : e.kind() == dist::RankError::Kind::Cancelled ? kInterruptedExit : 1);
}

}  // namespace

void run_join_ranks(const std::function<RankJoinRequest()>& request) {
  const MpiSession session;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  try {
    RankJoinRequest q;
    dist::agree(MPI_COMM_WORLD, [&] { q = request(); });
    q.options.cancel = &interrupt_flag();  // mpirun passes Ctrl-C to every rank
    const bool writes = !q.out_dir.empty();
    const fs::path out_dir = q.out_dir;
    Relation r, s;
    dist::agree(MPI_COMM_WORLD, [&] {
      if (writes && rank == 0) {
        prepare_output_directory(out_dir, "--out-dir");
        fs::remove(out_dir / "manifest.json");  // the manifest marks committed parts: a new one comes last
      }
      // Pageable: the slices only cross MPI; what a rank's GPUs copy is what it receives.
      r = read_slice(q.r_key, q.r_payload, q.r_type, q.r_payload_type, rank, ranks, MemoryKind::Pageable);
      s = read_slice(q.s_key, q.s_payload, q.s_type, q.s_payload_type, rank, ranks, MemoryKind::Pageable);
    });
    test_kill_point(rank, "read");
    const dist::DistributedResult result = dist::join(r.view(), s.view(), q.options, MPI_COMM_WORLD);

    std::vector<std::string> outputs;
    if (writes) {
      // Every rank stages its part; only when all have does any commit; rank 0 then writes the manifest.
      const fs::path part = out_dir / ("part-" + std::to_string(rank));
      std::vector<StagedColumnFile> staged;
      dist::agree(MPI_COMM_WORLD, [&] {
        fs::create_directories(part);
        staged.push_back(stage_column(part / "key.npy", result.local.key.view()));
        if (r.payload) staged.push_back(stage_column(part / "r.payload.npy", result.local.r_payload.view()));
        if (s.payload) staged.push_back(stage_column(part / "s.payload.npy", result.local.s_payload.view()));
        throw_if_interrupted();
      });
      test_kill_point(rank, "staged");
      // Every rank still there before any renames: one lost in between ends the job (the launcher kills
      // the others here) with nothing committed. One lost during the renames leaves parts but no
      // manifest.json, which alone marks a complete output.
      MPI_Barrier(MPI_COMM_WORLD);
      dist::agree(MPI_COMM_WORLD, [&] { commit_all(staged); });
      std::vector<std::uint64_t> rows(static_cast<std::size_t>(ranks));
      const std::uint64_t mine = result.local.count;
      MPI_Gather(&mine, 1, MPI_UINT64_T, rows.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
      dist::agree(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        PartsTable table;
        for (const StagedColumnFile& f : staged) table.columns.push_back(f.final_path().filename().string());
        for (int i = 0; i < ranks; ++i) {
          table.part_dirs.push_back(out_dir / ("part-" + std::to_string(i)));
          table.part_rows.push_back(static_cast<std::int64_t>(rows[static_cast<std::size_t>(i)]));
        }
        write_parts_manifest(out_dir, table);
        outputs.push_back((out_dir / "manifest.json").string());
      });
    }
    if (rank != 0) return;
    if (q.json) {
      nlohmann::json j{{"count", result.count}, {"ranks", ranks}, {"executor", result.local.executor},
                       {"strategy_reason", result.local.strategy_reason}, {"output_files", outputs}};
      std::printf("%s\n", j.dump(2).c_str());
    } else if (!writes) {
      std::printf("%llu\n", static_cast<unsigned long long>(result.count));
    } else {
      std::fprintf(stderr, "mgjoin: %llu rows joined across %d ranks into %s (manifest.json and part-0 ... part-%d)\n",
                   static_cast<unsigned long long>(result.count), ranks, out_dir.c_str(), ranks - 1);
    }
  } catch (const dist::RankError& e) {
    fail(e, rank);
  }
}

#endif

}  // namespace mgjoin::cli
