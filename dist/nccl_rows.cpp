// The shuffle over NCCL (nccl_rows.hpp draws it).
#include "dist/nccl_rows.hpp"

#include "alloc/include/alloc/backings.hpp"
#include "core/device.hpp"
#include "p2p/include/p2p/nccl_error.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace mgjoin::dist::detail {
namespace {

/// One exchange's device buffers (freed with it) and stream.
struct RoundBuffers {
  alloc::DeviceBacking send, receive;
  gpu::Stream stream;
};

}  // namespace

double nccl_timeout_seconds(const char* text) {
  if (!text || !*text) return 600;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  MGJOIN_INPUT_EXPECTS(end != text && *end == '\0' && seconds > 0,
                       std::string("MGJOIN_NCCL_TIMEOUT '") + text + "': expected a positive number of seconds");
  return seconds;
}

std::unique_ptr<NcclRows> NcclRows::create(const Comm& c, int device) {
  ncclUniqueId id{};
  const double timeout = agreed(c, [&] {
    const double seconds = nccl_timeout_seconds(std::getenv("MGJOIN_NCCL_TIMEOUT"));
    MGJOIN_INPUT_EXPECTS(device >= 0 && device < gpu::device_count(),
                         "RankExchange::Nccl: this rank has no GPU " + std::to_string(device) + " (it sees " +
                             std::to_string(gpu::device_count()) + ")");
    if (c.rank == 0) MGJOIN_NCCL_TRY(p2p::nccl().get_unique_id(&id));
    return seconds;
  });
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c.comm);
  ncclComm_t comm = nullptr;
  try {
    agreed(c, [&] {
      gpu::DeviceGuard guard(device);
      MGJOIN_NCCL_TRY(p2p::nccl().comm_init_rank(&comm, c.size, id, c.rank));
      return 0;
    });
  } catch (...) {
    if (comm) p2p::nccl().comm_abort(comm);  // made here, but not on every rank
    throw;
  }
  return std::unique_ptr<NcclRows>(new NcclRows(comm, device, timeout));
}

std::unique_ptr<NcclRows> NcclRows::adopt(const Comm& c, ncclComm_t comm) {
  int device = -1;
  // The checks first, on every rank: ncclCommSplit below is collective over the caller's communicator.
  const double timeout = agreed(c, [&] {
    MGJOIN_INPUT_EXPECTS(comm != nullptr, "dist::Engine: the NCCL communicator is null");
    int count = 0, rank = -1;
    MGJOIN_NCCL_TRY(p2p::nccl().comm_count(comm, &count));
    MGJOIN_NCCL_TRY(p2p::nccl().comm_user_rank(comm, &rank));
    MGJOIN_NCCL_TRY(p2p::nccl().comm_cu_device(comm, &device));
    MGJOIN_INPUT_EXPECTS(count == c.size && rank == c.rank,
                         "dist::Engine: the NCCL communicator's rank " + std::to_string(rank) + " of " + std::to_string(count) +
                             " is not the MPI communicator's rank " + std::to_string(c.rank) + " of " + std::to_string(c.size));
    return nccl_timeout_seconds(std::getenv("MGJOIN_NCCL_TIMEOUT"));
  });
  // A communicator of our own over the same ranks and device: a timeout aborts it, never the caller's.
  ncclComm_t own = nullptr;
  try {
    agreed(c, [&] {
      gpu::DeviceGuard guard(device);
      MGJOIN_NCCL_TRY(p2p::nccl().comm_split(comm, 0, c.rank, &own, nullptr));
      return 0;
    });
  } catch (...) {
    if (own) p2p::nccl().comm_abort(own);
    throw;
  }
  return std::unique_ptr<NcclRows>(new NcclRows(own, device, timeout));
}

void NcclRows::connect(const Comm& c) const {
  if (c.size == 1) return;
  // 1 MiB to every peer and from every peer: enough that NCCL sets up the channels a large exchange uses.
  constexpr std::int64_t kBytes = std::int64_t{1} << 20;
  const auto ranks = static_cast<std::size_t>(c.size);
  const ExchangeLayout layout = exchange_layout(c, std::vector<std::int64_t>(ranks, kBytes));
  const auto b = agreed(c, [&] {
    return std::unique_ptr<RoundBuffers>(new RoundBuffers{alloc::DeviceBacking(device_, ranks * kBytes),
                                                          alloc::DeviceBacking(device_, ranks * kBytes), gpu::Stream(device_)});
  });
  const DeviceColumn bytes{b->send.base(), b->receive.base(), 1};
  exchange_on_device(c, std::span(&bytes, 1), layout, b->stream);
}

NcclRows::~NcclRows() {
  if (aborted_) return;
  // After an exchange that did not complete, operations may still wait on peers: destroying would wait
  // with them, aborting does not.
  if (dirty_)
    p2p::nccl().comm_abort(comm_);
  else
    p2p::nccl().comm_destroy(comm_);
}

void NcclRows::wait(cudaStream_t stream) const {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t done = cudaStreamQuery(stream);
    if (done == cudaSuccess) return;
    if (done != cudaErrorNotReady) MGJOIN_CUDA_TRY(done);
    ncclResult_t async = ncclSuccess;
    MGJOIN_NCCL_TRY(p2p::nccl().comm_get_async_error(comm_, &async));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (async != ncclSuccess || waited > timeout_) {
      p2p::nccl().comm_abort(comm_);  // its operations end (the stream with them); the communicator is gone
      aborted_ = true;
      if (async != ncclSuccess) MGJOIN_NCCL_TRY(async);
      throw Error("the NCCL exchange did not complete within MGJOIN_NCCL_TIMEOUT=" + std::to_string(timeout_) +
                  " s (a rank stopped or is stuck); its communicator was aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void NcclRows::exchange(const Comm& c, const Outbound& out, const ExchangeLayout& layout, int width, HostColumn& in) const {
  const auto& [out_rows, in_rows, send_at, recv_at] = layout;
  const auto peers = static_cast<std::size_t>(c.size), self = static_cast<std::size_t>(c.rank);
  auto* to = static_cast<std::byte*>(in.data());
  // This rank's own rows do not leave the host.
  if (out.rows[self] > 0)
    std::memcpy(to + recv_at[self] * width, out.bytes.get() + send_at[self] * width,
                static_cast<std::size_t>(out.rows[self] * width));
  std::int64_t longest = 0;
  for (std::size_t d = 0; d < peers; ++d)
    if (d != self) longest = std::max({longest, out.rows[d], in_rows[d]});
  MPI_Allreduce(MPI_IN_PLACE, &longest, 1, MPI_INT64_T, MPI_MAX, c.comm);
  if (longest == 0) return;
  // Rounds of at most q rows per peer: each peer has a slot of q rows in each buffer.
  const std::int64_t q = std::min(longest, std::max<std::int64_t>(1, kRoundBytes / (std::int64_t{width} * c.size)));
  const std::size_t slot = static_cast<std::size_t>(q * width);
  const auto b = agreed(c, [&] {
    return std::unique_ptr<RoundBuffers>(new RoundBuffers{alloc::DeviceBacking(device_, peers * slot),
                                                          alloc::DeviceBacking(device_, peers * slot), gpu::Stream(device_)});
  });
  const auto rows_at = [&](std::int64_t rows, std::int64_t first) { return std::clamp<std::int64_t>(rows - first, 0, q); };
  // The rounds in one agreed step: a rank whose wait timed out (or failed) aborts its communicator, so
  // the ranks that wait on it time out too, and all of them throw RankError together.
  agreed(c, [&] {
    dirty_ = true;
    gpu::DeviceGuard guard(device_);
    for (std::int64_t first = 0; first < longest; first += q) {
      for (std::size_t d = 0; d < peers; ++d)
        if (const std::int64_t n = rows_at(out.rows[d], first); d != self && n > 0)
          MGJOIN_CUDA_TRY(cudaMemcpyAsync(b->send.base() + d * slot, out.bytes.get() + (send_at[d] + first) * width,
                                          static_cast<std::size_t>(n * width), cudaMemcpyHostToDevice, b->stream));
      // The group always ends (an error inside it would leave this thread's later NCCL calls grouped).
      MGJOIN_NCCL_TRY(p2p::nccl().group_start());
      ncclResult_t queued = ncclSuccess;
      for (std::size_t d = 0; d < peers && queued == ncclSuccess; ++d) {
        if (d == self) continue;
        const int peer = static_cast<int>(d);
        if (const std::int64_t n = rows_at(out.rows[d], first); n > 0)
          queued = p2p::nccl().send(b->send.base() + d * slot, static_cast<std::size_t>(n * width), ncclUint8, peer, comm_, b->stream);
        if (const std::int64_t n = rows_at(in_rows[d], first); n > 0 && queued == ncclSuccess)
          queued = p2p::nccl().recv(b->receive.base() + d * slot, static_cast<std::size_t>(n * width), ncclUint8, peer, comm_, b->stream);
      }
      const ncclResult_t ended = p2p::nccl().group_end();
      MGJOIN_NCCL_TRY(queued);
      MGJOIN_NCCL_TRY(ended);
      wait(b->stream);  // before the copies out: a copy into pageable memory would block without a bound
      for (std::size_t s = 0; s < peers; ++s)
        if (const std::int64_t n = rows_at(in_rows[s], first); s != self && n > 0)
          MGJOIN_CUDA_TRY(cudaMemcpyAsync(to + (recv_at[s] + first) * width, b->receive.base() + s * slot,
                                          static_cast<std::size_t>(n * width), cudaMemcpyDeviceToHost, b->stream));
      b->stream.synchronize();
    }
    dirty_ = false;
    return 0;
  });
}

void NcclRows::exchange_on_device(const Comm& c, std::span<const DeviceColumn> columns, const ExchangeLayout& layout,
                                  cudaStream_t stream) const {
  const auto& [out_rows, in_rows, send_at, recv_at] = layout;
  agreed(c, [&] {
    MGJOIN_EXPECTS(!aborted_, "the rows between ranks over an NCCL communicator that a failed exchange aborted");
    dirty_ = true;
    gpu::DeviceGuard guard(device_);
    const auto bytes = [](std::int64_t rows, int width) { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(width); };
    const auto self = static_cast<std::size_t>(c.rank);
    for (const DeviceColumn& col : columns)
      if (out_rows[self] > 0)
        MGJOIN_CUDA_TRY(cudaMemcpyAsync(col.receive + bytes(recv_at[self], col.width), col.send + bytes(send_at[self], col.width),
                                        bytes(out_rows[self], col.width), cudaMemcpyDeviceToDevice, stream));
    // The group always ends (an error inside it would leave this thread's later NCCL calls grouped).
    MGJOIN_NCCL_TRY(p2p::nccl().group_start());
    ncclResult_t queued = ncclSuccess;
    for (const DeviceColumn& col : columns)
      for (std::size_t d = 0; d < out_rows.size() && queued == ncclSuccess; ++d) {
        if (d == self) continue;
        const int peer = static_cast<int>(d);
        if (out_rows[d] > 0)
          queued = p2p::nccl().send(col.send + bytes(send_at[d], col.width), bytes(out_rows[d], col.width), ncclUint8, peer, comm_, stream);
        if (in_rows[d] > 0 && queued == ncclSuccess)
          queued = p2p::nccl().recv(col.receive + bytes(recv_at[d], col.width), bytes(in_rows[d], col.width), ncclUint8, peer, comm_,
                            stream);
      }
    const ncclResult_t ended = p2p::nccl().group_end();
    MGJOIN_NCCL_TRY(queued);
    MGJOIN_NCCL_TRY(ended);
    wait(stream);
    dirty_ = false;
    return 0;
  });
}

}  // namespace mgjoin::dist::detail
