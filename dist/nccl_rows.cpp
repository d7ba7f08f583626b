// The shuffle over NCCL (nccl_rows.hpp draws it).
#include "dist/nccl_rows.hpp"

#include "core/device.hpp"
#include "p2p/include/p2p/nccl_error.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>

namespace mgjoin::dist::detail {
namespace {

/// Device bytes from cudaMalloc, freed with the object (the exchange's buffers live for one call).
class DeviceBytes {
 public:
  DeviceBytes(int device, std::size_t bytes) : device_(device) {
    if (bytes == 0) return;
    gpu::DeviceGuard guard(device);
    if (cudaMalloc(&data_, bytes) != cudaSuccess) {
      cudaGetLastError();
      data_ = nullptr;
      throw OutOfMemory("the NCCL exchange's device buffers: " + std::to_string(bytes) + " bytes on GPU " +
                        std::to_string(device));
    }
  }
  ~DeviceBytes() {
    if (!data_) return;
    gpu::DeviceGuard guard(device_);
    cudaFree(data_);
  }
  DeviceBytes(DeviceBytes&& o) noexcept : device_(o.device_), data_(std::exchange(o.data_, nullptr)) {}
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  DeviceBytes& operator=(DeviceBytes&&) = delete;
  std::byte* data() const { return static_cast<std::byte*>(data_); }

 private:
  int device_;
  void* data_ = nullptr;
};

}  // namespace

/// One exchange's device buffers and stream.
struct RoundBuffers {
  DeviceBytes send, receive;
  gpu::Stream stream;
};

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
    if (c.rank == 0) MGJOIN_NCCL_TRY(ncclGetUniqueId(&id));
    return seconds;
  });
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c.comm);
  ncclComm_t comm = nullptr;
  try {
    agreed(c, [&] {
      gpu::DeviceGuard guard(device);
      MGJOIN_NCCL_TRY(ncclCommInitRank(&comm, c.size, id, c.rank));
      return 0;
    });
  } catch (...) {
    if (comm) ncclCommAbort(comm);  // made here, but not on every rank
    throw;
  }
  std::unique_ptr<NcclRows> rows(new NcclRows(comm, device, true));
  rows->timeout_ = timeout;
  return rows;
}

std::unique_ptr<NcclRows> NcclRows::adopt(const Comm& c, ncclComm_t comm) {
  int device = -1;
  // The checks first, on every rank: ncclCommSplit below is collective over the caller's communicator.
  const double timeout = agreed(c, [&] {
    MGJOIN_INPUT_EXPECTS(comm != nullptr, "dist::Engine: the NCCL communicator is null");
    int count = 0, rank = -1;
    MGJOIN_NCCL_TRY(ncclCommCount(comm, &count));
    MGJOIN_NCCL_TRY(ncclCommUserRank(comm, &rank));
    MGJOIN_NCCL_TRY(ncclCommCuDevice(comm, &device));
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
      MGJOIN_NCCL_TRY(ncclCommSplit(comm, 0, c.rank, &own, nullptr));
      return 0;
    });
  } catch (...) {
    if (own) ncclCommAbort(own);
    throw;
  }
  std::unique_ptr<NcclRows> rows(new NcclRows(own, device, true));
  rows->timeout_ = timeout;
  return rows;
}

NcclRows::~NcclRows() {
  if (!owned_ || aborted_) return;
  // After an exchange that did not complete, operations may still wait on peers: destroying would wait
  // with them, aborting does not.
  if (dirty_)
    ncclCommAbort(comm_);
  else
    ncclCommDestroy(comm_);
}

void NcclRows::wait(cudaStream_t stream) const {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t done = cudaStreamQuery(stream);
    if (done == cudaSuccess) return;
    if (done != cudaErrorNotReady) MGJOIN_CUDA_TRY(done);
    ncclResult_t async = ncclSuccess;
    MGJOIN_NCCL_TRY(ncclCommGetAsyncError(comm_, &async));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (async != ncclSuccess || waited > timeout_) {
      ncclCommAbort(comm_);  // its operations end (the stream with them); the communicator is gone
      aborted_ = true;
      if (async != ncclSuccess) MGJOIN_NCCL_TRY(async);
      throw Error("the NCCL exchange did not complete within MGJOIN_NCCL_TIMEOUT=" + std::to_string(timeout_) +
                  " s (a rank stopped or is stuck); its communicator was aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void NcclRows::exchange(const Comm& c, const Outbound& out, const std::vector<std::int64_t>& in_rows, int width,
                        HostColumn& in) const {
  const auto peers = static_cast<std::size_t>(c.size), self = static_cast<std::size_t>(c.rank);
  std::vector<std::int64_t> send_at(peers), recv_at(peers);
  std::exclusive_scan(out.rows.begin(), out.rows.end(), send_at.begin(), std::int64_t{0});
  std::exclusive_scan(in_rows.begin(), in_rows.end(), recv_at.begin(), std::int64_t{0});
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
  RoundBuffers b = agreed(c, [&] {
    return RoundBuffers{DeviceBytes(device_, peers * slot), DeviceBytes(device_, peers * slot), gpu::Stream(device_)};
  });
  // The rounds in one agreed step: a rank whose wait timed out (or failed) aborts its communicator, so
  // the ranks that wait on it time out too, and all of them throw RankError together.
  agreed(c, [&] {
    rounds(c, out, in_rows, width, in, send_at, recv_at, longest, q, b);
    return 0;
  });
}

void NcclRows::rounds(const Comm& c, const Outbound& out, const std::vector<std::int64_t>& in_rows, int width, HostColumn& in,
                      const std::vector<std::int64_t>& send_at, const std::vector<std::int64_t>& recv_at,
                      std::int64_t longest, std::int64_t q, RoundBuffers& b) const {
  const auto peers = static_cast<std::size_t>(c.size), self = static_cast<std::size_t>(c.rank);
  const std::size_t slot = static_cast<std::size_t>(q * width);
  auto* to = static_cast<std::byte*>(in.data());
  dirty_ = true;
  gpu::DeviceGuard guard(device_);
  const auto rows_at = [&](std::int64_t rows, std::int64_t first) { return std::clamp<std::int64_t>(rows - first, 0, q); };
  for (std::int64_t first = 0; first < longest; first += q) {
    for (std::size_t d = 0; d < peers; ++d)
      if (const std::int64_t n = rows_at(out.rows[d], first); d != self && n > 0)
        MGJOIN_CUDA_TRY(cudaMemcpyAsync(b.send.data() + d * slot, out.bytes.get() + (send_at[d] + first) * width,
                                        static_cast<std::size_t>(n * width), cudaMemcpyHostToDevice, b.stream));
    // The group always ends (an error inside it would leave this thread's later NCCL calls grouped).
    MGJOIN_NCCL_TRY(ncclGroupStart());
    ncclResult_t queued = ncclSuccess;
    for (std::size_t d = 0; d < peers && queued == ncclSuccess; ++d) {
      if (d == self) continue;
      const int peer = static_cast<int>(d);
      if (const std::int64_t n = rows_at(out.rows[d], first); n > 0)
        queued = ncclSend(b.send.data() + d * slot, static_cast<std::size_t>(n * width), ncclUint8, peer, comm_, b.stream);
      if (const std::int64_t n = rows_at(in_rows[d], first); n > 0 && queued == ncclSuccess)
        queued = ncclRecv(b.receive.data() + d * slot, static_cast<std::size_t>(n * width), ncclUint8, peer, comm_, b.stream);
    }
    const ncclResult_t ended = ncclGroupEnd();
    MGJOIN_NCCL_TRY(queued);
    MGJOIN_NCCL_TRY(ended);
    wait(b.stream);  // before the copies out: a copy into pageable memory would block without a bound
    for (std::size_t s = 0; s < peers; ++s)
      if (const std::int64_t n = rows_at(in_rows[s], first); s != self && n > 0)
        MGJOIN_CUDA_TRY(cudaMemcpyAsync(to + (recv_at[s] + first) * width, b.receive.data() + s * slot,
                                        static_cast<std::size_t>(n * width), cudaMemcpyDeviceToHost, b.stream));
    b.stream.synchronize();
  }
  dirty_ = false;
}

}  // namespace mgjoin::dist::detail
