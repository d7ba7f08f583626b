// Links mgjoin::distributed from the installed package (built, not run: it would need mpirun).
#include <mgjoin/distributed.hpp>

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::vector<std::int64_t> r{1, 2, 3}, s{2, 3, 4};
  const mgjoin::RelationView rv{{r.data(), r.size(), mgjoin::DType::Int64}, std::nullopt};
  const mgjoin::RelationView sv{{s.data(), s.size(), mgjoin::DType::Int64}, std::nullopt};
  mgjoin::JoinOptions options;
  options.output = mgjoin::OutputMode::Count;
  const auto result = mgjoin::dist::join(rv, sv, options, MPI_COMM_WORLD);
  std::printf("%llu matches\n", static_cast<unsigned long long>(result.count));
  MPI_Finalize();
}
