// Sort phase pipeline: double-buffered chunksets over g GPUs (paper, Section 3.1.3).
#include "engine/src/sort/sort_phase.hpp"

#include "engine/src/sort/merge_sort.hpp"

#include "engine/src/sort/chunkset_sorter.hpp"
#include "engine/src/sort/local_sort.hpp"
#include "engine/src/sort/radix_sorter.hpp"
#include "core/cancel.hpp"
#include "core/timing.hpp"
#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <deque>
#include <memory>

namespace mgjoin::sort {
namespace {

using DeviceBytes = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;

TupleLayout layout_of(const RelationView& rel) {
  TupleLayout l;
  l.key_bytes = static_cast<int>(dtype_size(rel.key.type));
  l.payload_bytes = rel.payload ? static_cast<int>(dtype_size(rel.payload->type)) : 0;
  l.signed_key = is_signed_key(rel.key.type);
  return l;
}

/// One buffer of `capacity` tuples: keys and payloads apart (the relation's columns are apart too).
struct TupleBuffer {
  DeviceBytes keys, payload;
  TupleBuffer(alloc::DeviceStackAllocator& mem, std::int64_t capacity, const TupleLayout& l)
      : keys(mem, static_cast<std::size_t>(capacity) * l.key_bytes),
        payload(mem, std::max<std::size_t>(1, static_cast<std::size_t>(capacity) * l.payload_bytes)) {}
};

/// Streams, events and buffers of one GPU for the whole phase.
struct GpuPipeline {
  int device;
  gpu::Stream h2d, compute, d2h;
  std::array<gpu::Event, 2> ready;  // H2D of the chunkset in primary[i % 2] is done
  gpu::Event d2h_done;              // latest record: the D2H of the previous chunkset is done
  TupleBuffer secondary;
  // Two primaries: chunksets alternate between them (double buffering). The plan reserves both even
  // in-core, where the second is the radix sorter's spare buffer (see GpuChunk::spare_keys).
  std::array<TupleBuffer, 2> primary;

  GpuPipeline(int dev, alloc::DeviceStackAllocator& mem, std::int64_t capacity, const TupleLayout& l)
      : device(dev), h2d(dev), compute(dev), d2h(dev), ready{gpu::Event(dev, false), gpu::Event(dev, false)},
        d2h_done(dev, false), secondary(mem, capacity, l),
        primary{TupleBuffer(mem, capacity, l), TupleBuffer(mem, capacity, l)} {}
};

/// Timing events of every chunkset and GPU, read once at the end.
class Timelines {
 public:
  PartTimeline& make(int device) {
    auto& t = timelines_.emplace_back();
    gpu::DeviceGuard guard(device);
    for (int p = 0; p < kSortParts; ++p) {
      t.begin[p] = events_.emplace_back(device).get();
      t.end[p] = events_.emplace_back(device).get();
    }
    return t;
  }
  PartTimeline& at(std::size_t i) { return timelines_[i]; }

 private:
  std::deque<gpu::Event> events_;
  std::deque<PartTimeline> timelines_;
};

/// The merge-based sorter needs g = 2^h; for any other g it says so once and the radix sorter runs.
std::unique_ptr<ChunksetSorter> make_sorter(SortStrategy strategy, Exchange exchange, const p2p::NcclComms* nccl,
                                            int g) {
  if (strategy == SortStrategy::Merge) {
    if (merge_sort_supported(g)) return make_merge_sorter();
    std::fprintf(stderr, "mgjoin: %s\n", merge_sort_unsupported_message(g).c_str());
  }
  return make_radix_sorter(exchange, nccl);
}

using Pipelines = std::vector<std::unique_ptr<GpuPipeline>>;

void issue_h2d(const RelationView& rel, const TupleLayout& l, RowRange chunkset, int slot, const Pipelines& gpus,
               std::span<PartTimeline* const> timelines) {
  const int g = static_cast<int>(gpus.size());
  for (int d = 0; d < g; ++d) {
    auto& p = *gpus[d];
    gpu::DeviceGuard guard(p.device);
    const RowRange part = even_part(chunkset.size(), g, d);
    const std::int64_t row = chunkset.begin + part.begin;
    // primary[slot] was last read by the D2H of chunkset i - 1 (the latest record of d2h_done).
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(p.h2d, p.d2h_done, 0));
    timelines[d]->record_begin(SortPart::H2D, p.h2d);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(p.primary[slot].keys.data(), rel.key.as<std::byte>() + row * l.key_bytes,
                                    part.size() * l.key_bytes, cudaMemcpyHostToDevice, p.h2d));
    if (l.payload_bytes)
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(p.primary[slot].payload.data(),
                                      rel.payload->as<std::byte>() + row * l.payload_bytes,
                                      part.size() * l.payload_bytes, cudaMemcpyHostToDevice, p.h2d));
    timelines[d]->record_end(SortPart::H2D, p.h2d);
    p.ready[slot].record(p.h2d);
  }
}

void append_stats(Timelines& timelines, int k, int g, std::uint64_t relation_bytes, std::uint64_t nvlink_bytes,
                  double total_seconds, std::vector<PhaseStat>& stats) {
  for (int p = 0; p < kSortParts; ++p) {
    PhaseStat s{std::string(sort_part_name(static_cast<SortPart>(p)))};
    for (int i = 0; i < k; ++i) {
      double slowest = 0;
      for (int d = 0; d < g; ++d) {
        auto& t = timelines.at(static_cast<std::size_t>(i) * g + d);
        if (!t.recorded[p]) continue;
        float ms = 0;
        MGJOIN_CUDA_TRY(cudaEventElapsedTime(&ms, t.begin[p], t.end[p]));
        slowest = std::max(slowest, ms / 1e3);
      }
      s.seconds += slowest;
    }
    const auto part = static_cast<SortPart>(p);
    if (part == SortPart::H2D || part == SortPart::D2H) s.bytes_pcie = relation_bytes;
    if (part == SortPart::Exchange) s.bytes_nvlink = nvlink_bytes;
    stats.push_back(std::move(s));
  }
  stats.push_back({"sort.total", total_seconds, 2 * relation_bytes, nvlink_bytes});
}

}  // namespace

int chunksets_for(std::int64_t n, const SortPlan& plan) {
  const std::int64_t per_chunkset = plan.chunk * plan.gpus;
  return n == 0 ? 0 : static_cast<int>((n - 1) / per_chunkset + 1);
}

std::vector<std::uint64_t> free_device_bytes(std::span<const int> devices) {
  std::vector<std::uint64_t> free_bytes;
  for (const int d : devices) {
    gpu::DeviceGuard guard(d);
    std::size_t free = 0, total = 0;
    MGJOIN_CUDA_TRY(cudaMemGetInfo(&free, &total));
    free_bytes.push_back(free);
  }
  return free_bytes;
}

SortPlan plan_sort_on_devices(RelationView r, RelationView s, std::span<const int> devices,
                              std::uint64_t gpu_memory_limit) {
  return plan_sort_with_memory(r, s, devices, usable_device_bytes(free_device_bytes(devices), gpu_memory_limit));
}

SortPlan plan_sort_with_memory(RelationView r, RelationView s, std::span<const int> devices,
                               std::uint64_t usable_bytes) {
  MGJOIN_EXPECTS(r.key.type == s.key.type, "R and S must have the same key type");
  SortPlanInput in;
  in.r_size = r.size();
  in.s_size = s.size();
  in.key_bytes = static_cast<int>(dtype_size(r.key.type));
  in.r_payload_bytes = r.payload ? static_cast<int>(dtype_size(r.payload->type)) : 0;
  in.s_payload_bytes = s.payload ? static_cast<int>(dtype_size(s.payload->type)) : 0;
  in.gpus = static_cast<int>(devices.size());
  in.usable_bytes = usable_bytes;
  const TupleLayout widest{in.key_bytes, std::max(in.r_payload_bytes, in.s_payload_bytes), false};
  const int first = devices.empty() ? 0 : devices.front();
  in.sort_temp_bytes = [&](std::int64_t n) {
    gpu::DeviceGuard guard(first);
    return static_cast<std::uint64_t>(local_sort_temp_bytes(widest, n));
  };
  return plan_sort(in);
}

namespace {

/// One chunkset of one of the relations the pipeline sorts.
struct ChunksetItem {
  std::size_t relation;
  RowRange rows;
};

std::vector<ChunksetItem> chunkset_sequence(std::span<const RelationView> rels, const SortPlan& plan) {
  std::vector<ChunksetItem> items;
  for (std::size_t r = 0; r < rels.size(); ++r) {
    const std::int64_t n = rels[r].size();
    const int k = chunksets_for(n, plan);
    for (int i = 0; i < k; ++i) items.push_back({r, even_part(n, k, i)});
  }
  return items;
}

/// The buffers take any of the relations: the widest payload (the planner sized the chunk for it).
TupleLayout widest_layout(std::span<const RelationView> rels) {
  TupleLayout widest = layout_of(rels.front());
  for (const auto& rel : rels) widest.payload_bytes = std::max(widest.payload_bytes, layout_of(rel).payload_bytes);
  return widest;
}

/// GPU p's part of a chunkset in primary[slot] (its size set by the caller), once the D2H of the one
/// before is past the buffers this one uses: the secondary buffer and primary[slot] may still be read by
/// the D2H of chunkset i - 1.
GpuChunk gpu_chunk(GpuPipeline& p, int slot, bool last, const TupleLayout& layout, const SortPlan& plan,
                   alloc::DeviceStackAllocator* memory, PartTimeline* timeline) {
  gpu::DeviceGuard guard(p.device);
  MGJOIN_CUDA_TRY(cudaStreamWaitEvent(p.compute, p.d2h_done, 0));
  GpuChunk c;
  c.device = p.device;
  c.compute = p.compute;
  c.d2h = p.d2h;
  c.ready = p.ready[slot];
  c.d2h_done = p.d2h_done;
  c.memory = memory;
  c.keys = p.primary[slot].keys.data();
  c.payload = layout.payload_bytes ? p.primary[slot].payload.data() : nullptr;
  c.alt_keys = p.secondary.keys.data();
  c.alt_payload = layout.payload_bytes ? p.secondary.payload.data() : nullptr;
  c.spare_keys = last ? p.primary[1 - slot].keys.data() : nullptr;
  c.spare_payload = last && layout.payload_bytes ? p.primary[1 - slot].payload.data() : nullptr;
  c.capacity = plan.chunk_capacity;
  c.timeline = timeline;
  return c;
}

}  // namespace

std::vector<SortPhaseResult> sort_phase(std::span<const RelationView> rels, const SortPlan& plan,
                                        std::span<const int> devices,
                                        std::span<alloc::DeviceStackAllocator* const> device_memory,
                                        SortStrategy strategy, Exchange exchange, const p2p::NcclComms* nccl,
                                        std::vector<PhaseStat>& stats) {
  const int g = static_cast<int>(devices.size());
  MGJOIN_EXPECTS(g == plan.gpus && device_memory.size() == devices.size(), "one stack allocator per planned GPU");
  std::vector<SortPhaseResult> results(rels.size());
  std::uint64_t relation_bytes = 0;
  for (const auto& rel : rels) {
    MGJOIN_EXPECTS(!rel.payload || rel.payload->size == rel.key.size, "payload and key columns differ in length");
    MGJOIN_EXPECTS(rel.key.type == rels.front().key.type, "the relations of one sort phase share a key type");
    relation_bytes += static_cast<std::uint64_t>(rel.size()) * layout_of(rel).tuple_bytes();
  }
  const std::vector<ChunksetItem> items = chunkset_sequence(rels, plan);
  const int k = static_cast<int>(items.size());
  if (k == 0) return results;

  const auto start = timing::Clock::now();
  auto sorter = make_sorter(strategy, exchange, nccl, g);
  const TupleLayout widest = widest_layout(rels);
  Pipelines gpus;
  for (int d = 0; d < g; ++d)
    gpus.push_back(std::make_unique<GpuPipeline>(devices[d], *device_memory[d], plan.chunk_capacity, widest));
  Timelines timelines;
  std::vector<std::vector<PartTimeline*>> timeline_of(k);  // [chunkset][gpu]
  for (int i = 0; i < k; ++i)
    for (int d = 0; d < g; ++d) timeline_of[i].push_back(&timelines.make(devices[d]));

  const auto h2d = [&](int i) {
    const RelationView& rel = rels[items[i].relation];
    issue_h2d(rel, layout_of(rel), items[i].rows, i % 2, gpus, timeline_of[i]);
  };
  std::uint64_t nvlink_bytes = 0;
  h2d(0);
  for (int i = 0; i < k; ++i) {
    mgjoin::detail::throw_if_cancelled();  // between chunksets: the caller synchronizes the GPUs as it unwinds
    const int slot = i % 2;
    const bool last = i + 1 == k;  // no chunkset goes into primary[1 - slot]: it is this one's spare
    if (!last) h2d(i + 1);  // the next chunkset, of this relation or the next one
    const RelationView& rel = rels[items[i].relation];
    const TupleLayout layout = layout_of(rel);
    const RowRange rows = items[i].rows;
    std::vector<GpuChunk> chunks;
    for (int d = 0; d < g; ++d) {
      GpuChunk c = gpu_chunk(*gpus[d], slot, last, layout, plan, device_memory[d], timeline_of[i][d]);
      c.size = even_part(rows.size(), g, d).size();
      chunks.push_back(c);
    }
    ChunksetJob job;
    job.gpus = chunks;
    job.layout = layout;
    job.chunk_size = plan.chunk;
    job.host_keys = rel.key.as<std::byte>() + rows.begin * layout.key_bytes;
    job.host_payload = layout.payload_bytes ? rel.payload->as<std::byte>() + rows.begin * layout.payload_bytes : nullptr;
    sorter->sort(job);
    nvlink_bytes += job.bytes_nvlink;
    results[items[i].relation].runs.push_back(rows);
  }
  for (auto& p : gpus) {
    p->d2h.synchronize();
    p->compute.synchronize();
    p->h2d.synchronize();
  }
  const double seconds = timing::seconds_since(start);
  append_stats(timelines, k, g, relation_bytes, nvlink_bytes, seconds, stats);
  return results;
}

SortPhaseResult sort_phase(RelationView rel, const SortPlan& plan, std::span<const int> devices,
                           std::span<alloc::DeviceStackAllocator* const> device_memory, SortStrategy strategy,
                           Exchange exchange, const p2p::NcclComms* nccl, std::vector<PhaseStat>& stats) {
  return std::move(sort_phase(std::span<const RelationView>(&rel, 1), plan, devices, device_memory, strategy,
                              exchange, nccl, stats)
                       .front());
}

}  // namespace mgjoin::sort
