// The multi-GPU join phase (paper Section 3.3.2, Figure 9): plan partition pairs on the CPU, run one
// three-stream pipeline per GPU (one host thread each), then gather the ranges the kernels wrote into
// mapped pinned memory, redoing on the CPU any subpartition pair whose ranges overflowed it.
#include "engine/src/join/join_pipeline.hpp"

#include "engine/src/exec/key_order.hpp"

#include "engine/src/join/cpu_merge_join.hpp"
#include "engine/src/join/host_parallel.hpp"
#include "engine/src/join/join_kernel.hpp"
#include "engine/src/join/merge_path_partition.hpp"
#include "engine/src/join/output_count.hpp"
#include "core/timing.hpp"
#include "core/device.hpp"
#include "topology/numa_binding.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

namespace mgjoin::detail {
namespace {

using timing::Clock;
using timing::seconds_since;
using DeviceStack = alloc::DeviceStackAllocator;
using PinnedStack = alloc::PinnedStackAllocator;

constexpr std::uint64_t kKeyAlign = 32;  // S keys start on a 32-byte sector after R's in a stream buffer

std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

struct KeyColumns {
  const std::byte* r = nullptr;
  const std::byte* s = nullptr;
  std::size_t width = 8;
  bool is_signed = false;
};

/// What one GPU joins and where its stream writes its ranges.
struct GpuJob {
  int device = 0;
  DeviceStack* memory = nullptr;
  int streams = 3;
  std::vector<PairRange> subpartitions;  ///< subpartition k runs on stream k % streams
  std::vector<MatchRange*> stream_ranges;        ///< mapped pinned region per stream (nullptr = count only)
  std::vector<std::uint64_t> stream_capacity;   ///< ranges each region holds
  unsigned long long* snapshots = nullptr;      ///< pinned: stream's range counter after subpartition k
  // results
  TupleCounter tuples;  ///< the GPU's count, checked by the host
  std::vector<StreamTimelineEntry> timeline;
  std::exception_ptr error;
};

/// Bytes of one stream buffer holding pair p's R keys then, 32-byte aligned, its S keys.
std::uint64_t buffer_bytes(const PairRange& p, std::size_t width) {
  return round_up(p.r_size() * width, kKeyAlign) + p.s_size() * width;
}

/// Sets the L2 fetch granularity of the current device to 32 bytes (binary searches read a sector,
/// eight 4-byte or four 8-byte keys, at once) and restores it after.
class L2FetchGranularity {
 public:
  L2FetchGranularity() {
    MGJOIN_CUDA_TRY(cudaDeviceGetLimit(&previous_, cudaLimitMaxL2FetchGranularity));
    MGJOIN_CUDA_TRY(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 32));
  }
  ~L2FetchGranularity() { cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, previous_); }
  L2FetchGranularity(const L2FetchGranularity&) = delete;
  L2FetchGranularity& operator=(const L2FetchGranularity&) = delete;

 private:
  std::size_t previous_ = 0;
};

/// Waits for the streams before the buffers they use go back to the stack (also when unwinding).
struct DrainStreams {
  const std::vector<gpu::Stream>& streams;
  ~DrainStreams() {
    for (const auto& s : streams) cudaStreamSynchronize(s);
  }
};

/// Copies pair p's keys into a stream buffer (R, then S on a 32-byte boundary) and makes signed keys
/// order-preserving unsigned ones.
void enqueue_keys(const PairRange& p, const KeyColumns& keys, std::byte* buffer, cudaStream_t stream) {
  std::byte* r_dev = buffer;
  std::byte* s_dev = buffer + round_up(p.r_size() * keys.width, kKeyAlign);
  MGJOIN_CUDA_TRY(cudaMemcpyAsync(r_dev, keys.r + p.r_begin * keys.width, p.r_size() * keys.width,
                                  cudaMemcpyHostToDevice, stream));
  MGJOIN_CUDA_TRY(cudaMemcpyAsync(s_dev, keys.s + p.s_begin * keys.width, p.s_size() * keys.width,
                                  cudaMemcpyHostToDevice, stream));
  if (keys.is_signed) {
    const int width = static_cast<int>(keys.width);
    exec::flip_keys(width, r_dev, static_cast<std::int64_t>(p.r_size()), exec::sign_bit(width), stream, exec::kJoinFlipBlocks);
    exec::flip_keys(width, s_dev, static_cast<std::int64_t>(p.s_size()), exec::sign_bit(width), stream, exec::kJoinFlipBlocks);
  }
}

void run_gpu_pipeline(GpuJob& job, const KeyColumns& keys, bool record_timeline) {
  gpu::DeviceGuard guard(job.device);
  L2FetchGranularity l2;
  const std::size_t n = job.subpartitions.size();
  const int S = job.streams;

  std::vector<gpu::Stream> streams;
  for (int s = 0; s < S; ++s) streams.emplace_back(job.device);
  // The GPU's tuple count (shared by its streams) and each stream's range counter.
  alloc::StackBuffer<TupleCounter, DeviceStack> tuples(*job.memory, 1);
  alloc::StackBuffer<unsigned long long, DeviceStack> counters(*job.memory, S);
  std::vector<std::uint64_t> stream_bytes(S, 0);
  for (std::size_t k = 0; k < n; ++k)
    stream_bytes[k % S] = std::max(stream_bytes[k % S], buffer_bytes(job.subpartitions[k], keys.width));
  std::vector<alloc::StackBuffer<std::byte, DeviceStack>> buffers;
  for (int s = 0; s < S; ++s) buffers.emplace_back(*job.memory, stream_bytes[s]);
  DrainStreams drain{streams};

  // Every stream starts after the counters are zeroed (and the timeline's origin is recorded).
  gpu::Event start(job.device);
  MGJOIN_CUDA_TRY(cudaMemsetAsync(tuples.data(), 0, tuples.bytes(), streams[0]));
  MGJOIN_CUDA_TRY(cudaMemsetAsync(counters.data(), 0, counters.bytes(), streams[0]));
  start.record(streams[0]);
  for (int s = 1; s < S; ++s) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(streams[s], start, 0));

  std::vector<gpu::Event> events;
  if (record_timeline)
    for (std::size_t e = 0; e < 3 * n; ++e) events.emplace_back(job.device);
  for (std::size_t k = 0; k < n; ++k) {
    const int s = static_cast<int>(k % S);
    const PairRange& p = job.subpartitions[k];
    if (record_timeline) events[3 * k].record(streams[s]);
    enqueue_keys(p, keys, buffers[s].data(), streams[s]);
    if (record_timeline) events[3 * k + 1].record(streams[s]);
    std::byte* r_dev = buffers[s].data();
    SubpartitionJoinArgs args;
    args.r_keys = r_dev;
    args.r_size = p.r_size();
    args.s_keys = r_dev + round_up(p.r_size() * keys.width, kKeyAlign);
    args.s_size = p.s_size();
    args.r_base = p.r_begin;
    args.s_base = p.s_begin;
    args.ranges = job.stream_ranges[s];
    args.range_capacity = job.stream_capacity[s];
    args.range_counter = counters.data() + s;
    args.tuple_count = tuples.data();
    launch_join_subpartition(args, keys.width, streams[s]);
    if (record_timeline) events[3 * k + 2].record(streams[s]);
    // The counter after this pair tells the host which region slots are its ranges.
    if (job.snapshots)
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(job.snapshots + k, counters.data() + s, sizeof(unsigned long long),
                                      cudaMemcpyDeviceToHost, streams[s]));
  }
  for (const auto& st : streams) st.synchronize();
  MGJOIN_CUDA_TRY(cudaMemcpy(&job.tuples, tuples.data(), sizeof job.tuples, cudaMemcpyDeviceToHost));

  for (std::size_t k = 0; record_timeline && k < n; ++k) {
    const PairRange& p = job.subpartitions[k];
    job.timeline.push_back({job.device, static_cast<int>(k % S), k, p.size() * keys.width,
                            events[3 * k].elapsed_ms_since(start), events[3 * k + 1].elapsed_ms_since(start),
                            events[3 * k + 2].elapsed_ms_since(start)});
  }
}

/// Largest |R_ij| + |S_ij| whose stream buffers fit every GPU's device stack.
std::uint64_t subpartition_bound(std::span<DeviceStack* const> memory, int streams, std::size_t width,
                                 std::uint64_t requested) {
  constexpr std::uint64_t reserve = 1 << 20;  // counters and allocation alignment
  std::uint64_t bound = requested ? requested : ~0ull;
  for (DeviceStack* m : memory) {
    const std::uint64_t avail = m->available() > reserve ? m->available() - reserve : 0;
    const std::uint64_t per_stream = avail / static_cast<std::uint64_t>(streams);
    const std::uint64_t rows = per_stream > kKeyAlign ? (per_stream - kKeyAlign) / width : 0;
    bound = std::min(bound, rows);
  }
  MGJOIN_EXPECTS(bound > 0, "device stacks too small for the join phase's stream buffers");
  return bound;
}

/// The most ranges pair p can produce: one per distinct key of its smaller side.
std::uint64_t range_bound(const PairRange& p) { return std::min(p.r_size(), p.s_size()); }

/// Carves a GPU's range buffer into per-stream regions: each stream's exact bound when it all fits,
/// otherwise shares proportional to the bounds (overflowing pairs are then redone on the CPU).
void assign_range_regions(GpuJob& job, MatchRange* buffer, std::uint64_t capacity) {
  std::vector<std::uint64_t> stream_need(job.streams, 0);
  std::uint64_t need = 0;
  for (std::size_t k = 0; k < job.subpartitions.size(); ++k) {
    stream_need[k % job.streams] += range_bound(job.subpartitions[k]);
    need += range_bound(job.subpartitions[k]);
  }
  std::uint64_t offset = 0;
  for (int s = 0; s < job.streams; ++s) {
    const std::uint64_t cap =
        need <= capacity ? stream_need[s]
                         : static_cast<std::uint64_t>(static_cast<unsigned __int128>(stream_need[s]) * capacity / need);
    job.stream_ranges.push_back(buffer ? buffer + offset : nullptr);
    job.stream_capacity.push_back(buffer ? cap : 0);
    offset += cap;
  }
}

/// A GPU's pinned range memory for one join: counter snapshots and the regions its kernels write.
struct RangeMemory {
  alloc::StackBuffer<unsigned long long, PinnedStack> snapshots;
  alloc::StackBuffer<MatchRange, PinnedStack> regions;
};

/// Takes job's snapshots and as much of its range bound as `memory` holds, and assigns the regions.
RangeMemory reserve_range_memory(GpuJob& job, PinnedStack& memory) {
  RangeMemory m;
  if (job.subpartitions.empty()) return m;
  m.snapshots = alloc::StackBuffer<unsigned long long, PinnedStack>(memory, job.subpartitions.size());
  std::uint64_t need = 0;
  for (const PairRange& p : job.subpartitions) need += range_bound(p);
  constexpr std::uint64_t slack = 64;  // allocation alignment
  const std::uint64_t fits = memory.available() > slack ? (memory.available() - slack) / sizeof(MatchRange) : 0;
  const std::uint64_t capacity = std::min(need, fits);
  if (capacity > 0) m.regions = alloc::StackBuffer<MatchRange, PinnedStack>(memory, capacity);
  job.snapshots = m.snapshots.data();
  assign_range_regions(job, m.regions.data(), m.regions.size());
  return m;
}

/// Copies each subpartition pair's ranges out of its stream region; pairs that overflowed their region
/// are returned for the CPU.
std::vector<PairRange> gather_ranges(const std::vector<GpuJob>& jobs, std::vector<MatchRange>& out) {
  struct Piece {
    const MatchRange* src;
    std::uint64_t n, dst;
  };
  std::vector<Piece> pieces;
  std::vector<PairRange> overflowed;
  std::uint64_t total = out.size();
  for (const GpuJob& job : jobs) {
    std::vector<std::uint64_t> previous(job.streams, 0);
    for (std::size_t k = 0; k < job.subpartitions.size(); ++k) {
      const int s = static_cast<int>(k % job.streams);
      const std::uint64_t end = job.snapshots[k];
      if (end <= job.stream_capacity[s]) {
        pieces.push_back({job.stream_ranges[s] + previous[s], end - previous[s], total});
        total += end - previous[s];
      } else {
        overflowed.push_back(job.subpartitions[k]);
      }
      previous[s] = end;
    }
  }
  out.resize(total);
  host_parallel_for(static_cast<std::int64_t>(pieces.size()), [&](std::int64_t i) {
    std::memcpy(out.data() + pieces[i].dst, pieces[i].src, pieces[i].n * sizeof(MatchRange));
  });
  return overflowed;
}

void join_on_cpu(ColumnView r, ColumnView s, const std::vector<PairRange>& pairs, std::vector<MatchRange>& out) {
  std::vector<std::vector<MatchRange>> found(pairs.size());
  host_parallel_for(static_cast<std::int64_t>(pairs.size()),
                    [&](std::int64_t i) { append_matching_ranges(r, s, pairs[i], found[i]); });
  for (const auto& f : found) out.insert(out.end(), f.begin(), f.end());
}

void run_all(std::vector<GpuJob>& jobs, const KeyColumns& keys, const JoinPhaseOptions& options) {
  std::vector<std::thread> threads;
  for (GpuJob& job : jobs)
    threads.emplace_back([&job, &keys, &options] {
      try {
        // This thread drives its GPU's copies from host memory: keep it near that GPU (Section 2).
        if (options.topology) topology::bind_thread_to_gpu_numa(*options.topology, job.device);
        run_gpu_pipeline(job, keys, options.record_timeline);
      } catch (...) {
        job.error = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (const GpuJob& job : jobs)
    if (job.error) std::rethrow_exception(job.error);
}

}  // namespace

JoinPhaseResult join_phase(ColumnView r_sorted_keys, ColumnView s_sorted_keys, std::span<const int> devices,
                           std::span<DeviceStack* const> device_memory, std::span<PinnedStack* const> range_memory,
                           OutputMode output, std::vector<PhaseStat>& stats, const JoinPhaseOptions& options) {
  MGJOIN_EXPECTS(r_sorted_keys.type == s_sorted_keys.type && is_key_dtype(r_sorted_keys.type),
                 "join phase needs R and S keys of one integer type");
  MGJOIN_EXPECTS(!devices.empty() && devices.size() == device_memory.size(),
                 "join phase needs one device stack per GPU");
  MGJOIN_EXPECTS(options.streams >= 1, "join phase needs at least one stream per GPU");
  const bool write_ranges = output != OutputMode::Count;
  if (write_ranges) {
    MGJOIN_EXPECTS(range_memory.size() == devices.size(), "join phase needs one range stack per GPU");
    for (const PinnedStack* m : range_memory)
      MGJOIN_EXPECTS(m->backing().mapped(),
                     "the join kernel writes ranges into mapped pinned memory: make the range stacks mapped");
  }
  const KeyColumns keys{static_cast<const std::byte*>(r_sorted_keys.data),
                        static_cast<const std::byte*>(s_sorted_keys.data), dtype_size(r_sorted_keys.type),
                        is_signed_key(r_sorted_keys.type)};
  JoinPhaseResult result;

  // 1. Merge-path partition: one partition pair per GPU, >= 3 subpartition pairs each.
  auto t = Clock::now();
  const PartitionOptions partition{
      .partitions = devices.size(),
      .max_subpartition_rows = subpartition_bound(device_memory, options.streams, keys.width, options.max_subpartition_rows),
      .min_subpartitions = options.min_subpartitions};
  JoinPartitionPlan plan = plan_join_partitions(r_sorted_keys, s_sorted_keys, partition);
  std::vector<GpuJob> jobs(devices.size());
  std::uint64_t key_bytes = 0;
  for (std::size_t g = 0; g < devices.size(); ++g) {
    jobs[g].device = devices[g];
    jobs[g].memory = device_memory[g];
    jobs[g].subpartitions = std::move(plan.partitions[g].subpartitions);
    jobs[g].streams = std::max(1, std::min<int>(options.streams, static_cast<int>(jobs[g].subpartitions.size())));
    result.subpartitions += jobs[g].subpartitions.size();
    for (const PairRange& p : jobs[g].subpartitions) key_bytes += p.size() * keys.width;
  }
  stats.push_back({"join.partition", seconds_since(t)});

  // 2. Pinned snapshots of the range counters and the range regions (mapped, written by the kernels).
  t = Clock::now();
  std::vector<RangeMemory> held;  // returned to the stacks when the phase ends
  for (std::size_t g = 0; g < jobs.size(); ++g) {
    if (write_ranges)
      held.push_back(reserve_range_memory(jobs[g], *range_memory[g]));
    else
      assign_range_regions(jobs[g], nullptr, 0);  // count only
  }

  // 3. All GPUs at once.
  std::vector<GpuJob> busy;
  for (GpuJob& job : jobs)
    if (!job.subpartitions.empty()) busy.push_back(std::move(job));
  run_all(busy, keys, options);
  std::vector<TupleCounter> counters;
  for (const GpuJob& job : busy) {
    counters.push_back(job.tuples);
    result.timeline.insert(result.timeline.end(), job.timeline.begin(), job.timeline.end());
  }
  // Refuses an output of 2^64 or more tuples before any range is gathered.
  result.count = total_tuples(counters, plan.boundary_ranges);
  stats.push_back({"join.gpu", seconds_since(t), key_bytes, 0});

  // 4. Ranges: those found at the cuts, the kernels' and any redone on the CPU.
  t = Clock::now();
  if (write_ranges) {
    result.ranges = std::move(plan.boundary_ranges);
    const std::vector<PairRange> overflowed = gather_ranges(busy, result.ranges);
    result.cpu_fallback_subpartitions = overflowed.size();
    join_on_cpu(r_sorted_keys, s_sorted_keys, overflowed, result.ranges);
  }
  stats.push_back({"join.ranges", seconds_since(t)});
  return result;
}

}  // namespace mgjoin::detail
