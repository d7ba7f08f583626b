#include "join_ranks.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "core/device.hpp"

#include <nlohmann/json.hpp>

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
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

#ifndef MGJOIN_WITH_MPI

void run_join_ranks(const RankJoinRequest&) {
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

/// Rank 0 rethrows the ranks' error for the caller to print; the others leave quietly.
[[noreturn]] void fail(const dist::RankError& e, int rank) {
  if (rank == 0) throw Error(e.what());
  MPI_Finalize();
  std::exit(1);
}

}  // namespace

void run_join_ranks(const RankJoinRequest& q) {
  const MpiSession session;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const bool writes = !q.out_dir.empty();
  const fs::path out_dir = q.out_dir;
  try {
    const MemoryKind memory = q.options.gpus != 0 && gpu::device_count() > 0 ? MemoryKind::Pinned : MemoryKind::Pageable;
    Relation r, s;
    dist::agree(MPI_COMM_WORLD, [&] {
      if (writes && rank == 0) prepare_output_directory(out_dir, "--out-dir");
      r = read_slice(q.r_key, q.r_payload, q.r_type, q.r_payload_type, rank, ranks, memory);
      s = read_slice(q.s_key, q.s_payload, q.s_type, q.s_payload_type, rank, ranks, memory);
    });
    const dist::DistributedResult result = dist::join(r.view(), s.view(), q.options, MPI_COMM_WORLD);

    std::vector<std::string> outputs;
    if (writes) {
      // Every rank stages its part; only when all have does any commit; rank 0 then writes the manifest.
      const std::string part = "part-" + std::to_string(rank);
      std::vector<StagedColumnFile> staged;
      dist::agree(MPI_COMM_WORLD, [&] {
        fs::create_directories(out_dir / part);
        staged.push_back(stage_column(out_dir / part / "key.npy", result.local.key.view()));
        if (r.payload)
          staged.push_back(stage_column(out_dir / part / "r.payload.npy", result.local.r_payload.view()));
        if (s.payload)
          staged.push_back(stage_column(out_dir / part / "s.payload.npy", result.local.s_payload.view()));
      });
      dist::agree(MPI_COMM_WORLD, [&] { commit_all(staged); });
      std::vector<std::uint64_t> rows(static_cast<std::size_t>(ranks));
      const std::uint64_t mine = result.local.count;
      MPI_Gather(&mine, 1, MPI_UINT64_T, rows.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
      dist::agree(MPI_COMM_WORLD, [&] {
        if (rank != 0) return;
        nlohmann::json manifest{{"format", "mgjoin-parts"}, {"version", 1}, {"ranks", ranks}, {"rows", result.count}};
        for (const StagedColumnFile& f : staged) manifest["columns"].push_back(f.final_path().filename().string());
        for (int i = 0; i < ranks; ++i)
          manifest["parts"].push_back({{"dir", "part-" + std::to_string(i)}, {"rows", rows[static_cast<std::size_t>(i)]}});
        const fs::path path = out_dir / "manifest.json";
        const fs::path temp = out_dir / ".manifest.json.tmp";
        std::FILE* f = std::fopen(temp.c_str(), "w");
        MGJOIN_INPUT_EXPECTS(f, temp.string() + ": cannot write the manifest");
        const std::string text = manifest.dump(2) + "\n";
        const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
        MGJOIN_INPUT_EXPECTS(std::fclose(f) == 0 && written, temp.string() + ": cannot write the manifest");
        fs::rename(temp, path);
        outputs.push_back(path.string());
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
