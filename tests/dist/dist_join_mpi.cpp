// dist::join under `mpirun -np N` (ctest runs N = 1..4) on the CPU path, against the single-process
// join of the same relations: every rank draws the same whole relations from the seed, passes its slice
// (row ranges, sizes not divisible by N, some empty), and the ranks' counts and output tuples, gathered
// on rank 0, must equal the single-process ones. Inputs: random (4- and 8-byte, signed and unsigned
// keys), one hot key holding half of S, all keys equal, empty relations, fewer rows than ranks. Then a
// rank that fails (its slices' types differ from rank 0's) must make every rank throw RankError naming
// it, with no rank left waiting; rows over NCCL asked of ranks without a GPU are refused the same way.
// MGJOIN_TEST_RANK_EXCHANGE=nccl|nccl-external runs the same checks with the rows over NCCL (mpi_check.hpp).
//
// Not GoogleTest: each rank checks, rank 0 prints, and the exit status says whether every rank passed.
// MGJOIN_TEST_SEED replays a seed.
#include <mgjoin/distributed.hpp>
#include <mgjoin/engine.hpp>
#include <mgjoin/join.hpp>

#include <mpi.h>

#include "mpi_check.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using mgjoin::DType;
using mgjoin::HostColumn;
using mgjoin::JoinOptions;
using mgjoin::OutputMode;

using namespace mgjoin::test::mpi;  // rank, ranks, check, my_rows

/// A whole relation: keys (as 64-bit values, stored in the key type) and 8-byte payloads.
struct Whole {
  DType key_type;
  std::vector<std::uint64_t> keys;  ///< in the key type's bytes, low first
  std::vector<std::uint64_t> payload;
  bool has_payload = true;
};

/// Rows [first, last) of `w` in columns of its types.
std::pair<HostColumn, HostColumn> slice(const Whole& w, std::int64_t first, std::int64_t last) {
  const auto n = last - first;
  HostColumn k = HostColumn::allocate(w.key_type, n), p = HostColumn::allocate(DType::UInt64, n);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t v = w.keys[static_cast<std::size_t>(first + i)];
    if (mgjoin::dtype_size(w.key_type) == 4) {
      const auto v32 = static_cast<std::uint32_t>(v);
      std::memcpy(k.as<std::byte>() + i * 4, &v32, 4);
    } else {
      std::memcpy(k.as<std::byte>() + i * 8, &v, 8);
    }
    p.as<std::uint64_t>()[i] = w.payload[static_cast<std::size_t>(first + i)];
  }
  return {std::move(k), std::move(p)};
}

mgjoin::RelationView view(std::pair<HostColumn, HostColumn>& cols, bool payload) {
  mgjoin::RelationView v{{cols.first.data(), cols.first.size(), cols.first.type()}, std::nullopt};
  if (payload) v.payload = mgjoin::MutableColumnView{cols.second.data(), cols.second.size(), DType::UInt64};
  return v;
}

using Tuple = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;

std::vector<Tuple> tuples_of(const mgjoin::JoinResult& res) {
  std::vector<Tuple> t(static_cast<std::size_t>(res.key.size()));
  const std::size_t kb = mgjoin::dtype_size(res.key.type());
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::uint64_t k = 0;
    std::memcpy(&k, res.key.as<std::byte>() + i * kb, kb);
    t[i] = {k, res.r_payload.size() ? res.r_payload.as<std::uint64_t>()[i] : 0,
            res.s_payload.size() ? res.s_payload.as<std::uint64_t>()[i] : 0};
  }
  return t;
}

/// Every rank's tuples, on rank 0 (empty elsewhere).
std::vector<Tuple> gather_tuples(const std::vector<Tuple>& mine) {
  const int n = static_cast<int>(mine.size() * 3);
  std::vector<int> counts(static_cast<std::size_t>(ranks)), at(static_cast<std::size_t>(ranks));
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < ranks; ++i) at[static_cast<std::size_t>(i)] = std::exchange(total, total + counts[static_cast<std::size_t>(i)]);
  std::vector<std::uint64_t> flat, all(static_cast<std::size_t>(rank == 0 ? total : 0));
  for (const auto& [a, b, c] : mine) flat.insert(flat.end(), {a, b, c});
  MPI_Gatherv(flat.data(), n, MPI_UINT64_T, all.data(), counts.data(), at.data(), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  std::vector<Tuple> out;
  for (std::size_t i = 0; i + 2 < all.size(); i += 3) out.emplace_back(all[i], all[i + 1], all[i + 2]);
  return out;
}

/// The distributed join of R and S against the single-process one, count and materialized.
void check_join(const std::string& name, const Whole& r, const Whole& s) {
  for (const OutputMode output : {OutputMode::Count, OutputMode::Materialize}) {
    const std::string what = name + (output == OutputMode::Count ? ", count" : ", materialize");
    JoinOptions options;
    options.gpus = 0;  // the reference: the CPU path
    options.output = output;
    auto rw = slice(r, 0, static_cast<std::int64_t>(r.keys.size()));
    auto sw = slice(s, 0, static_cast<std::int64_t>(s.keys.size()));
    const mgjoin::JoinResult expected = mgjoin::join(view(rw, r.has_payload), view(sw, s.has_payload), options);
    options.gpus = local_gpus();
    const auto [r0, r1] = my_rows(static_cast<std::int64_t>(r.keys.size()));
    const auto [s0, s1] = my_rows(static_cast<std::int64_t>(s.keys.size()));
    auto rs = slice(r, r0, r1), ss = slice(s, s0, s1);
    try {
      const mgjoin::dist::DistributedResult got =
          dist_join(view(rs, r.has_payload), view(ss, s.has_payload), options);
      check(got.count == expected.count, what + ": count " + std::to_string(got.count) + ", single process " +
                                             std::to_string(expected.count));
      check(got.ranks == ranks, what + ": ranks");
      // Over NCCL each rank joins on its GPU, so the flow runs there whole; otherwise through the host.
      const char* route = on_rank_gpus() ? "ranks.gpus" : "ranks.shuffle";
      check(has_phase(got.local, route), what + ": no phase " + route + " (the rows took the other route)");
      // Every row reached some rank (more with a hot key's copies), and no rank took them all.
      std::int64_t rows[2] = {got.r_rows, got.s_rows}, all[2] = {0, 0};
      MPI_Allreduce(rows, all, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      check(all[0] >= static_cast<std::int64_t>(r.keys.size()) && all[1] >= static_cast<std::int64_t>(s.keys.size()),
            what + ": rows lost in the shuffle");
      if (output == OutputMode::Materialize) {
        std::vector<Tuple> all = gather_tuples(tuples_of(got.local)), want = tuples_of(expected);
        if (rank == 0) {
          std::sort(all.begin(), all.end());
          std::sort(want.begin(), want.end());
          check(all == want, what + ": the ranks' output tuples differ from the single process's (" +
                                 std::to_string(all.size()) + " against " + std::to_string(want.size()) + ")");
        }
      }
    } catch (const std::exception& e) {
      check(false, what + ": threw " + e.what());
    }
  }
  if (rank == 0) std::printf("%s: checked\n", name.c_str());
}

Whole uniform(std::mt19937_64& rng, DType type, std::size_t n, std::uint64_t domain, bool payload = true) {
  Whole w{type, std::vector<std::uint64_t>(n), std::vector<std::uint64_t>(n), payload};
  std::uniform_int_distribution<std::uint64_t> pick(0, domain - 1);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t v = pick(rng) * 0x9E3779B97F4A7C15ull;  // spread over the key's width (and sign)
    w.keys[i] = mgjoin::dtype_size(type) == 4 ? (v >> 32) : v;
    w.payload[i] = rng();
  }
  return w;
}

/// Over NCCL, a rank whose GPU cannot hold its part, before the rows move and after: every rank takes
/// the host route together, and the result is still right (the others are not left waiting on the GPU
/// route's collectives).
void check_declined_gpus(const Whole& r, const Whole& s) {
  if (!on_rank_gpus()) return;
  for (const char* step : {"take", "plan"}) {
    const std::string spec = std::to_string(ranks - 1) + ":" + step;
    setenv("MGJOIN_TEST_RANK_GPUS_DECLINE", spec.c_str(), 1);
    declined = true;
    check_join(std::string("the last rank's GPU declining at ") + step, r, s);
    declined = false;
    unsetenv("MGJOIN_TEST_RANK_GPUS_DECLINE");
  }
}

/// A rank whose slices differ in type from rank 0's, then one whose options differ: every rank must throw
/// RankError naming that rank.
void check_a_failing_rank() {
  if (ranks < 2) return;
  // Rank 1's slices are valid on their own (both 4-byte keys): only the ranks' agreement catches them.
  const DType type = rank == 1 ? DType::UInt32 : DType::UInt64;
  auto r = slice(Whole{type, {1, 2, 3}, {0, 0, 0}, true}, 0, 3);
  auto s = slice(Whole{type, {1, 2}, {0, 0}, true}, 0, 2);
  JoinOptions options;
  options.gpus = local_gpus();
  options.output = OutputMode::Count;
  try {
    dist_join(view(r, true), view(s, true), options);
    check(false, "a rank with other key types: no error");
  } catch (const mgjoin::dist::RankError& e) {
    check(e.rank() == 1, std::string("a rank with other key types: the error names rank ") + std::to_string(e.rank()));
    check(e.kind() == mgjoin::dist::RankError::Kind::Input, "a rank with other key types: not an input error");
    check(std::string(e.what()).find("rank 1: its slices' key or payload types differ from rank 0's") == 0,
          std::string("a rank with other key types: ") + e.what());
  }
  // Rank 1 asks for another output: the ranks' steps would differ (what crosses), so it is refused, not
  // left to hang in a collective the others never call.
  JoinOptions other = options;
  if (rank == 1) other.output = OutputMode::Materialize;
  auto same = slice(Whole{DType::UInt64, {1, 2, 3}, {0, 0, 0}, true}, 0, 3);
  try {
    dist_join(view(same, true), view(same, true), other);
    check(false, "a rank with other options: no error");
  } catch (const mgjoin::dist::RankError& e) {
    check(e.rank() == 1 && e.kind() == mgjoin::dist::RankError::Kind::Input &&
              std::string(e.what()).find("rank 1: its join options (output, strategy) differ from rank 0's") == 0,
          std::string("a rank with other options: ") + e.what());
  }
  if (rank == 0) std::printf("a failing rank: checked\n");
}

/// Rows over NCCL asked of ranks without GPUs (CI): every rank throws RankError saying so, none waits.
/// With GPUs, a bad MGJOIN_NCCL_TIMEOUT is refused the same way, naming the variable.
void check_nccl_refusals() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  const char* what = devices == 0 ? "NCCL without GPUs" : "a bad MGJOIN_NCCL_TIMEOUT";
  if (devices > 0) setenv("MGJOIN_NCCL_TIMEOUT", "soon", 1);
  try {
    mgjoin::dist::Engine engine(MPI_COMM_WORLD, mgjoin::dist::RankExchange::Nccl);
    check(false, std::string(what) + ": no error");
  } catch (const mgjoin::dist::RankError& e) {
    check(e.rank() == 0 && e.kind() == mgjoin::dist::RankError::Kind::Input, std::string(what) + ": " + e.what());
    const char* says = devices == 0 ? "RankExchange::Nccl: " : "MGJOIN_NCCL_TIMEOUT 'soon'";
    check(std::string(e.what()).find(says) != std::string::npos, std::string(what) + ": " + e.what());
  }
  unsetenv("MGJOIN_NCCL_TIMEOUT");
  if (rank == 0) std::printf("%s: checked\n", what);
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t seed = mgjoin::test::mpi::start(argc, argv, "dist_join_mpi");
  std::mt19937_64 rng(seed);  // the same draws on every rank

  // Named draws: the order of a call's arguments is unspecified, and a seed must replay anywhere.
  const Whole r64 = uniform(rng, DType::Int64, 30'011, 20'000), s64 = uniform(rng, DType::Int64, 50'021, 20'000);
  check_join("random 8-byte signed keys", r64, s64);
  const Whole r32 = uniform(rng, DType::UInt32, 20'003, 9'000, false), s32 = uniform(rng, DType::UInt32, 40'009, 9'000);
  check_join("random 4-byte unsigned keys, R without payload", r32, s32);
  const Whole ri = uniform(rng, DType::Int32, 10'007, 3'000), si = uniform(rng, DType::Int32, 25'001, 3'000, false);
  check_join("random 4-byte signed keys, S without payload", ri, si);
  Whole hot_r = uniform(rng, DType::UInt64, 20'000, 50'000), hot_s = uniform(rng, DType::UInt64, 100'003, 50'000);
  for (std::size_t i = 0; i < hot_r.keys.size(); i += 500) hot_r.keys[i] = 42;
  for (std::size_t i = 0; i < hot_s.keys.size(); i += 2) hot_s.keys[i] = 42;
  check_join("one hot key holding half of S", hot_r, hot_s);
  check_join("all keys equal", Whole{DType::Int64, std::vector<std::uint64_t>(301, 7), std::vector<std::uint64_t>(301, 1), true},
             Whole{DType::Int64, std::vector<std::uint64_t>(203, 7), std::vector<std::uint64_t>(203, 2), true});
  const Whole s_of_empty = uniform(rng, DType::UInt64, 1000, 100);
  check_join("empty R", Whole{DType::UInt64, {}, {}, true}, s_of_empty);
  const Whole r_few = uniform(rng, DType::UInt64, 2, 3), s_few = uniform(rng, DType::UInt64, 3, 3);
  check_join("fewer rows than ranks", r_few, s_few);
  check_a_failing_rank();
  check_nccl_refusals();
  check_declined_gpus(r64, s64);

  return mgjoin::test::mpi::finish("dist_join_mpi");
}
