// The MPI steps shared by dist::join and dist::join_tables (collectives.hpp).
#include "dist/collectives.hpp"

#include "core/checked_math.hpp"
#include "core/device.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace mgjoin::dist::detail {

std::int64_t first_row(const Comm& c, const std::vector<std::int64_t>& rows) {
  return std::accumulate(rows.begin(), rows.begin() + c.rank, std::int64_t{0});
}

/// The key sample of one relation over all ranks: each rank samples in proportion to its rows (all of
/// them while the relation has at most kSampleRows rows), so the gathered keys weigh the same.
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

/// Lays out `column` (rows of `width` bytes) by destination: row i goes to each rank of dest[i].
Outbound pack(const void* column, int width, const std::vector<copart::Destinations>& dest, int ranks) {
  Outbound out;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(ranks), 0);
  for (const auto& d : dest)
    for (int k = 0; k < d.count; ++k) ++rows[static_cast<std::size_t>(d.first + k)];
  // MPI counts and displacements are ints.
  const std::int64_t sent = std::accumulate(rows.begin(), rows.end(), std::int64_t{0});
  MGJOIN_INPUT_EXPECTS(sent <= INT_MAX, "this rank sends " + std::to_string(sent) +
                                            " rows, more than one MPI exchange holds (2^31 - 1): use more ranks");
  std::vector<std::int64_t> next(static_cast<std::size_t>(ranks), 0);
  std::exclusive_scan(rows.begin(), rows.end(), next.begin(), std::int64_t{0});
  out.bytes.resize(static_cast<std::size_t>(std::accumulate(rows.begin(), rows.end(), std::int64_t{0})) * width);
  const auto* in = static_cast<const std::byte*>(column);
  for (std::size_t i = 0; i < dest.size(); ++i)
    for (int k = 0; k < dest[i].count; ++k)
      std::memcpy(out.bytes.data() + next[static_cast<std::size_t>(dest[i].first + k)]++ * width, in + i * width,
                  static_cast<std::size_t>(width));
  out.rows.assign(rows.begin(), rows.end());
  return out;
}

std::vector<copart::Destinations> destinations_of(const copart::PartitionPlan& plan, copart::Side side,
                                                  const ColumnView& keys, std::int64_t first_row) {
  std::vector<copart::Destinations> dest(static_cast<std::size_t>(keys.size));
  for (std::int64_t i = 0; i < keys.size; ++i)
    dest[static_cast<std::size_t>(i)] =
        copart::destinations(plan, side, copart::ordered_key(keys, i), static_cast<std::uint64_t>(first_row + i));
  return dest;
}

/// Sends each rank its rows of `out` and returns, in a column of `type`, the rows every rank sent this
/// one, rank by rank. The column is taken in an agreed step between the two collectives: a rank that
/// cannot hold what it is sent fails there, not inside the exchange.
HostColumn exchange(const Comm& c, const Outbound& out, DType type) {
  const int width = static_cast<int>(dtype_size(type));
  std::vector<int> in_rows(static_cast<std::size_t>(c.size));
  MPI_Alltoall(out.rows.data(), 1, MPI_INT, in_rows.data(), 1, MPI_INT, c.comm);
  HostColumn in = agreed(c, [&] {
    const std::int64_t total = std::accumulate(in_rows.begin(), in_rows.end(), std::int64_t{0});
    MGJOIN_INPUT_EXPECTS(total <= INT_MAX, "this rank receives " + std::to_string(total) +
                                               " rows, more than one MPI exchange holds (2^31 - 1): use more ranks");
    return HostColumn::allocate(type, total);
  });
  std::vector<int> send_at(out.rows.size()), recv_at(in_rows.size());
  std::exclusive_scan(out.rows.begin(), out.rows.end(), send_at.begin(), 0);
  std::exclusive_scan(in_rows.begin(), in_rows.end(), recv_at.begin(), 0);
  MPI_Datatype row;
  MPI_Type_contiguous(width, MPI_BYTE, &row);
  MPI_Type_commit(&row);
  MPI_Alltoallv(out.bytes.data(), out.rows.data(), send_at.data(), row, in.data(), in_rows.data(), recv_at.data(), row,
                c.comm);
  MPI_Type_free(&row);
  return in;
}

NodePlace node_place(const Comm& c) {
  MPI_Comm node;
  MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, c.rank, MPI_INFO_NULL, &node);
  const Comm on_node(node);
  MPI_Comm_free(&node);
  return {on_node.rank, on_node.size};
}

/// The local join's options: unless they name GPUs, each rank of a node takes its own share of the
/// node's GPUs (one each by default: one rank per GPU), so that ranks on one node never share one.
JoinOptions options_for_rank(const JoinOptions& options, NodePlace place) {
  JoinOptions local = options;
  const int devices = gpu::device_count();
  if (options.gpus == 0 || !options.gpu_ids.empty() || devices == 0) return local;
  const int each = options.gpus > 0 ? options.gpus : std::max(1, devices / place.size);
  MGJOIN_INPUT_EXPECTS((place.rank + 1) * each <= devices,
                       "JoinOptions::gpus: " + std::to_string(place.size) + " ranks on this node with " + std::to_string(each) +
                           " GPU(s) each need " + std::to_string(place.size * each) + " GPUs; it has " + std::to_string(devices));
  local.gpu_ids.resize(static_cast<std::size_t>(each));
  std::iota(local.gpu_ids.begin(), local.gpu_ids.end(), place.rank * each);
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
