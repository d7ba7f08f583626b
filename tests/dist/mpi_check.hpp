#pragma once
// What the MPI test programs of tests/dist share (they are not GoogleTest: each rank checks, rank 0
// prints, and the exit status says whether every rank passed): the rank and size, check(), the seed
// every rank draws from, each rank's row range, the closing tally, and how the ranks' rows travel.
//
// MGJOIN_TEST_RANK_EXCHANGE picks the exchange: unset or "mpi", the free functions (host memory over
// MPI, CI); "nccl", a dist::Engine that makes its NCCL communicator; "nccl-external", a dist::Engine
// over an NCCL communicator this program makes, as an engine that already has one would. With either
// NCCL form each rank's local join runs on its GPU; the single-process reference stays on the CPU path.
#include <mgjoin/distributed.hpp>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

namespace mgjoin::test::mpi {

inline int rank = 0, ranks = 1;
inline int failures = 0;

inline void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

/// Initializes MPI (the engine runs OpenMP threads inside each rank; only the main thread calls MPI)
/// and returns the seed every rank draws from: rank 0's MGJOIN_TEST_SEED, else a fresh one, printed.
inline std::uint64_t start(int& argc, char**& argv, const char* program) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("MGJOIN_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d rank(s), MGJOIN_TEST_SEED=%llu\n", program, ranks, static_cast<unsigned long long>(seed));
  return seed;
}

/// This rank's rows of a relation of n rows: [n·rank/ranks, n·(rank+1)/ranks).
inline std::pair<std::int64_t, std::int64_t> my_rows(std::int64_t n) { return {n * rank / ranks, n * (rank + 1) / ranks}; }

/// The exchange the checks join through (MGJOIN_TEST_RANK_EXCHANGE, above).
struct Exchange {
  std::unique_ptr<mgjoin::dist::Engine> engine;  ///< null: the free functions
  ncclComm_t own = nullptr;                      ///< "nccl-external": this program's communicator
  std::string name = "mpi";
  ~Exchange() {
    engine.reset();
    if (own) ncclCommDestroy(own);
  }
};

/// An NCCL communicator over MPI_COMM_WORLD on this rank's GPU (its place on the node), made the way an
/// MPI program makes one: rank 0's unique id broadcast, then ncclCommInitRank on every rank.
inline ncclComm_t make_nccl_comm() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_rank = 0;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_free(&node);
  ncclUniqueId id{};
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) throw std::runtime_error("ncclGetUniqueId failed");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (cudaSetDevice(node_rank) != cudaSuccess) throw std::runtime_error("no GPU " + std::to_string(node_rank));
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, ranks, id, rank) != ncclSuccess) throw std::runtime_error("ncclCommInitRank failed");
  return comm;
}

inline Exchange& exchange() {
  static Exchange e;
  static bool made = false;
  if (made) return e;
  made = true;
  const char* v = std::getenv("MGJOIN_TEST_RANK_EXCHANGE");
  e.name = v && *v ? v : "mpi";
  if (e.name == "nccl") {
    e.engine = std::make_unique<mgjoin::dist::Engine>(MPI_COMM_WORLD, mgjoin::dist::RankExchange::Nccl);
  } else if (e.name == "nccl-external") {
    e.own = make_nccl_comm();
    e.engine = std::make_unique<mgjoin::dist::Engine>(MPI_COMM_WORLD, e.own);
  } else if (e.name != "mpi") {
    std::fprintf(stderr, "MGJOIN_TEST_RANK_EXCHANGE '%s': expected mpi, nccl or nccl-external\n", v);
    std::exit(2);
  }
  if (rank == 0) std::printf("rows travel over %s\n", e.name.c_str());
  return e;
}

/// GPUs of each rank's local join: none (the CPU path: CI has no GPU) unless the rows travel over NCCL.
inline int local_gpus() { return exchange().engine ? 1 : 0; }

/// Set while a test makes a rank's GPU decline the GPU route (MGJOIN_TEST_RANK_GPUS_DECLINE).
inline bool declined = false;

/// Whether the ranks' joins that the co-partitioned flow runs whole run on their GPUs: over NCCL (each
/// rank's local join on its GPU), unless a rank's GPU declines.
inline bool on_rank_gpus() { return exchange().engine != nullptr && !declined; }

/// Whether `result` has a phase named `name` (the ranks' steps are "ranks.<step>").
inline bool has_phase(const mgjoin::JoinResult& result, const std::string& name) {
  for (const mgjoin::PhaseStat& p : result.phases)
    if (p.name == name) return true;
  return false;
}

/// dist::join through the exchange in use.
inline mgjoin::dist::DistributedResult dist_join(mgjoin::RelationView r, mgjoin::RelationView s, const mgjoin::JoinOptions& o) {
  return exchange().engine ? exchange().engine->join(r, s, o) : mgjoin::dist::join(r, s, o, MPI_COMM_WORLD);
}

/// dist::join_tables through the exchange in use.
inline mgjoin::dist::DistributedTableResult dist_join_tables(const mgjoin::TableView& l, const mgjoin::TableView& r,
                                                             const mgjoin::TableJoinOptions& o) {
  return exchange().engine ? exchange().engine->join_tables(l, r, o) : mgjoin::dist::join_tables(l, r, o, MPI_COMM_WORLD);
}

/// Every rank's failures added up; rank 0 prints the verdict; MPI is finalized. Returns the exit status.
inline int finish(const char* program) {
  if (exchange().engine) exchange().engine.reset();  // (its communicator before MPI goes)
  if (exchange().own) ncclCommDestroy(std::exchange(exchange().own, nullptr));
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %s (%d failed check(s))\n", program, all_failures ? "FAILED" : "passed", all_failures);
  MPI_Finalize();
  return all_failures ? 1 : 0;
}

}  // namespace mgjoin::test::mpi
