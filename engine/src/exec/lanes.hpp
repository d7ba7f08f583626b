#pragma once
// Per-GPU lanes: each GPU's streams, named for what runs on them, and running host work on every GPU.
// A flow makes the streams it uses once per join; its phases order them by events, never by the device.
//
//   h2d   chunks or whole relations in          part  the partition kernel
//   work  sorts and joins                       xchg  the NCCL exchange
//   d2h   copies out                            out   output windows (high priority: their copies wait)
//   from[j]  copies GPU j sends here (copy-engine exchange: one lane per source, so they overlap)
#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <exception>
#include <span>
#include <thread>
#include <vector>

namespace mgjoin::exec {

class InputStaging;

/// One GPU's streams (those not asked for stay empty).
struct Lane {
  int device = 0;
  gpu::Stream h2d, part, work, xchg, d2h, out;
  std::vector<gpu::Stream> from;  ///< per source GPU
  /// Where copies in from pageable input columns go through (the engine's, input_staging.hpp); nullptr:
  /// straight (the inputs are pinned, or the caller registers them).
  InputStaging* staging = nullptr;
};

/// Which streams a flow makes on each GPU.
struct LaneStreams {
  bool h2d = false, part = false, work = false, xchg = false, d2h = false, out = false, from = false;
};

/// The lanes of a flow's GPUs.
class Lanes {
 public:
  /// `staging`: per GPU (Lane::staging), or empty.
  Lanes(std::span<const int> devices, const LaneStreams& streams, std::span<InputStaging* const> staging = {}) {
    const int g = static_cast<int>(devices.size());
    lanes_.resize(devices.size());
    for (int d = 0; d < g; ++d) {
      Lane& lane = lanes_[d];
      lane.device = devices[d];
      if (!staging.empty()) lane.staging = staging[d];
      gpu::DeviceGuard guard(lane.device);
      if (streams.h2d) lane.h2d = gpu::Stream(lane.device);
      if (streams.part) lane.part = gpu::Stream(lane.device);
      if (streams.work) lane.work = gpu::Stream(lane.device);
      if (streams.xchg) lane.xchg = gpu::Stream(lane.device);
      if (streams.d2h) lane.d2h = gpu::Stream(lane.device);
      // The output windows' kernels go first: each window's copy out waits for its kernel, and PCIe is
      // the scarce resource (one H100, B scale 2 materialized: 1.81 -> 1.75 s).
      if (streams.out) lane.out = gpu::Stream::high_priority(lane.device);
      if (streams.from)
        for (int j = 0; j < g; ++j) lane.from.emplace_back(lane.device);
    }
    for (int d = 0; d < g && streams.from; ++d)
      for (int j = 0; j < g; ++j) receive_.push_back(lanes_[d].from[j]);
  }
  Lanes(const Lanes&) = delete;
  Lanes& operator=(const Lanes&) = delete;

  int gpus() const { return static_cast<int>(lanes_.size()); }
  Lane& operator[](int d) { return lanes_[d]; }
  const Lane& operator[](int d) const { return lanes_[d]; }
  std::vector<Lane>::iterator begin() { return lanes_.begin(); }
  std::vector<Lane>::iterator end() { return lanes_.end(); }
  std::vector<Lane>::const_iterator begin() const { return lanes_.begin(); }
  std::vector<Lane>::const_iterator end() const { return lanes_.end(); }

  /// Every receive lane, [dst * g + src] (p2p::all_to_all_copy_engines' order).
  std::span<const cudaStream_t> receive_lanes() const { return receive_; }

  /// Waits for every stream of every GPU, without throwing: work may still be in flight when an error
  /// unwinds, and it must end before any buffer goes back. Only these streams: another flow (the next
  /// bucket group's) may be at work on the same GPUs, and this one must not wait for it.
  void synchronize_all() const noexcept {
    for (const Lane& lane : lanes_) {
      gpu::DeviceGuard guard(lane.device);
      for (const gpu::Stream* stream : {&lane.h2d, &lane.part, &lane.work, &lane.xchg, &lane.d2h, &lane.out})
        if (stream->get()) cudaStreamSynchronize(*stream);
      for (const gpu::Stream& from : lane.from) cudaStreamSynchronize(from);
    }
  }

 private:
  std::vector<Lane> lanes_;
  std::vector<cudaStream_t> receive_;
};

/// `waiter` waits for the work issued on `from` so far (an event of `device`'s recorded there).
inline void follow(int device, cudaStream_t from, cudaStream_t waiter) {
  gpu::Event issued(device, false);
  issued.record(from);
  MGJOIN_CUDA_TRY(cudaStreamWaitEvent(waiter, issued, 0));
}

/// Runs fn(d) for every GPU d of `gpus`, one host thread each when there are several (each may block on
/// its own GPU's copies); rethrows the first error once all are done.
template <class Fn>
void on_every_gpu(int gpus, Fn&& fn) {
  if (gpus == 1) return fn(0);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(gpus);
  for (int d = 0; d < gpus; ++d)
    threads.emplace_back([&, d] {
      try {
        fn(d);
      } catch (...) {
        errors[d] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace mgjoin::exec
