// Radix-partitioning multi-GPU chunkset sort (paper, Section 3.1.2); the steps are in radix_sorter.hpp.
#include "engine/src/sort/radix_sorter.hpp"

#include "engine/src/exec/key_order.hpp"
#include "engine/src/exec/rows.hpp"
#include "engine/src/sort/bucket_distribution.hpp"
#include "engine/src/sort/local_sort.hpp"
#include "engine/src/sort/planner.hpp"
#include "engine/src/sort/radix_partition.hpp"
#include "p2p/all_to_all.hpp"
#include "core/device.hpp"
#include "p2p/nccl_comms.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace mgjoin::sort {
namespace {

using exec::row_at;
using DeviceBytes = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;
using DeviceCounts = alloc::StackBuffer<std::uint64_t, alloc::DeviceStackAllocator>;

/// The overlapped exchange (copy engines, spare buffers) cuts each GPU's sort units into waves: a GPU
/// sorts the units of wave w as soon as wave w has arrived from every peer, while later waves are still
/// on the links. The copy back to the host starts with the first sorted unit and is the longest part,
/// so the first waves are small (it starts sooner) and later ones larger (fewer events).
constexpr int kExchangeWaves = 8;
/// Upper end of each wave, as a fraction of the tuples a GPU receives.
constexpr std::array<double, kExchangeWaves> kWaveEnds{1.0 / 64, 1.0 / 32, 1.0 / 16, 1.0 / 8,
                                                       1.0 / 4,  1.0 / 2,  3.0 / 4,  1.0};

class RadixSorter final : public ChunksetSorter {
 public:
  RadixSorter(Exchange exchange, const p2p::NcclComms* nccl) : exchange_(exchange), nccl_(nccl) {
    MGJOIN_EXPECTS(exchange != Exchange::Nccl || nccl != nullptr, "the NCCL exchange needs communicators");
  }
  std::string_view name() const override { return "radix"; }
  void sort(ChunksetJob& job) override;

 private:
  /// Per-chunkset state of the sort of one chunkset.
  struct State {
    ChunksetJob* job = nullptr;
    int key_bits = 0;
    std::uint64_t key_xor = 0;
    std::vector<DeviceCounts> device_counts;  // per GPU: room for g histograms (one refinement round)
    std::vector<Histogram> host_counts;       // [gpu * g + slot]
    std::vector<Bucket> buckets;
  };

  void ensure_events(std::span<GpuChunk> gpus);
  void partition_top_level(State& st);
  void refine_spanning(State& st, std::span<const std::size_t> spanning);
  void collect_histograms(State& st, int slots);
  void swap_buckets(State& st, const ExchangePlan& plan);
  std::vector<p2p::PeerCopy> peer_copies(State& st, std::span<const ExchangeCopy> plan_copies) const;
  void start_lanes(std::span<GpuChunk> gpus);
  void pull_on_lanes(std::span<GpuChunk> gpus, std::span<const p2p::PeerCopy> copies);
  void pull_in_waves(State& st, const ExchangePlan& plan);
  void sort_and_copy_back(State& st, const ExchangePlan& plan, bool overlapped);
  /// Lane (dst, src) has delivered wave w of dst's pulls from src.
  gpu::Event& wave_done(int dst, int src, int wave) {
    return wave_done_[(dst * exchanged_.size() + src) * kExchangeWaves + wave];  // g = exchanged_.size()
  }

  Exchange exchange_;
  const p2p::NcclComms* nccl_;
  std::vector<gpu::Event> exchanged_;   // per GPU: its pulls are done (no timing)
  std::vector<gpu::Event> unit_ready_;  // per GPU: last sorted unit may be copied back (no timing)
  // Copy-engine exchange: per destination GPU one lane stream per source, so all links run at once.
  std::vector<gpu::Stream> lanes_;       // [dst * g + src]
  std::vector<gpu::Event> lane_done_;    // [dst * g + src]
  std::vector<gpu::Event> lanes_start_;  // per GPU: its partition is done (lanes may read and write)
  std::vector<gpu::Event> wave_done_;    // see wave_done()
};

void begin_exchange_timeline(std::span<GpuChunk> gpus) {
  for (auto& c : gpus) {
    gpu::DeviceGuard guard(c.device);
    c.timeline->record_begin(SortPart::Exchange, c.compute);
  }
}

/// Wave of each sort unit of GPU d: by the position of its first tuple among the tuples d receives.
int wave_of(const SortUnit& u, std::int64_t dest_size) {
  if (dest_size == 0) return 0;
  const double at = static_cast<double>(u.offset) / static_cast<double>(dest_size);
  const auto it = std::upper_bound(kWaveEnds.begin(), kWaveEnds.end(), at);
  return static_cast<int>(std::min<std::ptrdiff_t>(kExchangeWaves - 1, it - kWaveEnds.begin()));
}

/// Wave of an exchange copy: that of the destination unit its first tuple lands in.
int wave_of(const ExchangeCopy& x, const ExchangePlan& plan) {
  const auto& units = plan.units[x.dst];
  const auto it = std::upper_bound(units.begin(), units.end(), x.dst_offset,
                                   [](std::int64_t offset, const SortUnit& u) { return offset < u.offset; });
  MGJOIN_EXPECTS(it != units.begin(), "exchange copy outside its destination's sort units");
  return wave_of(*std::prev(it), plan.dest_sizes[x.dst]);
}

/// Whether every GPU of the job has a spare buffer (then sorting need not wait for the whole swap).
bool has_spare_buffers(std::span<const GpuChunk> gpus) {
  return std::all_of(gpus.begin(), gpus.end(), [](const GpuChunk& c) { return c.spare_keys != nullptr; });
}

void RadixSorter::ensure_events(std::span<GpuChunk> gpus) {
  if (exchanged_.size() == gpus.size()) return;
  exchanged_.clear();
  unit_ready_.clear();
  lanes_.clear();
  lane_done_.clear();
  lanes_start_.clear();
  wave_done_.clear();
  for (const auto& c : gpus) {
    exchanged_.emplace_back(c.device, false);
    unit_ready_.emplace_back(c.device, false);
    lanes_start_.emplace_back(c.device, false);
    for (std::size_t src = 0; src < gpus.size(); ++src) {
      lanes_.emplace_back(c.device);
      lane_done_.emplace_back(c.device, false);
      for (int w = 0; w < kExchangeWaves; ++w) wave_done_.emplace_back(c.device, false);
    }
  }
}

void RadixSorter::start_lanes(std::span<GpuChunk> gpus) {
  const int g = static_cast<int>(gpus.size());
  for (int d = 0; d < g; ++d) {
    gpu::DeviceGuard guard(gpus[d].device);
    lanes_start_[d].record(gpus[d].compute);
  }
  // Lane (d, s) starts once both GPU d (its buffer is free) and GPU s (its buckets are written) are ready.
  for (int d = 0; d < g; ++d) {
    gpu::DeviceGuard guard(gpus[d].device);
    for (int s = 0; s < g; ++s) {
      auto& lane = lanes_[d * g + s];
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane, lanes_start_[d], 0));
      if (s != d) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane, lanes_start_[s], 0));
    }
  }
}

std::vector<cudaStream_t> lane_handles(std::span<gpu::Stream> lanes) {
  std::vector<cudaStream_t> handles;
  for (auto& l : lanes) handles.push_back(l.get());
  return handles;
}

std::vector<int> device_ids(std::span<const GpuChunk> gpus) {
  std::vector<int> ids;
  for (const auto& c : gpus) ids.push_back(c.device);
  return ids;
}

void RadixSorter::pull_on_lanes(std::span<GpuChunk> gpus, std::span<const p2p::PeerCopy> copies) {
  const int g = static_cast<int>(gpus.size());
  start_lanes(gpus);
  p2p::all_to_all_copy_engines(copies, device_ids(gpus), lane_handles(lanes_));
  for (int d = 0; d < g; ++d) {
    gpu::DeviceGuard guard(gpus[d].device);
    for (int s = 0; s < g; ++s) {
      lane_done_[d * g + s].record(lanes_[d * g + s]);
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpus[d].compute, lane_done_[d * g + s], 0));
    }
  }
}

void RadixSorter::collect_histograms(State& st, int slots) {
  const auto gpus = st.job->gpus;
  const int g = static_cast<int>(gpus.size());
  for (int d = 0; d < g; ++d) {
    gpu::DeviceGuard guard(gpus[d].device);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(st.host_counts[static_cast<std::size_t>(d) * g].data(),
                                    st.device_counts[d].data(), sizeof(Histogram) * slots, cudaMemcpyDeviceToHost,
                                    gpus[d].compute));
  }
  for (const auto& c : gpus) MGJOIN_CUDA_TRY(cudaStreamSynchronize(c.compute));
}

void RadixSorter::partition_top_level(State& st) {
  const auto gpus = st.job->gpus;
  const int g = static_cast<int>(gpus.size());
  for (auto& c : gpus) {
    gpu::DeviceGuard guard(c.device);
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(c.compute, c.ready, 0));
    c.timeline->record_begin(SortPart::Partition, c.compute);
    radix_partition(st.job->layout, c.keys, c.payload, c.alt_keys, c.alt_payload, c.size, st.key_bits - kRadixBits,
                    st.key_xor, st.device_counts[&c - gpus.data()].data(), *c.memory, c.compute);
  }
  collect_histograms(st, 1);
  std::vector<Histogram> per_gpu(g);
  for (int d = 0; d < g; ++d) per_gpu[d] = st.host_counts[static_cast<std::size_t>(d) * g];
  st.buckets = top_level_buckets(per_gpu);
}

void RadixSorter::refine_spanning(State& st, std::span<const std::size_t> spanning) {
  const auto gpus = st.job->gpus;
  const int g = static_cast<int>(gpus.size());
  const auto& layout = st.job->layout;
  MGJOIN_EXPECTS(static_cast<int>(spanning.size()) <= g, "at most g - 1 spanning buckets per round");
  for (int d = 0; d < g; ++d) {
    auto& c = gpus[d];
    gpu::DeviceGuard guard(c.device);
    std::size_t next = 0;
    std::int64_t offset = 0;  // of bucket l in this GPU's secondary buffer
    for (std::size_t l = 0; l < st.buckets.size() && next < spanning.size(); ++l) {
      if (l == spanning[next]) {
        // Partition the bucket on its next 8 bits into the (free) primary buffer, then back in place.
        const Bucket& b = st.buckets[l];
        const std::int64_t n = b.counts[d];
        radix_partition(layout, row_at(c.alt_keys, offset, layout.key_bytes), row_at(c.alt_payload, offset, layout.payload_bytes),
                        row_at(c.keys, offset, layout.key_bytes), row_at(c.payload, offset, layout.payload_bytes), n,
                        st.key_bits - b.bits - kRadixBits, 0, st.device_counts[d].data() + next * kRadixBuckets,
                        *c.memory, c.compute);
        copy_tuples(layout, row_at(c.alt_keys, offset, layout.key_bytes), row_at(c.alt_payload, offset, layout.payload_bytes),
                    row_at(c.keys, offset, layout.key_bytes), row_at(c.payload, offset, layout.payload_bytes), n, c.compute);
        ++next;
      }
      offset += st.buckets[l].counts[d];
    }
  }
  collect_histograms(st, static_cast<int>(spanning.size()));
  // Replace from the back so that the indices of the earlier spanning buckets stay valid.
  for (std::size_t r = spanning.size(); r-- > 0;) {
    std::vector<Histogram> per_gpu(g);
    for (int d = 0; d < g; ++d) per_gpu[d] = st.host_counts[static_cast<std::size_t>(d) * g + r];
    refine_bucket(st.buckets, spanning[r], per_gpu);
  }
}

std::vector<p2p::PeerCopy> RadixSorter::peer_copies(State& st, std::span<const ExchangeCopy> plan_copies) const {
  const auto gpus = st.job->gpus;
  const auto& layout = st.job->layout;
  std::vector<p2p::PeerCopy> copies;
  for (const auto& x : plan_copies) {
    const auto& src = gpus[x.src];
    const auto& dst = gpus[x.dst];
    copies.push_back({x.src, x.dst, row_at(src.alt_keys, x.src_offset, layout.key_bytes),
                      row_at(dst.keys, x.dst_offset, layout.key_bytes),
                      static_cast<std::size_t>(x.count) * layout.key_bytes});
    if (layout.payload_bytes)
      copies.push_back({x.src, x.dst, row_at(src.alt_payload, x.src_offset, layout.payload_bytes),
                        row_at(dst.payload, x.dst_offset, layout.payload_bytes),
                        static_cast<std::size_t>(x.count) * layout.payload_bytes});
    if (x.src != x.dst) st.job->bytes_nvlink += static_cast<std::uint64_t>(x.count) * layout.tuple_bytes();
  }
  return copies;
}

void RadixSorter::swap_buckets(State& st, const ExchangePlan& plan) {
  const auto gpus = st.job->gpus;
  const int g = static_cast<int>(gpus.size());
  begin_exchange_timeline(gpus);
  if (g > 1) {  // with one GPU the secondary buffer already is the exchange layout
    const auto copies = peer_copies(st, plan.copies);
    if (exchange_ == Exchange::Nccl) {
      std::vector<cudaStream_t> streams;
      for (const auto& c : gpus) streams.push_back(c.compute);
      p2p::all_to_all_nccl(copies, *nccl_, streams);
    } else {
      pull_on_lanes(gpus, copies);
    }
    // A GPU's secondary buffer becomes the local sort's second buffer: every peer must have read it first.
    for (int d = 0; d < g; ++d) {
      gpu::DeviceGuard guard(gpus[d].device);
      exchanged_[d].record(gpus[d].compute);
    }
    for (int d = 0; d < g; ++d) {
      gpu::DeviceGuard guard(gpus[d].device);
      for (int s = 0; s < g; ++s)
        if (s != d) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpus[d].compute, exchanged_[s], 0));
    }
  }
  for (auto& c : gpus) {
    gpu::DeviceGuard guard(c.device);
    c.timeline->record_end(SortPart::Exchange, c.compute);
  }
}

void RadixSorter::pull_in_waves(State& st, const ExchangePlan& plan) {
  const auto gpus = st.job->gpus;
  const int g = static_cast<int>(gpus.size());
  begin_exchange_timeline(gpus);
  // Each lane copies in the order of its destination's units, so a wave is a prefix of every lane.
  std::vector<std::vector<ExchangeCopy>> waves(kExchangeWaves);
  for (const auto& x : plan.copies) waves[wave_of(x, plan)].push_back(x);
  start_lanes(gpus);
  const auto ids = device_ids(gpus);
  const auto lanes = lane_handles(lanes_);
  for (int w = 0; w < kExchangeWaves; ++w) {
    p2p::all_to_all_copy_engines(peer_copies(st, waves[w]), ids, lanes);
    for (int d = 0; d < g; ++d) {
      gpu::DeviceGuard guard(gpus[d].device);
      for (int s = 0; s < g; ++s) wave_done(d, s, w).record(lanes_[d * g + s]);
    }
  }
  // The exchange ends, for the timeline, when the last wave has arrived from every peer: recorded on
  // lane (d, d), so that the compute stream does not wait for it.
  for (int d = 0; d < g; ++d) {
    gpu::DeviceGuard guard(gpus[d].device);
    auto& lane = lanes_[d * g + d];
    for (int s = 0; s < g; ++s)
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane, wave_done(d, s, kExchangeWaves - 1), 0));
    gpus[d].timeline->record_end(SortPart::Exchange, lane);
    lane_done_[d * g + d].record(lane);  // after the timeline event: waiting on it covers both
  }
}

void RadixSorter::sort_and_copy_back(State& st, const ExchangePlan& plan, bool overlapped) {
  const auto gpus = st.job->gpus;
  const int g = static_cast<int>(gpus.size());
  const auto& layout = st.job->layout;
  std::int64_t host_row = 0;
  for (int d = 0; d < g; ++d) {
    auto& c = gpus[d];
    gpu::DeviceGuard guard(c.device);
    MGJOIN_EXPECTS(plan.dest_sizes[d] <= c.capacity, "bucket distribution overflows a GPU's buffer");
    // After the swap the tuples are in the primary buffer (secondary for g = 1, which skips the swap).
    // The second buffer of the sort is the spare one when overlapped: peers may still read the secondary.
    void* keys = g > 1 ? c.keys : c.alt_keys;
    void* payload = g > 1 ? c.payload : c.alt_payload;
    void* alt_keys = overlapped ? c.spare_keys : g > 1 ? c.alt_keys : c.keys;
    void* alt_payload = overlapped ? c.spare_payload : g > 1 ? c.alt_payload : c.payload;
    std::int64_t largest = 0;
    for (const auto& u : plan.units[d]) largest = std::max(largest, u.count);
    const std::size_t temp_bytes = largest > 1 ? local_sort_temp_bytes(layout, largest) : 0;
    DeviceBytes temp(*c.memory, std::max<std::size_t>(temp_bytes, 1));

    c.timeline->record_begin(SortPart::LocalSort, c.compute);
    bool first_unit = true;
    int arrived = -1;  // overlapped: the last wave the compute stream has waited for
    for (const auto& u : plan.units[d]) {
      if (overlapped && wave_of(u, plan.dest_sizes[d]) > arrived) {
        arrived = wave_of(u, plan.dest_sizes[d]);
        for (int s = 0; s < g; ++s)
          MGJOIN_CUDA_TRY(cudaStreamWaitEvent(c.compute, wave_done(d, s, arrived), 0));
      }
      const bool alternate = local_sort(layout, row_at(keys, u.offset, layout.key_bytes), row_at(alt_keys, u.offset, layout.key_bytes),
                                        row_at(payload, u.offset, layout.payload_bytes),
                                        row_at(alt_payload, u.offset, layout.payload_bytes), u.count, 0, u.end_bit(),
                                        temp.data(), temp_bytes, c.compute) == SortedIn::Alternate;
      void* sorted_keys = row_at(alternate ? alt_keys : keys, u.offset, layout.key_bytes);
      void* sorted_payload = row_at(alternate ? alt_payload : payload, u.offset, layout.payload_bytes);
      exec::flip_keys(layout.key_bytes, sorted_keys, u.count, st.key_xor, c.compute, exec::kSortFlipBlocks);
      unit_ready_[d].record(c.compute);
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(c.d2h, unit_ready_[d], 0));
      if (std::exchange(first_unit, false)) c.timeline->record_begin(SortPart::D2H, c.d2h);
      const std::int64_t row = host_row + u.offset;
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(row_at(st.job->host_keys, row, layout.key_bytes), sorted_keys,
                                      u.count * layout.key_bytes, cudaMemcpyDeviceToHost, c.d2h));
      if (layout.payload_bytes)
        MGJOIN_CUDA_TRY(cudaMemcpyAsync(row_at(st.job->host_payload, row, layout.payload_bytes), sorted_payload,
                                        u.count * layout.payload_bytes, cudaMemcpyDeviceToHost, c.d2h));
    }
    c.timeline->record_end(SortPart::LocalSort, c.compute);
    if (first_unit) c.timeline->record_begin(SortPart::D2H, c.d2h);  // no unit: an empty part
    c.timeline->record_end(SortPart::D2H, c.d2h);
    if (overlapped) {
      // Every wave has arrived and the exchange's timeline event is recorded (lane (d, d) waited for all
      // of d's lanes), and no peer reads GPU d's secondary buffer any more: only then may the pipeline
      // reuse d's buffers.
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(c.d2h, lane_done_[d * g + d], 0));
      for (int x = 0; x < g; ++x)
        if (x != d) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(c.d2h, wave_done(x, d, kExchangeWaves - 1), 0));
    }
    MGJOIN_CUDA_TRY(cudaEventRecord(c.d2h_done, c.d2h));
    host_row += plan.dest_sizes[d];
  }
}

void RadixSorter::sort(ChunksetJob& job) {
  const int g = static_cast<int>(job.gpus.size());
  MGJOIN_EXPECTS(g >= 1, "a chunkset needs a GPU");
  ensure_events(job.gpus);
  State st;
  st.job = &job;
  st.key_bits = job.layout.key_bytes * 8;
  st.key_xor = sign_flip_mask(job.layout);
  st.host_counts.resize(static_cast<std::size_t>(g) * g);
  for (auto& c : job.gpus) st.device_counts.emplace_back(*c.memory, static_cast<std::size_t>(g) * kRadixBuckets);

  partition_top_level(st);
  auto distribution = distribute_buckets(st.buckets, st.key_bits, g, job.chunk_size, kEpsilon);
  while (!distribution.final()) {
    refine_spanning(st, distribution.spanning);
    distribution = distribute_buckets(st.buckets, st.key_bits, g, job.chunk_size, kEpsilon);
  }
  for (auto& c : job.gpus) {
    gpu::DeviceGuard guard(c.device);
    c.timeline->record_end(SortPart::Partition, c.compute);
  }

  const auto plan =
      plan_exchange(st.buckets, distribution.boundaries, st.key_bits, job.chunk_size, kFusingThreshold, kMinUnitTuples);
  // With spare buffers, units sort as their wave arrives instead of after the whole swap.
  const bool overlapped = g > 1 && exchange_ == Exchange::CopyEngines && has_spare_buffers(job.gpus);
  if (overlapped)
    pull_in_waves(st, plan);
  else
    swap_buckets(st, plan);
  sort_and_copy_back(st, plan, overlapped);
}

}  // namespace

std::unique_ptr<ChunksetSorter> make_radix_sorter(Exchange exchange, const p2p::NcclComms* nccl) {
  return std::make_unique<RadixSorter>(exchange, nccl);
}

}  // namespace mgjoin::sort
