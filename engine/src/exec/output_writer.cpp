// The output writer (output_writer.hpp).
#include "engine/src/exec/output_writer.hpp"

#include "host_merge/detail/streaming_store.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace mgjoin::exec {

MatchCounter::MatchCounter(int device)
    : device_(device), host_(std::make_unique<alloc::PinnedHostBacking>(sizeof(detail::TupleCounter), /*mapped=*/true)),
      counted_(device, false) {}

void MatchCounter::take(alloc::DeviceStackAllocator& memory) { counter_ = DeviceBuffer(memory, sizeof(detail::TupleCounter)); }

void MatchCounter::zero(cudaStream_t stream) const {
  MGJOIN_CUDA_TRY(cudaMemsetAsync(counter_.data(), 0, sizeof(detail::TupleCounter), stream));
}

detail::TupleCounter MatchCounter::read(cudaStream_t work) {
  gpu::DeviceGuard guard(device_);
  // Mapped pinned memory: under UVA its host address is valid in kernels too.
  auto* mapped = reinterpret_cast<detail::TupleCounter*>(host_->base());
  copart::publish_counter(get(), mapped, work);
  counted_.record(work);
  counted_.synchronize();
  const volatile detail::TupleCounter* host = mapped;
  detail::TupleCounter c;
  c.count = host->count;
  c.overflowed = host->overflowed;
  return c;
}

OutputArrays make_output_arrays(int device, alloc::DeviceStackAllocator& memory, std::uint64_t ny) {
  gpu::DeviceGuard guard(device);
  OutputArrays a;
  a.matches = DeviceBuffer(memory, (ny + 1) * sizeof(std::uint64_t));
  a.first_match = DeviceBuffer(memory, std::max<std::uint64_t>(1, ny) * sizeof(std::uint64_t));
  a.offsets = DeviceBuffer(memory, (ny + 1) * sizeof(std::uint64_t));
  a.scan_temp = DeviceBuffer(memory, std::max<std::size_t>(1, copart::scan_scratch_bytes(ny + 1)));
  return a;
}

void scan_matches(const OutputArrays& a, std::uint64_t ny, cudaStream_t work) {
  copart::exclusive_scan(a.view().matches, reinterpret_cast<std::uint64_t*>(a.offsets.data()), ny + 1, a.scan_temp.data(),
                         a.scan_temp.size(), work);
}

OutputWindows::OutputWindows(int device) {
  for (int k = 0; k < 2; ++k) {
    written[k] = gpu::Event(device, false);
    copied[k] = gpu::Event(device, false);
  }
}

namespace {

/// The jobs of one write_windows call: job k is window k % windows of column k / windows, in window
/// (first + k) % 2 (the parity goes on from the GPU's previous jobs).
class WindowJobs {
 public:
  WindowJobs(OutputWindows& w, const WindowGpu& gpu, std::uint64_t window_rows, std::span<const WindowColumn> columns,
             const copart::OutputWindowArgs& common, std::uint64_t base, std::uint64_t total)
      : w_(w), gpu_(gpu), window_(window_rows), columns_(columns), common_(common), base_(base), total_(total),
        windows_((total + window_rows - 1) / window_rows) {
    const auto pinned = [](const WindowColumn& c) {
      return !c.sink && (c.to->size() == 0 || c.to->memory_kind() == MemoryKind::Pinned);
    };
    direct_ = std::all_of(columns.begin(), columns.end(), pinned);
  }

  std::uint64_t jobs() const { return windows_ * columns_.size(); }

  /// Takes the windows (once) and staging (when a column is pageable), and claims the jobs' windows.
  void prepare() {
    int widest = 0;
    for (const WindowColumn& c : columns_) widest = std::max(widest, c.bytes);
    const std::uint64_t window_bytes = window_ * widest;
    if (w_.device[0].empty())
      for (auto& b : w_.device) b = DeviceBuffer(*gpu_.memory, window_bytes);
    if (!direct_ && w_.staging[0].empty())
      for (auto& st : w_.staging) st = PinnedBuffer(*gpu_.pinned, window_bytes);
    follow(gpu_.device, gpu_.work, gpu_.out);
    first_ = w_.next;
    w_.next = static_cast<int>((static_cast<std::uint64_t>(first_) + jobs()) % 2);
  }

  void issue(std::uint64_t k) {
    const WindowColumn& c = columns_[k / windows_];
    const auto [o0, n] = rows_of(k % windows_);
    const int b = window_of(k);
    std::byte* out = w_.device[b].data();
    if (k % windows_ == 0 && c.ready) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu_.out, *c.ready, 0));
    copart::OutputWindowArgs a = common_;
    a.o_begin = o0;
    a.o_end = o0 + n;
    a.out_key = c.part == WindowColumn::Part::Key ? out : nullptr;
    a.out_r_payload = c.part == WindowColumn::Part::RPayload ? out : nullptr;
    a.out_s_payload = c.part == WindowColumn::Part::SPayload ? out : nullptr;
    // The buffer is free once its previous copy out is done; the copy out runs on its own stream.
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu_.out, w_.copied[b], 0));
    copart::write_output_window(a, gpu_.out);
    w_.written[b].record(gpu_.out);
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu_.d2h, w_.written[b], 0));
    std::byte* to = direct_ ? c.to->as<std::byte>() + (base_ + o0) * c.bytes : w_.staging[b].data();
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(to, out, n * c.bytes, cudaMemcpyDeviceToHost, gpu_.d2h));
    w_.copied[b].record(gpu_.d2h);
  }

  /// Straight into pinned columns the host need not wait: the streams order the windows' reuse.
  /// Through staging it copies each window out (or hands it to the sink) before its staging is reused.
  void drain(std::uint64_t k) {
    if (direct_) return;
    const int b = window_of(k);
    w_.copied[b].synchronize();
    const WindowColumn& c = columns_[k / windows_];
    const auto [o0, n] = rows_of(k % windows_);
    if (c.sink) return c.sink->write(c.part, c.to->type(), base_ + o0, n, w_.staging[b].data());
    const ByteCopy copy{c.to->as<std::byte>() + (base_ + o0) * c.bytes, w_.staging[b].data(), n * c.bytes};
    copy_in_blocks({&copy, 1});
  }

 private:
  int window_of(std::uint64_t k) const { return static_cast<int>((first_ + k) % 2); }
  std::pair<std::uint64_t, std::uint64_t> rows_of(std::uint64_t window) const {
    const std::uint64_t o0 = window * window_;
    return {o0, std::min(total_, o0 + window_) - o0};
  }

  OutputWindows& w_;
  const WindowGpu& gpu_;
  std::uint64_t window_;
  std::span<const WindowColumn> columns_;
  const copart::OutputWindowArgs& common_;
  std::uint64_t base_, total_, windows_;
  bool direct_ = false;
  int first_ = 0;
};

}  // namespace

void write_windows(OutputWindows& windows, const WindowGpu& gpu, std::uint64_t window_rows,
                   std::span<const WindowColumn> columns, const copart::OutputWindowArgs& common, std::uint64_t base,
                   std::uint64_t total) {
  if (total == 0) return;
  gpu::DeviceGuard guard(gpu.device);
  WindowJobs jobs(windows, gpu, window_rows, columns, common, base, total);
  jobs.prepare();
  jobs.issue(0);
  for (std::uint64_t k = 1; k < jobs.jobs(); ++k) {
    jobs.issue(k);
    jobs.drain(k - 1);
  }
  jobs.drain(jobs.jobs() - 1);
}

void wait_for_windows(const Lanes& lanes) {
  for (const Lane& lane : lanes) {
    gpu::DeviceGuard guard(lane.device);
    lane.out.synchronize();
    lane.d2h.synchronize();
  }
}

void copy_in_blocks(std::span<const ByteCopy> copies) {
  constexpr std::size_t kBlock = 2u << 20;
  std::vector<ByteCopy> blocks;
  for (const ByteCopy& c : copies)
    for (std::size_t at = 0; c.to && at < c.bytes; at += kBlock)
      blocks.push_back({c.to + at, c.from + at, std::min(kBlock, c.bytes - at)});
#pragma omp parallel
  {
#pragma omp for schedule(dynamic, 1)
    for (std::size_t i = 0; i < blocks.size(); ++i)  // columns are of 4- or 8-byte words
      host_merge::detail::copy_output(reinterpret_cast<std::uint32_t*>(blocks[i].to),
                                      reinterpret_cast<const std::uint32_t*>(blocks[i].from),
                                      static_cast<std::int64_t>(blocks[i].bytes / 4));
    host_merge::detail::finish_output();
  }
}

}  // namespace mgjoin::exec
