// The MPI steps shared by dist::join and dist::join_tables (collectives.hpp).
#include "dist/collectives.hpp"

#include "dist/nccl_rows.hpp"

#include "core/checked_math.hpp"
#include "core/device.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include <omp.h>

namespace mgjoin::dist::detail {

std::int64_t first_row(const Comm& c, const std::vector<std::int64_t>& rows) {
  return std::accumulate(rows.begin(), rows.begin() + c.rank, std::int64_t{0});
}

copart::KeySample global_sample(const Comm& c, const ColumnView& keys, const std::vector<std::int64_t>& rows) {
  const std::int64_t total = std::accumulate(rows.begin(), rows.end(), std::int64_t{0});
  const copart::KeySample mine = agreed(c, [&] {
    const std::int64_t m = total <= copart::kSampleRows
                               ? keys.size
                               : std::max<std::int64_t>(keys.size ? 1 : 0, keys.size * copart::kSampleRows / total);
    return copart::sample_keys(keys, m, 1 + static_cast<std::uint64_t>(c.rank));
  });
  const std::vector<std::int64_t> counts = all_gather(c, static_cast<std::int64_t>(mine.keys.size()));
  std::vector<int> n(counts.begin(), counts.end()), at(counts.size(), 0);
  std::exclusive_scan(n.begin(), n.end(), at.begin(), 0);
  copart::KeySample all;
  all.rows = total;
  all.keys.resize(static_cast<std::size_t>(std::accumulate(n.begin(), n.end(), 0)));
  MPI_Allgatherv(mine.keys.data(), n[static_cast<std::size_t>(c.rank)], MPI_UINT64_T, all.keys.data(), n.data(), at.data(),
                 MPI_UINT64_T, c.comm);
  std::sort(all.keys.begin(), all.keys.end());
  return all;
}

Outbound pack(const void* column, int width, const std::vector<copart::Destinations>& dest, int ranks) {
  // Every thread counts its contiguous share of the rows per destination, then writes them after the
  // rows of the threads before it: each destination's rows keep their order, as one thread would lay
  // them out.
  Outbound out;
  const auto r = static_cast<std::size_t>(ranks);
  const auto n = static_cast<std::int64_t>(dest.size());
  const int threads = std::max(1, std::min<int>(omp_get_max_threads(), static_cast<int>(n / 65536) + 1));
  std::vector<std::int64_t> counts(static_cast<std::size_t>(threads) * r, 0);  // [thread][destination]
  const auto share = [&](int t) { return std::pair{n * t / threads, n * (t + 1) / threads}; };
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const auto [first, last] = share(t);
    std::int64_t* mine = counts.data() + static_cast<std::size_t>(t) * r;
    for (std::int64_t i = first; i < last; ++i)
      for (int k = 0; k < dest[static_cast<std::size_t>(i)].count; ++k) ++mine[dest[static_cast<std::size_t>(i)].first + k];
  }
  out.rows.assign(r, 0);
  std::vector<std::int64_t> next(counts.size());  // where thread t's rows of destination d start
  std::int64_t at = 0;
  for (std::size_t d = 0; d < r; ++d)
    for (std::size_t t = 0; t < static_cast<std::size_t>(threads); ++t) {
      next[t * r + d] = at;
      at += counts[t * r + d];
      out.rows[d] += counts[t * r + d];
    }
  out.bytes = std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(at) * width);
  const auto* in = static_cast<const std::byte*>(column);
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const auto [first, last] = share(t);
    std::int64_t* place = next.data() + static_cast<std::size_t>(t) * r;
    for (std::int64_t i = first; i < last; ++i) {
      const copart::Destinations& d = dest[static_cast<std::size_t>(i)];
      for (int k = 0; k < d.count; ++k)
        std::memcpy(out.bytes.get() + place[d.first + k]++ * width, in + i * width, static_cast<std::size_t>(width));
    }
  }
  return out;
}

std::vector<copart::Destinations> destinations_of(const copart::PartitionPlan& plan, copart::Side side,
                                                  const ColumnView& keys, std::int64_t first_row) {
  std::vector<copart::Destinations> dest(static_cast<std::size_t>(keys.size));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < keys.size; ++i)
    dest[static_cast<std::size_t>(i)] =
        copart::destinations(plan, side, copart::ordered_key(keys, i), static_cast<std::uint64_t>(first_row + i));
  return dest;
}

namespace {

/// MPI's datatype of one row of `width` bytes, freed with the object.
class RowType {
 public:
  explicit RowType(int width) {
    MPI_Type_contiguous(width, MPI_BYTE, &type_);
    MPI_Type_commit(&type_);
  }
  ~RowType() { MPI_Type_free(&type_); }
  RowType(const RowType&) = delete;
  RowType& operator=(const RowType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_;
};

std::vector<int> as_ints(const std::vector<std::int64_t>& v) { return {v.begin(), v.end()}; }

/// Test hook: MGJOIN_TEST_MPI_ROUND_ROWS=N makes every exchange go in rounds of N rows (0: unset).
std::int64_t test_round_rows() {
  const char* test = std::getenv("MGJOIN_TEST_MPI_ROUND_ROWS");
  return test ? std::max<std::int64_t>(1, std::atoll(test)) : 0;
}

/// Rows that one round of a large exchange moves between two ranks at most: rounds stage through
/// buffers of 64 MiB each way.
std::int64_t round_rows(int ranks, int width) {
  return std::max<std::int64_t>(1, (std::int64_t{64} << 20) / (std::int64_t{width} * ranks));
}

/// The exchange in rounds: each round, every pair of ranks moves at most `q` rows through staging
/// buffers of q rows per peer, so that MPI's int counts and displacements stay small however many rows
/// there are in all.
void exchange_in_rounds(const Comm& c, const Outbound& out, const ExchangeLayout& layout, int width, std::int64_t q,
                        HostColumn& in) {
  const auto& [out_rows, in_rows, send_at, recv_at] = layout;
  std::int64_t longest = 0;
  for (int d = 0; d < c.size; ++d)
    longest = std::max({longest, out.rows[static_cast<std::size_t>(d)], in_rows[static_cast<std::size_t>(d)]});
  MPI_Allreduce(MPI_IN_PLACE, &longest, 1, MPI_INT64_T, MPI_MAX, c.comm);
  const std::size_t peers = static_cast<std::size_t>(c.size), slot = static_cast<std::size_t>(q * width);
  std::vector<std::byte> send(peers * slot), recv(peers * slot);
  std::vector<int> send_rows(peers), recv_rows(peers), at(peers);
  for (std::size_t d = 0; d < peers; ++d) at[d] = static_cast<int>(d * static_cast<std::size_t>(q));
  const RowType row(width);
  for (std::int64_t first = 0; first < longest; first += q) {
    for (std::size_t d = 0; d < peers; ++d) {
      send_rows[d] = static_cast<int>(std::clamp<std::int64_t>(out.rows[d] - first, 0, q));
      if (send_rows[d] > 0)  // (no pointer past a peer's rows)
        std::memcpy(send.data() + d * slot, out.bytes.get() + (send_at[d] + first) * width,
                    static_cast<std::size_t>(send_rows[d]) * width);
      recv_rows[d] = static_cast<int>(std::clamp<std::int64_t>(in_rows[d] - first, 0, q));
    }
    MPI_Alltoallv(send.data(), send_rows.data(), at.data(), row.get(), recv.data(), recv_rows.data(), at.data(),
                  row.get(), c.comm);
    for (std::size_t s = 0; s < peers; ++s)
      if (recv_rows[s] > 0)
        std::memcpy(static_cast<std::byte*>(in.data()) + (recv_at[s] + first) * width, recv.data() + s * slot,
                    static_cast<std::size_t>(recv_rows[s]) * width);
  }
}

}  // namespace

ExchangeLayout exchange_layout(const Comm& c, std::vector<std::int64_t> out_rows) {
  const auto ranks = static_cast<std::size_t>(c.size);
  ExchangeLayout layout{std::move(out_rows), std::vector<std::int64_t>(ranks), std::vector<std::int64_t>(ranks),
                        std::vector<std::int64_t>(ranks)};
  auto& [out, in_rows, send_at, recv_at] = layout;
  MPI_Alltoall(out.data(), 1, MPI_INT64_T, in_rows.data(), 1, MPI_INT64_T, c.comm);
  std::exclusive_scan(out.begin(), out.end(), send_at.begin(), std::int64_t{0});
  std::exclusive_scan(in_rows.begin(), in_rows.end(), recv_at.begin(), std::int64_t{0});
  return layout;
}

HostColumn exchange(const Comm& c, const Outbound& out, DType type, const NcclRows* nccl) {
  const int width = static_cast<int>(dtype_size(type));
  const ExchangeLayout layout = exchange_layout(c, out.rows);
  const auto& [out_rows, in_rows, send_at, recv_at] = layout;
  HostColumn in = agreed(c, [&] {
    MGJOIN_EXPECTS(!nccl || !nccl->aborted(), "the rows between ranks over an NCCL communicator that a failed exchange aborted");
    return HostColumn::allocate(type, layout.received());
  });
  if (nccl) {
    nccl->exchange(c, out, layout, width, in);
    return in;
  }
  // One MPI_Alltoallv where every rank's counts and displacements fit its ints; rounds otherwise.
  std::int64_t most = std::max(send_at.back() + out.rows.back(), recv_at.back() + in_rows.back());
  MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT64_T, MPI_MAX, c.comm);
  if (const std::int64_t forced = test_round_rows(); most > INT_MAX || forced > 0) {
    exchange_in_rounds(c, out, layout, width, forced > 0 ? forced : round_rows(c.size, width), in);
    return in;
  }
  const RowType row(width);
  MPI_Alltoallv(out.bytes.get(), as_ints(out.rows).data(), as_ints(send_at).data(), row.get(), in.data(),
                as_ints(in_rows).data(), as_ints(recv_at).data(), row.get(), c.comm);
  return in;
}

void check_rank_count(const Comm& c) {
  MGJOIN_INPUT_EXPECTS(c.size <= kMaxRanks, "a distributed join spans at most " + std::to_string(kMaxRanks) +
                                                " ranks, not " + std::to_string(c.size));
}

void expect_layout_of_root(const Comm& c, const std::string& layout, const std::string& message) {
  std::string root = layout;
  int size = static_cast<int>(root.size());
  MPI_Bcast(&size, 1, MPI_INT, 0, c.comm);
  root.resize(static_cast<std::size_t>(size));
  MPI_Bcast(root.data(), size, MPI_CHAR, 0, c.comm);
  agreed(c, [&] {
    MGJOIN_INPUT_EXPECTS(layout == root, message);
    return 0;
  });
}

HostColumn send_to_owners(const Comm& c, const ColumnView& column, const std::vector<copart::Destinations>& dest,
                          const NcclRows* nccl) {
  const Outbound out = agreed(c, [&] { return pack(column.data, static_cast<int>(dtype_size(column.type)), dest, c.size); });
  return exchange(c, out, column.type, nccl);
}

NodePlace node_place(const Comm& c) {
  MPI_Comm node;
  MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node);
  const Comm on_node(node);
  MPI_Comm_free(&node);
  return {on_node.rank, on_node.size};
}

std::vector<int> rank_gpu_share(int devices, NodePlace place, int gpus, const char* what) {
  // Blocks of devices / ranks GPUs, rank r's starting at r * block, so that its first GPU (its NCCL
  // device, default_rank_gpu) is the same whatever share of its block a join asks for.
  const int block = std::max(1, devices / place.size);
  const int each = gpus > 0 ? gpus : block;
  const std::string ranks = std::string(what) + ": " + std::to_string(place.size) + " ranks on this node";
  MGJOIN_INPUT_EXPECTS(devices > 0 && place.size * each <= devices,
                       (gpus > 0 ? ranks + " with " + std::to_string(each) + " GPU(s) each need " + std::to_string(place.size * each) + " GPUs"
                                 : ranks + " need a GPU each") +
                           "; it has " + std::to_string(devices));
  std::vector<int> ids(static_cast<std::size_t>(each));
  std::iota(ids.begin(), ids.end(), place.rank * block);
  return ids;
}

int default_rank_gpu(NodePlace place) {
  return rank_gpu_share(gpu::device_count(), place, 0, "RankExchange::Nccl").front();
}

JoinOptions options_for_rank(const JoinOptions& options, NodePlace place) {
  JoinOptions local = options;
  const int devices = gpu::device_count();
  if (options.gpus == 0 || !options.gpu_ids.empty() || devices == 0) return local;
  local.gpu_ids = rank_gpu_share(devices, place, options.gpus, "JoinOptions::gpus");
  return local;
}

JoinOptions options_for_engine(const JoinOptions& options) {
  JoinOptions local = options;
  static_cast<EngineOptions&>(local) = EngineOptions{};
  return local;
}

std::uint64_t total_count(const Comm& c, std::uint64_t mine) {
  CheckedSum total;
  for (const std::uint64_t n : all_gather(c, mine)) total.add(n);
  agreed(c, [&] {
    MGJOIN_INPUT_EXPECTS(!total.overflowed, "the ranks' outputs add up to 2^64 rows or more");
    return 0;
  });
  return total.value;
}

}  // namespace mgjoin::dist::detail
