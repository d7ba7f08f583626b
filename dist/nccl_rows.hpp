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
// MGJOIN_NCCL_TIMEOUT seconds without completion (default 600) the communicator is aborted and the
// exchange throws, so that a rank stuck in NCCL ends instead of holding the job.
#include "dist/collectives.hpp"

#include <nccl.h>

#include <memory>

namespace mgjoin::dist::detail {

class NcclRows {
 public:
  /// Most bytes of one round's send (and receive) buffer on the GPU.
  static constexpr std::int64_t kRoundBytes = std::int64_t{256} << 20;

  /// A communicator over c's ranks on `device` (collective over c; the ranks agree on whether it was
  /// made everywhere). @throw RankError when any rank fails.
  static std::unique_ptr<NcclRows> create(const Comm& c, int device);
  /// The caller's communicator (kept by the caller), on the device it was made on; its size and rank
  /// must be c's (collective). @throw RankError when they differ on any rank.
  static std::unique_ptr<NcclRows> adopt(const Comm& c, ncclComm_t comm);

  ~NcclRows();
  NcclRows(const NcclRows&) = delete;
  NcclRows& operator=(const NcclRows&) = delete;

  int device() const { return device_; }
  ncclComm_t comm() const { return comm_; }

  /// Moves `out`'s rows to their ranks and fills `in` (rows of `width` bytes; `in_rows` from each rank,
  /// laid out rank by rank) (collective; the buffers are taken in an agreed step first).
  void exchange(const Comm& c, const Outbound& out, const std::vector<std::int64_t>& in_rows, int width,
                HostColumn& in) const;

 private:
  NcclRows(ncclComm_t comm, int device, bool owned) : comm_(comm), device_(device), owned_(owned) {}
  /// Waits for `stream`, polling NCCL's asynchronous errors; aborts the communicator past the timeout.
  void wait(cudaStream_t stream) const;

  ncclComm_t comm_;
  int device_;
  bool owned_;
  double timeout_ = 600;
  mutable bool aborted_ = false;  ///< by wait(): the communicator is gone
};

/// Seconds an NCCL wait may take: MGJOIN_NCCL_TIMEOUT (a positive number), 600 by default.
/// @throw InputError naming the variable when it is not a positive number.
double nccl_timeout_seconds(const char* text);

}  // namespace mgjoin::dist::detail
