#pragma once
// RAII for the CUDA resources every phase uses: the current device, streams and events (ground layer).
#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <utility>

namespace mgjoin::gpu {

/// Number of CUDA devices; 0 where there is no driver or no device (CI). The process's first call
/// starts the driver (cuInit: 0.4-1.1 s on the GPU machines measured); driver_start_seconds() keeps how
/// long that took.
int device_count();

/// Seconds the first device_count() took (the driver's start), 0 before it was called.
double driver_start_seconds();

/// Makes a context on each of `devices` (CUDA's primary context, which every later call on the device
/// uses), one thread per device: the driver makes contexts of different devices side by side.
void start_contexts(const int* devices, int count);

/// Makes `device` current for the guard's lifetime and restores the previous one after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    MGJOIN_CUDA_TRY(cudaGetDevice(&previous_));
    if (device != previous_) MGJOIN_CUDA_TRY(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

/// A non-blocking stream on a given device.
class Stream {
 public:
  Stream() = default;
  explicit Stream(int device) : device_(device) {
    DeviceGuard g(device);
    MGJOIN_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  /// A stream whose kernels' blocks the GPU schedules before those of default-priority streams.
  static Stream high_priority(int device) {
    Stream s;
    s.device_ = device;
    DeviceGuard g(device);
    int least = 0, greatest = 0;
    MGJOIN_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    MGJOIN_CUDA_TRY(cudaStreamCreateWithPriority(&s.stream_, cudaStreamNonBlocking, greatest));
    return s;
  }
  ~Stream() { reset(); }
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)), device_(o.device_) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      reset();
      stream_ = std::exchange(o.stream_, nullptr);
      device_ = o.device_;
    }
    return *this;
  }
  cudaStream_t get() const { return stream_; }
  operator cudaStream_t() const { return stream_; }
  int device() const { return device_; }
  void synchronize() const { MGJOIN_CUDA_TRY(cudaStreamSynchronize(stream_)); }

 private:
  void reset() {
    if (stream_) {
      DeviceGuard g(device_);
      cudaStreamDestroy(stream_);
      stream_ = nullptr;
    }
  }
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

/// An event on a given device (timing enabled unless asked otherwise).
class Event {
 public:
  Event() = default;
  explicit Event(int device, bool timing = true) : device_(device) {
    DeviceGuard g(device);
    MGJOIN_CUDA_TRY(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() { reset(); }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)), device_(o.device_) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      reset();
      event_ = std::exchange(o.event_, nullptr);
      device_ = o.device_;
    }
    return *this;
  }
  cudaEvent_t get() const { return event_; }
  operator cudaEvent_t() const { return event_; }
  void record(cudaStream_t s) { MGJOIN_CUDA_TRY(cudaEventRecord(event_, s)); }
  void synchronize() const { MGJOIN_CUDA_TRY(cudaEventSynchronize(event_)); }
  /// Milliseconds from `start` to this event (both recorded and completed).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0;
    MGJOIN_CUDA_TRY(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  void reset() {
    if (event_) {
      DeviceGuard g(device_);
      cudaEventDestroy(event_);
      event_ = nullptr;
    }
  }
  cudaEvent_t event_ = nullptr;
  int device_ = 0;
};

}  // namespace mgjoin::gpu
