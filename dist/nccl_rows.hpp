#pragma once
// The shuffle's rows between ranks through their GPUs over NCCL (RankExchange::Nccl; private to dist/).
// Each rank's end is one GPU and an NCCL communicator over the same ranks as the MPI communicator, in
// the same order: made here (rank 0's ncclGetUniqueId broadcast over MPI, then ncclCommInitRank on every
// rank) or the caller's own. An exchange moves the packed rows (collectives.hpp's Outbound) in rounds
// through device buffers of at most kRoundBytes each way:
//
//   rank i: Outbound (host) ── H2D ─► send buffer ─┬─ ncclSend to rank d ──► rank d's receive buffer
//                                                   └─ ncclRecv from rank s ◄─ rank s's send buffer
//           receive buffer ── D2H ─► the rows every rank sent rank i, rank by rank (host)
//
// A rank's own rows are copied on the host. NCCL waits are bounded: the stream is polled, and after
// MGJOIN_NCCL_TIMEOUT seconds without completion (default 600) the communicator is aborted; the ranks
// waiting on that rank then time out too, and the rounds, one agreed step, end with every rank throwing
// RankError. Not bounded: ncclCommInitRank and the connections ncclGroupEnd sets up with a peer on the
// first exchange, which wait for a peer that never comes (the launcher ends a job whose rank died).
#include "dist/collectives.hpp"

#include <nccl.h>

#include <cstddef>
#include <memory>
#include <span>

namespace mgjoin::dist::detail {

class NcclRows {
 public:
  /// Most bytes of one round's send (and receive) buffer on the GPU.
  static constexpr std::int64_t kRoundBytes = std::int64_t{256} << 20;

  /// A communicator over c's ranks on `device` (collective over c; the ranks agree on whether it was
  /// made everywhere). @throw RankError when any rank fails.
  static std::unique_ptr<NcclRows> create(const Comm& c, int device);
  /// A communicator split off the caller's (ncclCommSplit: the same ranks and device; the caller's is
  /// never aborted or destroyed here); its size and rank must be c's (collective).
  /// @throw RankError when they differ on any rank.
  static std::unique_ptr<NcclRows> adopt(const Comm& c, ncclComm_t comm);

  /// Sets up the connections to every peer (collective): NCCL makes them on a communicator's first
  /// exchange with each peer, which would otherwise count in the first join (about a tenth of a second
  /// on two H200s). A small exchange in rounds with every rank; bounded as exchange() is.
  void connect(const Comm& c) const;

  ~NcclRows();
  NcclRows(const NcclRows&) = delete;
  NcclRows& operator=(const NcclRows&) = delete;

  int device() const { return device_; }
  ncclComm_t comm() const { return comm_; }
  /// Whether a timeout or an NCCL error aborted the communicator: no exchange runs on it any more.
  bool aborted() const { return aborted_; }

  /// Moves `out`'s rows to their ranks and fills `in` (rows of `width` bytes, laid out as `layout` says)
  /// (collective; the buffers are taken in an agreed step first).
  void exchange(const Comm& c, const Outbound& out, const ExchangeLayout& layout, int width, HostColumn& in) const;

  /// One column whose rows are already on this rank's GPU: `send` holds the rows for each rank at
  /// the layout's send_at, `receive` gets each rank's rows at its recv_at (rows of `width` bytes).
  struct DeviceColumn {
    const std::byte* send;
    std::byte* receive;
    int width;
  };
  /// Moves the columns' rows to their ranks GPU to GPU in one NCCL group (a rank's own rows by a device
  /// copy), enqueued on `stream` after what it holds, and waits for them (collective, one agreed step,
  /// bounded as exchange() is).
  void exchange_on_device(const Comm& c, std::span<const DeviceColumn> columns, const ExchangeLayout& layout,
                          cudaStream_t stream) const;

 private:
  NcclRows(ncclComm_t comm, int device, double timeout) : comm_(comm), device_(device), timeout_(timeout) {}
  /// Waits for `stream`, polling NCCL's asynchronous errors; aborts the communicator past the timeout.
  void wait(cudaStream_t stream) const;

  ncclComm_t comm_;  ///< this object's own (made here or split off the caller's)
  int device_;
  double timeout_;
  mutable bool aborted_ = false;  ///< by wait(): the communicator is gone
  mutable bool dirty_ = false;    ///< an exchange began and did not complete: abort, not destroy, at the end
};

/// Seconds an NCCL wait may take: MGJOIN_NCCL_TIMEOUT (a positive number), 600 by default.
/// @throw InputError naming the variable when it is not a positive number.
double nccl_timeout_seconds(const char* text);

}  // namespace mgjoin::dist::detail
