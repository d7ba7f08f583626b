#pragma once
// What the MPI test programs of tests/dist share (they are not GoogleTest: each rank checks, rank 0
// prints, and the exit status says whether every rank passed): the rank and size, check(), the seed
// every rank draws from, each rank's row range, and the closing tally.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
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

/// Every rank's failures added up; rank 0 prints the verdict; MPI is finalized. Returns the exit status.
inline int finish(const char* program) {
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %s (%d failed check(s))\n", program, all_failures ? "FAILED" : "passed", all_failures);
  MPI_Finalize();
  return all_failures ? 1 : 0;
}

}  // namespace mgjoin::test::mpi
