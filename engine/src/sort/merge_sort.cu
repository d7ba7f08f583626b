// Merge-based multi-GPU sort of one chunkset (paper, Section 3.1.1): local sort, then the merge stages of
// merge_schedule(), each a pivot search, a block swap and on-GPU merges; then the copies back to the host.
#include "engine/src/sort/merge_sort.hpp"

#include "alloc/cub_adapter.cuh"
#include "engine/src/exec/key_order.hpp"
#include "engine/src/exec/rows.hpp"
#include "engine/src/sort/pivot_search.cuh"
#include "engine/src/sort/radix_partition.hpp"
#include "p2p/block_swap.hpp"
#include "core/device.hpp"
#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <cub/device/device_merge.cuh>

#include <cstddef>
#include <type_traits>

namespace mgjoin::sort {

bool merge_sort_supported(int g) { return g >= 1 && g <= kMaxMergeSortGpus && (g & (g - 1)) == 0; }

std::string merge_sort_unsupported_message(int g) {
  return "merge-based sort needs a power-of-two number of GPUs (1, 2, 4, 8 or 16), not " + std::to_string(g) +
         "; using the radix-based sort instead";
}

// ------------------------------------------------------------------ the stage schedule (host only)
namespace {

/// Stage i of the result runs stage i of `a` and of `b` at once (they touch disjoint chunks).
void append_side_by_side(std::vector<MergeStage>& out, const std::vector<MergeStage>& a,
                         const std::vector<MergeStage>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    MergeStage stage = a[i];
    stage.insert(stage.end(), b[i].begin(), b[i].end());
    out.push_back(std::move(stage));
  }
}

/// Sorting chunks [first, first + count), each sorted on its own: sort both halves, merge across them
/// (afterwards every key of the left half is <= every key of the right half and each chunk is sorted
/// again), then sort both halves once more, which leaves the cross-half order intact.
std::vector<MergeStage> schedule(int first, int count) {
  if (count == 1) return {};
  const int half = count / 2;
  const auto left = schedule(first, half);
  const auto right = schedule(first + half, half);
  std::vector<MergeStage> stages;
  append_side_by_side(stages, left, right);
  stages.push_back({GroupMerge{first, first + half, first + count}});
  append_side_by_side(stages, left, right);
  return stages;
}

}  // namespace

std::vector<MergeStage> merge_schedule(int g) {
  MGJOIN_EXPECTS(merge_sort_supported(g), merge_sort_unsupported_message(g));
  return schedule(0, g);
}

// ------------------------------------------------------------------ typed kernels: pivot and merge
namespace {

/// One side of a group merge, untyped: each chunk's current keys and length.
struct SideChunks {
  const void* keys[kMaxChunksPerSide] = {};
  std::uint64_t length[kMaxChunksPerSide] = {};
  int count = 0;
};

template <class Key>
ChunkGroupView<Key> typed(const SideChunks& side) {
  ChunkGroupView<Key> view;
  for (int c = 0; c < side.count; ++c) view.append(static_cast<const Key*>(side.keys[c]), side.length[c]);
  return view;
}

/// One thread: O(log n) dependent loads, most of them over NVLink; a wider search would not pay off.
template <class Key>
__global__ void pivot_kernel(ChunkGroupView<Key> left, ChunkGroupView<Key> right, std::uint64_t* pivot) {
  *pivot = find_pivot(left, right);
}

void launch_pivot_search(int key_bytes, const SideChunks& left, const SideChunks& right, std::uint64_t* pivot,
                         cudaStream_t stream) {
  dispatch_key_width(key_bytes, [&](auto key) {
    using K = decltype(key);
    pivot_kernel<<<1, 1, 0, stream>>>(typed<K>(left), typed<K>(right), pivot);
  });
  MGJOIN_CHECK_LAUNCH();
}

/// The two sorted runs [0, first_run) and [first_run, n) of keys_in/payload_in merged into keys_out/payload_out.
struct TwoRuns {
  const void* keys_in = nullptr;
  const void* payload_in = nullptr;
  std::int64_t first_run = 0;
  std::int64_t n = 0;
  void* keys_out = nullptr;
  void* payload_out = nullptr;
};

template <class Key, class Payload>
void merge_typed(const TwoRuns& r, alloc::DeviceStackAllocator& memory, cudaStream_t stream) {
  const auto* k = static_cast<const Key*>(r.keys_in);
  const std::int64_t n2 = r.n - r.first_run;
  if constexpr (std::is_void_v<Payload>) {
    alloc::run_cub(memory, [&](void* temp, std::size_t& bytes) {
      return cub::DeviceMerge::MergeKeys(temp, bytes, k, r.first_run, k + r.first_run, n2,
                                         static_cast<Key*>(r.keys_out), ::cuda::std::less<>{}, stream);
    });
  } else {
    const auto* v = static_cast<const Payload*>(r.payload_in);
    alloc::run_cub(memory, [&](void* temp, std::size_t& bytes) {
      return cub::DeviceMerge::MergePairs(temp, bytes, k, v, r.first_run, k + r.first_run, v + r.first_run, n2,
                                          static_cast<Key*>(r.keys_out), static_cast<Payload*>(r.payload_out),
                                          ::cuda::std::less<>{}, stream);
    });
  }
}

/// CUB DeviceMerge: six instantiations (unsigned 4/8-byte keys x payloads of 0/4/8 bytes).
void merge_two_runs(const TupleLayout& l, const TwoRuns& r, alloc::DeviceStackAllocator& memory,
                    cudaStream_t stream) {
  dispatch_widths(l.key_bytes, l.payload_bytes, [&](auto key, auto payload) {
    merge_typed<decltype(key), payload_or_void<decltype(payload)>>(r, memory, stream);
  });
}

// ------------------------------------------------------------------ the driver (untyped)

SortedIn flipped(SortedIn b) { return b == SortedIn::Primary ? SortedIn::Alternate : SortedIn::Primary; }

void record_begin(const GpuChunk& gpu, SortPart part, cudaStream_t s) {
  if (gpu.timeline) gpu.timeline->record_begin(part, s);
}
void record_end(const GpuChunk& gpu, SortPart part, cudaStream_t s) {
  if (gpu.timeline) gpu.timeline->record_end(part, s);
}

/// One chunkset through local sort and merge stages. Every chunk's work goes to its compute stream;
/// chunks wait for each other only through events (ready_ before a pivot search, copied_ in a swap).
class MergeStages {
 public:
  MergeStages(std::span<GpuChunk> gpus, const TupleLayout& layout)
      : gpus_(gpus), layout_(layout), current_(gpus.size(), SortedIn::Primary) {
    for (const GpuChunk& g : gpus) {
      lengths_.push_back(static_cast<std::uint64_t>(g.size));
      ready_.emplace_back(g.device, false);
      copied_.emplace_back(g.device, false);
    }
  }

  MergeSortResult run() {
    for (std::size_t d = 0; d < gpus_.size(); ++d) sort_locally(d);
    const auto stages = merge_schedule(static_cast<int>(gpus_.size()));
    if (!stages.empty()) {  // one GPU has no Exchange part
      for (const GpuChunk& g : gpus_) record_begin(g, SortPart::Exchange, g.compute);
      for (const MergeStage& stage : stages) run_stage(stage);
      for (const GpuChunk& g : gpus_) record_end(g, SortPart::Exchange, g.compute);
    }
    for (std::size_t d = 0; d < gpus_.size(); ++d) flip_sign(d);  // back to the user's representation
    return {current_, bytes_nvlink_};
  }

 private:
  void* keys(std::size_t d, SortedIn b) const { return b == SortedIn::Primary ? gpus_[d].keys : gpus_[d].alt_keys; }
  void* payload(std::size_t d, SortedIn b) const {
    return b == SortedIn::Primary ? gpus_[d].payload : gpus_[d].alt_payload;
  }
  SortedIn other(std::size_t d) const { return flipped(current_[d]); }

  void flip_sign(std::size_t d) {
    gpu::DeviceGuard guard(gpus_[d].device);
    exec::flip_keys(layout_.key_bytes, keys(d, current_[d]), gpus_[d].size, sign_flip_mask(layout_), gpus_[d].compute,
                    exec::kSortFlipBlocks);
  }

  // ---- local sort: the radix strategy's CUB sort, after the chunk has arrived
  void sort_locally(std::size_t d) {
    const GpuChunk& g = gpus_[d];
    gpu::DeviceGuard guard(g.device);
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(g.compute, g.ready, 0));
    record_begin(g, SortPart::LocalSort, g.compute);
    flip_sign(d);
    alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator> temp(*g.memory,
                                                                   local_sort_temp_bytes(layout_, g.size));
    current_[d] = local_sort(layout_, g.keys, g.alt_keys, g.payload, g.alt_payload, g.size, 0, layout_.key_bytes * 8,
                             temp.data(), temp.size(), g.compute);
    record_end(g, SortPart::LocalSort, g.compute);
  }

  // ---- one merge stage: the pivots of all its groups, then swaps and merges
  void run_stage(const MergeStage& stage) {
    const std::vector<std::uint64_t> pivots = find_pivots(stage);
    for (std::size_t i = 0; i < stage.size(); ++i) {
      const GroupMerge& m = stage[i];
      const p2p::BlockSwapPlan plan = p2p::plan_block_swap(lengths_, m.first, m.mid, m.last, pivots[i]);
      bytes_nvlink_ += p2p::issue_block_swap(plan, swap_endpoints(), static_cast<std::size_t>(layout_.key_bytes),
                                             static_cast<std::size_t>(layout_.payload_bytes));
      for (const p2p::ChunkSwap& swap : plan.chunks) finish_chunk(swap);
    }
  }

  SideChunks side(int first, int last) const {
    SideChunks s;
    for (int d = first; d < last; ++d, ++s.count) {
      s.keys[s.count] = keys(d, current_[d]);
      s.length[s.count] = lengths_[d];
    }
    return s;
  }

  /// The pivot search of a group runs on its first chunk's stream, after the work of every chunk of the
  /// group so far (it reads them all over P2P).
  void order_after_group(const GroupMerge& m) {
    const GpuChunk& home = gpus_[m.first];
    for (int d = m.first + 1; d < m.last; ++d) {
      {
        gpu::DeviceGuard guard(gpus_[d].device);
        ready_[d].record(gpus_[d].compute);
      }
      gpu::DeviceGuard guard(home.device);
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(home.compute, ready_[d], 0));
    }
  }

  /// One pivot per group of the stage: the searches run at once, the host waits for all of them (the
  /// sizes of the copies depend on them). A finished search also means that every chunk of its group
  /// has finished its earlier work, so the swap may read their current buffers.
  std::vector<std::uint64_t> find_pivots(const MergeStage& stage) {
    std::vector<alloc::StackBuffer<std::uint64_t, alloc::DeviceStackAllocator>> found;
    for (const GroupMerge& m : stage) {
      order_after_group(m);
      const GpuChunk& home = gpus_[m.first];
      gpu::DeviceGuard guard(home.device);
      found.emplace_back(*home.memory, 1);
      launch_pivot_search(layout_.key_bytes, side(m.first, m.mid), side(m.mid, m.last), found.back().data(),
                          home.compute);
    }
    std::vector<std::uint64_t> pivots(stage.size());
    for (std::size_t i = 0; i < stage.size(); ++i) {
      const GpuChunk& home = gpus_[stage[i].first];
      gpu::DeviceGuard guard(home.device);
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(&pivots[i], found[i].data(), sizeof(std::uint64_t), cudaMemcpyDeviceToHost,
                                      home.compute));
      MGJOIN_CUDA_TRY(cudaStreamSynchronize(home.compute));
    }
    return pivots;
  }

  std::vector<p2p::SwapEndpoint> swap_endpoints() const {
    std::vector<p2p::SwapEndpoint> endpoints;
    for (std::size_t d = 0; d < gpus_.size(); ++d)
      endpoints.push_back({gpus_[d].device, gpus_[d].compute, keys(d, current_[d]), payload(d, current_[d]),
                           keys(d, other(d)), payload(d, other(d)), copied_[d].get()});
    return endpoints;
  }

  /// After the swap a chunk's other buffer holds one run (it becomes current) or two, merged back into the
  /// current buffer (the swap's barrier has ordered this after every peer's reads of it).
  void finish_chunk(const p2p::ChunkSwap& swap) {
    const auto d = static_cast<std::size_t>(swap.chunk);
    if (swap.after == p2p::ChunkAfterSwap::replaced) {
      current_[d] = other(d);
      return;
    }
    const GpuChunk& g = gpus_[d];
    gpu::DeviceGuard guard(g.device);
    const TwoRuns runs{keys(d, other(d)), payload(d, other(d)), static_cast<std::int64_t>(swap.first_run), g.size,
                       keys(d, current_[d]), payload(d, current_[d])};
    merge_two_runs(layout_, runs, *g.memory, g.compute);
  }

  std::span<GpuChunk> gpus_;
  TupleLayout layout_;
  std::vector<SortedIn> current_;
  std::vector<std::uint64_t> lengths_;
  std::vector<gpu::Event> ready_;
  std::vector<gpu::Event> copied_;
  std::uint64_t bytes_nvlink_ = 0;
};

}  // namespace

MergeSortResult merge_sort_chunkset(std::span<GpuChunk> gpus, const TupleLayout& layout) {
  const int g = static_cast<int>(gpus.size());
  MGJOIN_EXPECTS(merge_sort_supported(g), merge_sort_unsupported_message(g));
  MGJOIN_EXPECTS(layout.key_bytes == 4 || layout.key_bytes == 8, "merge sort: keys are 4 or 8 bytes");
  for (const GpuChunk& c : gpus)
    MGJOIN_EXPECTS(c.memory != nullptr && c.compute != nullptr && c.size >= 0,
                   "merge sort: every GPU needs a stack, a compute stream and a size");
  return MergeStages(gpus, layout).run();
}

// ------------------------------------------------------------------ the ChunksetSorter

namespace {

/// GPU d's sorted chunk to rows [row, row + size) of the host columns, on its d2h stream.
void copy_to_host(const ChunksetJob& job, const GpuChunk& g, SortedIn in, std::int64_t row, gpu::Event& sorted) {
  gpu::DeviceGuard guard(g.device);
  sorted.record(g.compute);
  MGJOIN_CUDA_TRY(cudaStreamWaitEvent(g.d2h, sorted, 0));
  record_begin(g, SortPart::D2H, g.d2h);
  const TupleLayout& l = job.layout;
  const bool primary = in == SortedIn::Primary;
  MGJOIN_CUDA_TRY(cudaMemcpyAsync(exec::row_at(job.host_keys, row, l.key_bytes), primary ? g.keys : g.alt_keys,
                                  g.size * l.key_bytes, cudaMemcpyDeviceToHost, g.d2h));
  if (l.payload_bytes > 0)
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(exec::row_at(job.host_payload, row, l.payload_bytes),
                                    primary ? g.payload : g.alt_payload, g.size * l.payload_bytes,
                                    cudaMemcpyDeviceToHost, g.d2h));
  record_end(g, SortPart::D2H, g.d2h);
  MGJOIN_CUDA_TRY(cudaEventRecord(g.d2h_done, g.d2h));
}

class MergeSorter final : public ChunksetSorter {
 public:
  void sort(ChunksetJob& job) override {
    const MergeSortResult result = merge_sort_chunkset(job.gpus, job.layout);
    job.bytes_nvlink += result.bytes_nvlink;
    std::int64_t row = 0;
    for (std::size_t d = 0; d < job.gpus.size(); ++d) {
      const GpuChunk& g = job.gpus[d];
      gpu::Event sorted(g.device, false);  // destroying a recorded event is fine: CUDA frees it when done
      copy_to_host(job, g, result.sorted_in[d], row, sorted);
      row += g.size;
    }
  }
  std::string_view name() const override { return "merge"; }
};

}  // namespace

std::unique_ptr<ChunksetSorter> make_merge_sorter() { return std::make_unique<MergeSorter>(); }

}  // namespace mgjoin::sort
