#include "join_ranks.hpp"

#include "commands.hpp"
#include "failure.hpp"
#include "interrupt.hpp"
#include "join_outputs.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/io.hpp>

#include "core/device.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

/// This rank's slice of one table: rows [n·rank/ranks, n·(rank + 1)/ranks) of each of its columns,
/// which have n rows each.
struct Slice {
  std::vector<HostColumn> columns;
  TableView view;
};

/// Rows [first, last) of a column: of its file, or of its parts read as one column (the pieces of the
/// parts the rows span, one after another), into `memory`.
HostColumn read_rows(const RankColumn& c, std::int64_t first, std::int64_t last, MemoryKind memory) {
  if (c.parts.empty()) return read_column_rows(c.path, first, last - first, c.raw_type, memory);
  std::vector<HostColumn> pieces;
  std::int64_t start = 0, rows = 0;  // the part's first row in the whole column
  for (std::size_t p = 0; p < c.parts.size(); start += c.part_rows[p], ++p) {
    const std::int64_t lo = std::max(first, start), hi = std::min(last, start + c.part_rows[p]);
    if (lo >= hi) continue;
    pieces.push_back(read_column_rows(c.parts[p], lo - start, hi - lo, c.raw_type, MemoryKind::Pageable));
    rows += hi - lo;
  }
  if (pieces.size() == 1) return std::move(pieces.front());
  const DType type = pieces.empty() ? inspect_column_file(c.parts.front(), c.raw_type).type : pieces.front().type();
  HostColumn whole = HostColumn::allocate(type, rows, memory);
  std::size_t at = 0;
  for (const HostColumn& piece : pieces) {
    std::memcpy(whole.as<std::byte>() + at, piece.data(), piece.bytes());
    at += piece.bytes();
  }
  return whole;
}

Slice read_slice(const std::vector<RankColumn>& columns, std::int64_t n, int rank, int ranks, MemoryKind memory) {
  Slice s;
  const std::int64_t first = n * rank / ranks, last = n * (rank + 1) / ranks;
  s.columns.reserve(columns.size());
  for (const RankColumn& c : columns) {
    s.columns.push_back(read_rows(c, first, last, memory));
    s.view.columns.push_back({c.name, s.columns.back().view()});
  }
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
      report_failure("interrupted", std::string("stopped cleanly, no output was committed (") + e.what() + ")",
                     /*own_line=*/true);
    else
      report_failure("error", in_cli_words(e.what()));
  }
  MPI_Finalize();
  std::exit(e.kind() == dist::RankError::Kind::Input       ? kBadInputExit
            : e.kind() == dist::RankError::Kind::Cancelled ? kInterruptedExit
                                                           : 1);
}

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Of an earlier table's files (`earlier`, from table_files_in), those the new one did not replace: its
/// whole-table column files and its part folders past this run's ranks (its manifest is gone already).
std::vector<fs::path> beside(const std::vector<fs::path>& earlier, const PartsTable& table) {
  std::vector<fs::path> left;
  for (const fs::path& p : earlier)
    if (p.filename() != "manifest.json" && std::find(table.part_dirs.begin(), table.part_dirs.end(), p) == table.part_dirs.end())
      left.push_back(p);
  return left;
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
    q.options.join.cancel = &interrupt_flag();  // mpirun passes Ctrl-C to every rank
    const bool writes = !q.out_dir.empty();
    const fs::path out_dir = q.out_dir;
    Slice r, s;
    const auto t_read = std::chrono::steady_clock::now();
    // Pinned where the rows may cross to the rank's GPU (NCCL: the flow on the GPUs copies the slices
    // straight from there at full PCIe speed); pageable for MPI's exchange, which packs them on the host.
    const bool to_gpus = q.rank_exchange != "mpi" && q.options.join.gpus != 0 && gpu::device_count() > 0;
    const MemoryKind memory = to_gpus ? MemoryKind::Pinned : MemoryKind::Pageable;
    dist::agree(MPI_COMM_WORLD, [&] {
      r = read_slice(q.left, q.left_rows, rank, ranks, memory);
      s = read_slice(q.right, q.right_rows, rank, ranks, memory);
    });
    test_kill_point(rank, "read");
    const auto t_start = std::chrono::steady_clock::now();
    // Over NCCL where asked, or (auto) where the ranks join on GPUs and each has one of its own.
    const dist::RankExchange exchange = q.rank_exchange == "nccl" ? dist::RankExchange::Nccl
                                        : q.rank_exchange == "mpi" || q.options.join.gpus == 0 ? dist::RankExchange::Mpi
                                                                                               : dist::RankExchange::Auto;
    const dist::Engine engine(MPI_COMM_WORLD, exchange);
    const auto t_join = std::chrono::steady_clock::now();
    // Apart: the engine's start (GPUs, NCCL's communicator) took seconds that read_seconds counted (s23).
    const double read_s = seconds_between(t_read, t_start), start_s = seconds_between(t_start, t_join);
    const dist::DistributedTableResult result = engine.join_tables(r.view, s.view, q.options);
    const auto t_write = std::chrono::steady_clock::now();
    const double join_s = seconds_between(t_join, t_write);

    std::vector<std::string> outputs;
    if (writes) {
      // Every rank stages its part; only when all have does any commit; rank 0 then writes the manifest.
      const fs::path part = out_dir / ("part-" + std::to_string(rank));
      std::vector<StagedColumnFile> staged;
      dist::agree(MPI_COMM_WORLD, [&] {
        prepare_output_directory(out_dir, "--out-dir");
        MGJOIN_INPUT_EXPECTS(!fs::is_symlink(part), "--out-dir " + part.string() + ": a link; the part is not written through it");
        fs::create_directories(part);
        staged = stage_join_outputs(part, result.local, q.options);
        throw_if_interrupted();
      });
      test_kill_point(rank, "staged");
      // Every rank still there before any renames: one lost in between ends the job (the launcher kills
      // the others here) with nothing committed and an earlier table as it was. From here on the
      // manifest, which alone marks a complete output, is gone until the new one is written last: a rank
      // lost during the renames leaves parts but no manifest.json.
      MPI_Barrier(MPI_COMM_WORLD);
      std::vector<fs::path> earlier;  // rank 0, --overwrite: the earlier table's files, found beside its manifest
      dist::agree(MPI_COMM_WORLD, [&] {
        if (rank != 0 || !q.overwrite) return;
        earlier = table_files_in(out_dir);
        remove_table_files(std::vector<fs::path>{out_dir / "manifest.json"});
      });
      dist::agree(MPI_COMM_WORLD, [&] { commit_all(staged, q.overwrite ? table_files_in(part) : std::vector<fs::path>{}); });
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
        remove_table_files(beside(earlier, table));
        write_parts_manifest(out_dir, table);
        outputs.push_back((out_dir / "manifest.json").string());
      });
    }
    const double write_s = seconds_between(t_write, std::chrono::steady_clock::now());
    if (rank != 0) return;
    if (q.json) {
      // How rank 0's own join ran (its executor, strategy and phases), and the wall time of the whole
      // collective join as rank 0 saw it (every rank waits for the last in the exchange).
      nlohmann::json j = run_summary(result.local);
      j["seconds"] = join_s;
      j["count"] = result.count;
      j["how"] = join_kind_name(q.options.how);
      j["ranks"] = ranks;
      j["rank_exchange"] = engine.exchange() == dist::RankExchange::Nccl ? "nccl" : "mpi";
      j["read_seconds"] = read_s;
      j["start_seconds"] = start_s;
      j["write_seconds"] = write_s;
      j["output_files"] = outputs;
      std::printf("%s\n", j.dump(2).c_str());
    } else if (!writes) {
      std::printf("%llu\n", static_cast<unsigned long long>(result.count));
    } else {
      std::fprintf(stderr, "mgjoin: %llu rows joined (%s) across %d ranks into %s (manifest.json and part-0 ... part-%d)\n",
                   static_cast<unsigned long long>(result.count), join_kind_name(q.options.how), ranks, out_dir.c_str(), ranks - 1);
    }
  } catch (const dist::RankError& e) {
    fail(e, rank);
  }
}

#endif

}  // namespace mgjoin::cli
