#include "engine/src/table/gpu_gather.hpp"

#include "alloc/stack_buffer.hpp"
#include "core/device.hpp"
#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cstddef>

namespace mgjoin::table {
namespace {

using DeviceBytes = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;

template <class Word>
__global__ void gather_or_zero(const Word* __restrict__ in, const std::int64_t* __restrict__ map, std::int64_t n,
                               Word* __restrict__ out) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = map[i];
    out[i] = row >= 0 ? in[row] : Word{};
  }
}

void launch_gather(const void* in, const std::int64_t* map, std::int64_t n, std::size_t width, void* out,
                   cudaStream_t stream) {
  if (n == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 8192));
  dispatch_column_width(width, [&](auto word) {
    using Word = decltype(word);
    gather_or_zero<Word><<<blocks, 256, 0, stream>>>(static_cast<const Word*>(in), map, n, static_cast<Word*>(out));
    MGJOIN_CHECK_LAUNCH();
  });
}

std::size_t column_bytes(const ColumnView& c) { return static_cast<std::size_t>(c.size) * dtype_size(c.type); }

}  // namespace

/// One GPU's streams, events and buffers. Each event marks the latest use of one buffer: a stream that
/// waits on it waits for the copy or kernel queued last on that buffer, which is the one that matters
/// because the host queues every column in order.
struct GpuGathers::Gpu {
  int device;
  alloc::DeviceStackAllocator* stack;
  gpu::Stream in, work, out;
  gpu::Event maps_ready, source_ready[2], source_free[2], output_ready[2], output_free[2];
  DeviceBytes maps[2], source[2], output[2];
  int queued = 0;

  Gpu(int d, alloc::DeviceStackAllocator* s)
      : device(d), stack(s), in(d), work(d), out(d), maps_ready(d, false),
        source_ready{gpu::Event(d, false), gpu::Event(d, false)}, source_free{gpu::Event(d, false), gpu::Event(d, false)},
        output_ready{gpu::Event(d, false), gpu::Event(d, false)}, output_free{gpu::Event(d, false), gpu::Event(d, false)} {}

  /// Waits for every stream (the error, if any, is the caller's to report: finish() checks).
  ~Gpu() {
    for (const cudaStream_t s : {in.get(), work.get(), out.get()}) cudaStreamSynchronize(s);
    cudaGetLastError();
    // The buffers go back to the stack after this body, the streams and events after them.
  }

  /// Takes the maps this GPU follows and two buffers each way (one where it has one column).
  void take_buffers(std::span<const GpuGatherJob* const> jobs, const std::int64_t* const host_maps[2], std::int64_t rows) {
    std::size_t largest_source = 0, largest_output = 0;
    bool used[2] = {false, false};
    for (const GpuGatherJob* j : jobs) {
      largest_source = std::max(largest_source, column_bytes(j->source));
      largest_output = std::max(largest_output, static_cast<std::size_t>(rows) * dtype_size(j->source.type));
      used[j->map] = true;
    }
    const gpu::DeviceGuard guard(device);
    for (int m = 0; m < 2; ++m) {
      if (!used[m]) continue;
      maps[m] = DeviceBytes(*stack, static_cast<std::size_t>(rows) * sizeof(std::int64_t));
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(maps[m].data(), host_maps[m], maps[m].bytes(), cudaMemcpyHostToDevice, in));
    }
    maps_ready.record(in);
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(work, maps_ready, 0));
    const int buffers = jobs.size() > 1 ? 2 : 1;
    for (int b = 0; b < buffers; ++b) source[b] = DeviceBytes(*stack, largest_source);
    for (int b = 0; b < buffers; ++b) output[b] = DeviceBytes(*stack, largest_output);
  }

  /// Queues one column: in, gathered, out, each after the buffer it reuses is free again.
  void queue(const GpuGatherJob& job, std::int64_t rows) {
    const gpu::DeviceGuard guard(device);
    const int b = queued++ % 2;
    const std::size_t width = dtype_size(job.source.type);
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(in, source_free[b], 0));
    if (column_bytes(job.source) > 0)  // an empty side of an outer join: every map entry is -1
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(source[b].data(), job.source.data, column_bytes(job.source), cudaMemcpyHostToDevice, in));
    source_ready[b].record(in);

    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(work, source_ready[b], 0));
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(work, output_free[b], 0));
    launch_gather(source[b].data(), static_cast<const std::int64_t*>(static_cast<void*>(maps[job.map].data())), rows,
                  width, output[b].data(), work);
    source_free[b].record(work);
    output_ready[b].record(work);

    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(out, output_ready[b], 0));
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(job.out->data(), output[b].data(), static_cast<std::size_t>(rows) * width,
                                    cudaMemcpyDeviceToHost, out));
    output_free[b].record(out);
  }

  void wait() const {
    in.synchronize();
    work.synchronize();
    out.synchronize();
  }
};

GpuGathers::GpuGathers(std::span<const int> devices, std::span<alloc::DeviceStackAllocator* const> stacks) {
  MGJOIN_EXPECTS(devices.size() == stacks.size(), "a device stack per GPU");
  for (std::size_t i = 0; i < devices.size(); ++i) gpus_.push_back(std::make_unique<Gpu>(devices[i], stacks[i]));
}

GpuGathers::~GpuGathers() = default;

void GpuGathers::start(std::span<const GpuGatherJob> jobs, const std::int64_t* const maps[2], std::int64_t rows) {
  std::vector<std::vector<const GpuGatherJob*>> per_gpu(gpus_.size());
  bool map_used[2] = {false, false};
  for (const GpuGatherJob& j : jobs) {
    MGJOIN_EXPECTS(j.gpu >= 0 && static_cast<std::size_t>(j.gpu) < gpus_.size() && (j.map == 0 || j.map == 1) &&
                       j.out && j.out->size() == rows && j.out->type() == j.source.type,
                   "a GPU gather job names its GPU, its map and an output of its rows and type");
    per_gpu[static_cast<std::size_t>(j.gpu)].push_back(&j);
    map_used[j.map] = true;
    // Copies from pageable memory would be staged and synchronous: pin what is not pinned yet (where
    // that fails, e.g. a read-only mapping, the copies are staged: slower, still right).
    pins_.emplace_back(j.source.data, column_bytes(j.source), alloc::Unpinnable::CopyStaged);
    pins_.emplace_back(j.out->data(), j.out->bytes(), alloc::Unpinnable::CopyStaged);
  }
  for (int m = 0; m < 2; ++m)
    if (map_used[m])
      pins_.emplace_back(maps[m], static_cast<std::size_t>(rows) * sizeof(std::int64_t), alloc::Unpinnable::CopyStaged);
  for (std::size_t d = 0; d < gpus_.size(); ++d)
    if (!per_gpu[d].empty()) gpus_[d]->take_buffers(per_gpu[d], maps, rows);
  // Column by column across the GPUs: each GPU's queue is in its own streams, so the order between GPUs
  // does not matter, and within a GPU it is the jobs' order.
  for (std::size_t d = 0; d < gpus_.size(); ++d)
    for (const GpuGatherJob* j : per_gpu[d]) gpus_[d]->queue(*j, rows);
}

void GpuGathers::finish() {
  for (const auto& g : gpus_) g->wait();
}

}  // namespace mgjoin::table
