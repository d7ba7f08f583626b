// run_copart: executes a co-partitioned plan (copart_join.hpp draws the flow).
//
// Streams per GPU: `h2d` brings chunks in, `part` partitions them, one lane per source GPU receives
// the partitions sent to this GPU (copy engines; `xchg` for NCCL), `work` sorts and joins, `out`
// writes the output windows and `d2h` copies them out. Two chunk slots per GPU: chunk t + 1 arrives
// while chunk t is partitioned and chunk t - 1's partitions are on NVLink. One host thread drives every
// GPU; it blocks only to read a chunk's segment sizes, which it needs to address the copies and to
// check them against the plan's bounds, and a join's count, which places its output.
//
// One GPU: a relation crosses straight into its partition in runs (its sorted runs), and each run is
// sorted as soon as it has crossed, while the next one crosses. Counting in core, S's runs are also
// joined with R's as they are sorted: once S is in, only its last run's sort and joins are left.
//
// Streamed (copart_join.hpp): X arrives and is sorted run by run as above; then each round of Y lands
// in one of kLandings landings per GPU (t % kLandings), so that the next round's chunks cross PCIe and
// NVLink while round t is sorted, joined against X's runs and (materialize) written out; a landing is
// refilled once the windows of its previous round are written. The output windows are written on
// `out` from two alternating sets of match arrays, so that round t's output crosses PCIe while round
// t + 1 is sorted and joined.
#include "engine/src/copart/copart_join.hpp"

#include "engine/src/copart/chunk_slot.hpp"

#include "alloc/backings.hpp"
#include "alloc/stack_buffer.hpp"
#include "engine/src/join/output_count.hpp"
#include "engine/src/sort/local_sort.hpp"
#include "engine/src/sort/radix_partition.hpp"
#include "host_merge/detail/streaming_store.hpp"
#include "p2p/all_to_all.hpp"
#include "core/cancel.hpp"
#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

namespace mgjoin::copart {
namespace {

using DeviceBuffer = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;
using PinnedBuffer = alloc::StackBuffer<std::byte, alloc::PinnedStackAllocator>;
using Clock = std::chrono::steady_clock;

/// One GPU counting in core: R crosses in 2 runs and S in 4, each sorted as it arrives, and every run
/// of S is joined with both runs of R as soon as it is sorted. A join reads all of R whatever the run of
/// S, so more runs of S would add more joins than they take from the tail (the last run's sort and
/// joins); R's two runs let its sort begin halfway through its transfer.
constexpr std::array<int, 2> kArrivalRuns{2, 4};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::byte* at(const DeviceBuffer& b, std::int64_t row, int width) {
  return b.data() + static_cast<std::size_t>(row) * static_cast<std::size_t>(width);
}
const std::byte* at(const void* p, std::int64_t row, int width) {
  return static_cast<const std::byte*>(p) + static_cast<std::size_t>(row) * static_cast<std::size_t>(width);
}

/// One relation's partition on one GPU: filled by the exchange, then sorted in place. Payloads carried:
/// sorted with the keys. Late payloads: the keys are sorted with their positions, and the payloads,
/// arriving later, stay in arrival order (position i holds the payload of the i-th key to arrive).
struct Partition {
  DeviceBuffer keys, payload, positions;
  std::int64_t capacity = 0;
  std::int64_t rows = 0;  ///< filled so far (host bookkeeping)
};

/// Rows of one chunk's segment sent from GPU `from` to the partition of GPU `to`: what the late
/// payloads' pass replays.
struct SegmentCopy {
  int from, to;
  std::int64_t from_row, to_row, rows;
};

/// One chunk that landed on a GPU in the key pass (late payloads replay it).
struct LandedChunk {
  std::int64_t first = 0, rows = 0;  ///< the chunk's rows of the relation
  std::uint64_t map_row = 0;         ///< where its gather map starts in the GPU's map of the relation
  std::uint64_t landed = 0;          ///< rows its partitioning output (copies included)
};

/// One round of the key pass: chunk j landed on GPU j.
struct Round {
  std::vector<LandedChunk> chunks;
  std::vector<SegmentCopy> segments;
};

/// One of a GPU's two chunk slots, and when its segments have gone to their owners.
struct Slot : ChunkSlot {
  std::vector<gpu::Event> sent;  ///< per destination, on its lane: the copies out of this slot are done
  bool sent_recorded = false;
};

struct ByteCopy {
  std::byte* to;
  const std::byte* from;
  std::size_t bytes;
};

/// Copies with all OpenMP threads in 2 MiB blocks: the result columns are fresh memory, and a window's
/// copy is bound by the first touch of its pages, which only many threads make fast. Streaming stores:
/// the result is far larger than the caches, and plain stores would read every line first.
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

/// Per GPU: its probe side's match arrays and their scan.
struct OutputArrays {
  DeviceBuffer matches, first_match, offsets, scan_temp;
  MatchArrays view() const {
    return {reinterpret_cast<std::uint64_t*>(matches.data()), reinterpret_cast<std::uint64_t*>(first_match.data())};
  }
};

/// A GPU's two output windows (device memory, and pinned staging when the result columns are not
/// pinned): one is written while the other crosses PCIe. They live as long as the flow, so that the
/// host may go on while a round's last windows are still crossing; `copied` orders their reuse.
struct OutputWindows {
  std::array<DeviceBuffer, 2> device;
  std::array<PinnedBuffer, 2> staging;
  std::array<gpu::Event, 2> written, copied;
  int next = 0;  ///< the window the next job takes

  void release() {
    for (auto& b : staging) b.release();
    for (auto& b : device) b.release();
  }
};

/// Rows [first, first + rows) of a sorted partition (a run of it, or all of it).
struct SortedRows {
  const Partition* p = nullptr;
  std::int64_t first = 0, rows = 0;
};

struct Gpu {
  int device = 0;
  alloc::DeviceStackAllocator* memory = nullptr;
  alloc::PinnedStackAllocator* pinned = nullptr;
  gpu::Stream h2d, part, work, xchg, d2h, out;
  std::vector<gpu::Stream> lanes;  ///< per source GPU
  std::array<Partition, 2> partition;
  /// One GPU: per side, recorded on h2d once each run of its partition has crossed.
  std::array<std::vector<gpu::Event>, 2> run_in;
  DeviceBuffer counter;
  std::unique_ptr<alloc::PinnedHostBacking> counter_host;  ///< mapped: where read_counter finds the counter
  gpu::Event counted;  ///< recorded once the counter is written there
  DeviceBuffer join_scratch;  ///< resident_join's, shared by the joins on the work stream
  std::array<DeviceBuffer, 2> maps;  ///< late payloads, g > 1: per landed row, its row in its chunk
  std::array<std::uint64_t, 2> map_filled{};  ///< rows of each map handed to chunks so far
  std::array<gpu::Event, 2> payloads_in;  ///< late payloads, per side: recorded once all arrived (timed)
  DeviceBuffer alt_keys, alt_payload, sort_temp;
  std::array<Slot, 2> slots;
  gpu::Event tail_begin, sorted, join_begin, joined;
  // Streamed: round t of Y lands in landing[t % kLandings]; `consumed` is recorded once the round's
  // joins and output windows have read it, `landed` (one GPU) once its H2D is done.
  std::array<Partition, kLandings> landing;
  std::array<gpu::Event, kLandings> consumed, landed;
  std::array<bool, kLandings> consumed_recorded{};
  DeviceBuffer landing_alt_keys, landing_alt_payload, landing_temp;
  /// Streamed, materialize: the output jobs (round, run) alternate between two sets of match arrays;
  /// `arrays_free[k]` is recorded on `out` once the windows reading set k are written.
  std::array<OutputArrays, 2> arrays;
  std::array<gpu::Event, 2> arrays_free;
  std::array<bool, 2> arrays_free_recorded{};
  OutputWindows windows;
};

class Flow {
 public:
  Flow(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output, const CopartContext& ctx)
      : rel_{r, s}, plan_(plan), ctx_(ctx), output_(output), g_(static_cast<int>(ctx.devices.size())),
        key_xor_(ordered_key_xor(r.key.type)) {
    MGJOIN_EXPECTS(g_ == plan.partitions.gpus, "the plan was made for another GPU count");
    gpus_.reserve(g_);
    for (int d = 0; d < g_; ++d) gpus_.push_back(make_gpu(d));
    for (int d = 0; d < g_; ++d)
      for (int j = 0; j < g_; ++j) lanes_.push_back(gpus_[d].lanes[j]);
  }

  // Work may still be in flight when an error unwinds: wait for it before any buffer goes back.
  // Only this flow's streams: another flow (the next bucket group's) may be at work on the same GPUs,
  // and its transfer must not hold this one's return.
  ~Flow() {
    for (const auto& gpu : gpus_) {
      gpu::DeviceGuard guard(gpu.device);
      for (const gpu::Stream* stream : {&gpu.h2d, &gpu.part, &gpu.work, &gpu.xchg, &gpu.d2h, &gpu.out})
        cudaStreamSynchronize(*stream);
      for (const gpu::Stream& lane : gpu.lanes) cudaStreamSynchronize(lane);
    }
  }
  Flow(const Flow&) = delete;
  Flow& operator=(const Flow&) = delete;

  /// Brings `side` in: its keys, and its payloads unless they come late.
  void transfer(Side side) {
    if (g_ == 1)
      transfer_whole(side);
    else
      transfer_rounds(side);
  }

  /// Late payloads: brings `side`'s payloads to the places their keys took (g > 1: replaying the key
  /// pass's chunks, gather maps and segments). Stream-ordered: the host does not wait, and the work
  /// stream learns of the arrival through `payloads_in`.
  void send_late_payloads(Side side) {
    if (!plan_.late || widths(side).payload_bytes == 0) return;
    if (g_ == 1)
      send_payloads_whole(side);
    else
      send_payloads_rounds(side);
    // Recorded on xchg, idle by now (the NCCL exchange of the payloads ran on it, in order).
    for (auto& gpu : gpus_) {
      gpu::DeviceGuard guard(gpu.device);
      wait_inbound(gpu, gpu.xchg);
      gpu.payloads_in[static_cast<int>(side)].record(gpu.xchg);
    }
  }

  /// Sorts each GPU's partition of `side` run by run, each run once it has arrived (several GPUs: once
  /// everything sent to the GPU has); counting on arrival, joins each run of S as it is sorted. Issued
  /// once: a second call does nothing.
  void sort_partitions(Side side) {
    if (std::exchange(sorts_issued_[static_cast<int>(side)], true)) return;
    const bool joins = counts_on_arrival() && side == Side::S;
    for (int d = 0; d < g_; ++d) {
      Gpu& gpu = gpus_[d];
      gpu::DeviceGuard guard(gpu.device);
      if (g_ > 1) wait_inbound(gpu, gpu.work);
      Partition& p = gpu.partition[static_cast<int>(side)];
      if (!p.positions.empty())
        fill_positions(reinterpret_cast<std::uint32_t*>(p.positions.data()), static_cast<std::uint64_t>(p.rows), gpu.work);
      if (joins) MGJOIN_CUDA_TRY(cudaMemsetAsync(gpu.counter.data(), 0, sizeof(mgjoin::detail::TupleCounter), gpu.work));
      // In core, the tail begins once S's last run is in: what is left of S's sorts (and joins).
      const bool timed = side == Side::S && !plan_.streamed;
      for (int i = 0; i < runs(side); ++i) {
        const SortedRows run = run_of(p, side, i);
        if (g_ == 1) wait_run(gpu, side, i, run);
        const bool last = i + 1 == runs(side);
        if (timed && last) gpu.tail_begin.record(gpu.work);
        sort_rows(gpu, side, p, run.first, run.rows, gpu.alt_keys, gpu.alt_payload, gpu.sort_temp);
        if (timed && last) gpu.sorted.record(gpu.work);
        if (joins) count_run_of_s(gpu, run, last);
      }
    }
  }

  /// One GPU counting in core: R and S cross in runs that are sorted (and S's joined) as they arrive,
  /// and Flow::join() only reads the count.
  bool counts_on_arrival() const { return output_ == OutputMode::Count && g_ == 1 && !plan_.streamed; }

  /// Waits until every input byte has arrived where it belongs.
  void wait_transfer() {
    for (auto& gpu : gpus_) {
      gpu::DeviceGuard guard(gpu.device);
      for (auto& st : {&gpu.h2d, &gpu.part, &gpu.xchg}) st->synchronize();
      for (auto& lane : gpu.lanes) lane.synchronize();
    }
  }

  /// Frees, once the sorts are done, the sort buffers and, unless late payloads still need them, the
  /// chunk slots (carried payloads: the slots lie above the sort buffers on the stack, so they go
  /// first). Expects wait_transfer() first.
  void release_transfer_buffers() {
    for (auto& gpu : gpus_) {
      gpu::DeviceGuard guard(gpu.device);
      gpu.work.synchronize();
      if (!plan_.late)
        for (auto& slot : gpu.slots) slot = Slot{};
      gpu.sort_temp.release();
      gpu.alt_payload.release();
      gpu.alt_keys.release();
    }
  }

  /// What the resident joins counted, per GPU and in all.
  struct Counts {
    std::vector<std::uint64_t> per_gpu;
    std::uint64_t total = 0;
  };

  /// Joins every resident pair and returns the counts (match arrays filled when given; counting on
  /// arrival, the joins were issued with S's sorts).
  /// @throw InputError when the output has 2^64 or more tuples, before anything reads the arrays.
  Counts join(std::span<const MatchArrays> arrays) {
    for (int d = 0; d < g_ && !counts_on_arrival(); ++d) {
      Gpu& gpu = gpus_[d];
      gpu::DeviceGuard guard(gpu.device);
      MGJOIN_CUDA_TRY(cudaMemsetAsync(gpu.counter.data(), 0, sizeof(mgjoin::detail::TupleCounter), gpu.work));
      gpu.join_begin.record(gpu.work);
      resident_join(pair_of(whole(gpu, x_side()), whole(gpu, plan_.probe)), counter(gpu),
                    arrays.empty() ? MatchArrays{} : arrays[d], gpu.join_scratch.data(), gpu.work);
      gpu.joined.record(gpu.work);
    }
    std::vector<mgjoin::detail::TupleCounter> counters;
    for (auto& gpu : gpus_) counters.push_back(read_counter(gpu));
    Counts counts{{}, mgjoin::detail::total_tuples(counters, {})};
    for (const auto& c : counters) counts.per_gpu.push_back(c.count);
    return counts;
  }

  /// Materializes the output into `out`'s columns (key order: GPU by GPU, each in probe-row order);
  /// returns its rows.
  std::uint64_t materialize(OutputColumns& out, const OutputInto& into, PhaseStat& stat);

  /// Streamed: takes the landings of Y, their sort buffers and (materialize) the match arrays: once X is
  /// sorted, in place of its sort buffers, or at once beside them (CopartPlan::stream_beside_sort).
  /// Expects wait_transfer() first.
  void begin_stream(OutputMode output);
  /// Streamed: brings Y through round by round, joins each round against every run of X and counts
  /// (result.count) or writes the output into `out`'s columns (`into` says what share of the input
  /// this run is).
  void stream(JoinResult& result, OutputColumns* out, const OutputInto& into);

  /// Late payloads: from the start of S's sort until the last payload arrived, on the slowest GPU.
  double late_payload_seconds() const {
    float worst = 0;
    for (const auto& gpu : gpus_)
      for (const Side side : {Side::R, Side::S})
        if (widths(side).payload_bytes)
          worst = std::max(worst, gpu.payloads_in[static_cast<int>(side)].elapsed_ms_since(gpu.tail_begin));
    return worst / 1e3;
  }

  double tail_seconds(bool join_part) const {
    float worst = 0;
    for (const auto& gpu : gpus_) {
      // The join from its issue: the host may issue it well after the sort ended (an overlapped
      // bucket group's join waits for the next group to be planned and started).
      const float ms = join_part ? gpu.joined.elapsed_ms_since(gpu.join_begin) : gpu.sorted.elapsed_ms_since(gpu.tail_begin);
      worst = std::max(worst, ms);
    }
    return worst / 1e3;
  }

  std::uint64_t bytes_pcie_in() const { return bytes_in_; }
  std::uint64_t bytes_nvlink() const { return bytes_nvlink_; }

 private:
  Gpu make_gpu(int d) {
    Gpu gpu;
    gpu.device = ctx_.devices[d];
    gpu.memory = ctx_.device_memory[d];
    gpu.pinned = ctx_.pinned[d];
    gpu::DeviceGuard guard(gpu.device);
    gpu.h2d = gpu::Stream(gpu.device);
    gpu.part = gpu::Stream(gpu.device);
    gpu.work = gpu::Stream(gpu.device);
    gpu.xchg = gpu::Stream(gpu.device);
    gpu.d2h = gpu::Stream(gpu.device);
    // The output windows' kernels go first: each window's copy out waits for its kernel, and PCIe is
    // the scarce resource (one H100, B scale 2 materialized: 1.81 -> 1.75 s).
    gpu.out = gpu::Stream::high_priority(gpu.device);
    for (int j = 0; j < g_; ++j) gpu.lanes.emplace_back(gpu.device);
    for (int k = 0; k < 2; ++k) {
      gpu.windows.written[k] = gpu::Event(gpu.device, false);
      gpu.windows.copied[k] = gpu::Event(gpu.device, false);
      gpu.arrays_free[k] = gpu::Event(gpu.device, false);
    }
    gpu.counter_host = std::make_unique<alloc::PinnedHostBacking>(sizeof(mgjoin::detail::TupleCounter), /*mapped=*/true);
    gpu.counted = gpu::Event(gpu.device, false);
    gpu.tail_begin = gpu::Event(gpu.device);
    gpu.sorted = gpu::Event(gpu.device);
    gpu.join_begin = gpu::Event(gpu.device);
    gpu.joined = gpu::Event(gpu.device);
    for (auto& e : gpu.payloads_in) e = gpu::Event(gpu.device);
    if (plan_.streamed) {
      make_streamed_gpu(gpu, d);
      return gpu;
    }
    const Widths* widths[2] = {&plan_.r, &plan_.s};
    for (int side = 0; side < 2; ++side) {
      Partition& p = gpu.partition[side];
      p.capacity = plan_.sizes.bound[side][d];
      make_partition_buffers(gpu, p, *widths[side]);
      if (plan_.late && widths[side]->payload_bytes)
        p.positions = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, p.capacity * 4));
    }
    gpu.counter = DeviceBuffer(*gpu.memory, sizeof(mgjoin::detail::TupleCounter));
    gpu.join_scratch = DeviceBuffer(*gpu.memory, resident_join_scratch_bytes());
    // Late payloads keep the slots and maps to the end: below the sort buffers, which go first.
    if (g_ > 1 && plan_.late) {
      for (int side = 0; side < 2; ++side)
        if (plan_.map_rows[side]) gpu.maps[side] = DeviceBuffer(*gpu.memory, 4 * plan_.map_rows[side]);
      for (auto& slot : gpu.slots) make_slot(gpu, slot);
    }
    make_sort_buffers(gpu);
    if (g_ > 1 && !plan_.late)
      for (auto& slot : gpu.slots) make_slot(gpu, slot);
    return gpu;
  }

  /// Streamed: X's partition and, on top (freed once X is sorted), the sort buffers of one run.
  void make_streamed_gpu(Gpu& gpu, int d) {
    Partition& p = gpu.partition[static_cast<int>(x_side())];
    p.capacity = plan_.sizes.bound[static_cast<int>(x_side())][d];
    make_partition_buffers(gpu, p, widths(x_side()));
    gpu.counter = DeviceBuffer(*gpu.memory, sizeof(mgjoin::detail::TupleCounter));
    gpu.join_scratch = DeviceBuffer(*gpu.memory, resident_join_scratch_bytes());
    if (g_ > 1)
      for (auto& slot : gpu.slots) make_slot(gpu, slot);
    make_sort_buffers(gpu);
  }

  void make_partition_buffers(Gpu& gpu, Partition& p, const Widths& w) {
    p.keys = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, p.capacity * w.key_bytes));
    if (w.payload_bytes) p.payload = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, p.capacity * w.payload_bytes));
  }

  void make_sort_buffers(Gpu& gpu) {
    std::size_t keys = 1, payload = 0, temp = 1;
    const Widths* widths[2] = {&plan_.r, &plan_.s};
    for (int side = 0; side < 2; ++side) {
      if (plan_.streamed && side != static_cast<int>(x_side())) continue;
      const std::int64_t rows = run_capacity(gpu.partition[side].capacity, runs(static_cast<Side>(side)));
      keys = std::max<std::size_t>(keys, rows * widths[side]->key_bytes);
      payload = std::max<std::size_t>(payload, rows * plan_.sorted_payload_bytes(static_cast<Side>(side)));
      temp = std::max(temp, sort::local_sort_temp_bytes(layout(static_cast<Side>(side)), rows));
    }
    gpu.alt_keys = DeviceBuffer(*gpu.memory, keys);
    if (payload) gpu.alt_payload = DeviceBuffer(*gpu.memory, payload);
    gpu.sort_temp = DeviceBuffer(*gpu.memory, temp);
  }

  void make_slot(Gpu& gpu, Slot& slot) {
    static_cast<ChunkSlot&>(slot) =
        ChunkSlot(gpu.device, *gpu.memory, *gpu.pinned, plan_.chunk_rows, plan_.r, plan_.s, plan_.sizes.max_copies, g_);
    for (int d = 0; d < g_; ++d) slot.sent.emplace_back(ctx_.devices[d], false);
  }

  const Widths& widths(Side side) const { return side == Side::R ? plan_.r : plan_.s; }
  /// What the key pass moves: late payloads stay behind.
  Widths key_pass_widths(Side side) const {
    return {widths(side).key_bytes, plan_.late ? 0 : widths(side).payload_bytes};
  }
  sort::TupleLayout layout(Side side) const { return {widths(side).key_bytes, plan_.sorted_payload_bytes(side), false}; }
  const RelationView& relation(Side side) const { return rel_[static_cast<int>(side)]; }

  const void* host_payload(Side side) const {
    return widths(side).payload_bytes ? relation(side).payload->data : nullptr;
  }

  /// One GPU: the relation goes straight into its partition (keys flipped at sort time), run by run,
  /// each run's arrival recorded for its sort.
  void transfer_whole(Side side) {
    Gpu& gpu = gpus_[0];
    Partition& p = gpu.partition[static_cast<int>(side)];
    const std::int64_t n = relation(side).size();
    MGJOIN_EXPECTS(n <= p.capacity, "one GPU's partition is the whole relation");
    gpu::DeviceGuard guard(gpu.device);
    p.rows = n;
    auto& arrived = gpu.run_in[static_cast<int>(side)];
    arrived.clear();
    for (int i = 0; i < runs(side); ++i) {
      const SortedRows run = run_of(p, side, i);
      copy_rows_in(gpu, side, run.first, run.rows, p, run.first);
      arrived.emplace_back(gpu.device, false);
      arrived.back().record(gpu.h2d);
    }
  }

  /// One GPU: rows [first, first + rows) of `side` H2D into `p` from its row `to` on, as they are (keys
  /// unflipped), on h2d. The rows may be in this GPU's memory already (the bucketed flow's resident
  /// groups): the copy's direction follows the pointers.
  void copy_rows_in(Gpu& gpu, Side side, std::int64_t first, std::int64_t rows, Partition& p, std::int64_t to) {
    const Widths w = key_pass_widths(side);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(at(p.keys, to, w.key_bytes), at(relation(side).key.data, first, w.key_bytes),
                                    rows * w.key_bytes, cudaMemcpyDefault, gpu.h2d));
    if (w.payload_bytes)
      MGJOIN_CUDA_TRY(cudaMemcpyAsync(at(p.payload, to, w.payload_bytes), at(host_payload(side), first, w.payload_bytes),
                                      rows * w.payload_bytes, cudaMemcpyDefault, gpu.h2d));
    bytes_in_ += static_cast<std::uint64_t>(rows) * (w.key_bytes + w.payload_bytes);
  }

  /// One GPU: the work stream waits for run i of `side` to cross, then flips its keys (they came as
  /// they are).
  void wait_run(Gpu& gpu, Side side, int i, const SortedRows& run) {
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.work, gpu.run_in[static_cast<int>(side)][i], 0));
    flip_keys(widths(side).key_bytes, at(gpu.partition[static_cast<int>(side)].keys, run.first, widths(side).key_bytes),
              run.rows, key_xor_, gpu.work);
  }

  /// Counting on arrival: joins a run of S, just sorted, with every run of R; the last run's joins are
  /// the in-core tail's join.
  void count_run_of_s(Gpu& gpu, const SortedRows& s_run, bool last) {
    if (last) gpu.join_begin.record(gpu.work);
    for (int i = 0; i < runs(Side::R); ++i) {
      const SortedRows r_run = run_of(gpu.partition[static_cast<int>(Side::R)], Side::R, i);
      const ResidentPair pair = x_side() == Side::R ? pair_of(r_run, s_run) : pair_of(s_run, r_run);
      if (r_run.rows && s_run.rows) resident_join(pair, counter(gpu), {}, gpu.join_scratch.data(), gpu.work);
    }
    if (last) gpu.joined.record(gpu.work);
  }

  /// Several GPUs: round t gives GPU j the chunk t·g + j; each chunk is partitioned where it lands and
  /// its segments sent to their owners while the next chunk arrives.
  void transfer_rounds(Side side) {
    const std::int64_t n = relation(side).size();
    const std::int64_t per_round = plan_.chunk_rows * g_;
    const std::int64_t rounds = (n + per_round - 1) / per_round;
    int pending = -1;
    for (std::int64_t t = 0; t < rounds; ++t) {
      const int b = turn_++ % 2;
      rounds_[static_cast<int>(side)].emplace_back();
      for (int j = 0; j < g_; ++j) {
        const std::int64_t first = t * per_round + j * plan_.chunk_rows;
        const std::int64_t rows = std::clamp<std::int64_t>(n - first, 0, plan_.chunk_rows);
        start_chunk(gpus_[j], gpus_[j].slots[b], side, first, rows);
      }
      if (pending >= 0) exchange(pending, side, rounds_[static_cast<int>(side)].size() - 2);
      pending = b;
    }
    if (pending >= 0) exchange(pending, side, rounds_[static_cast<int>(side)].size() - 1);
  }

  void send_payloads_whole(Side side) {
    Gpu& gpu = gpus_[0];
    gpu::DeviceGuard guard(gpu.device);
    const std::int64_t n = relation(side).size();
    const int pb = widths(side).payload_bytes;
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(gpu.partition[static_cast<int>(side)].payload.data(), host_payload(side), n * pb,
                                    cudaMemcpyHostToDevice, gpu.h2d));
    bytes_in_ += static_cast<std::uint64_t>(n) * pb;
  }

  /// Replays the key pass's rounds: each chunk's payloads land where its keys did, take the places
  /// its keys took in their segments (its gather map), and follow them to the same rows of the owners.
  void send_payloads_rounds(Side side) {
    int pending = -1;
    const Round* pending_round = nullptr;
    for (const Round& round : rounds_[static_cast<int>(side)]) {
      const int b = turn_++ % 2;
      for (int j = 0; j < g_; ++j) start_payload_chunk(gpus_[j], gpus_[j].slots[b], side, round.chunks[j]);
      if (pending >= 0) send_payload_segments(pending, side, *pending_round);
      pending = b;
      pending_round = &round;
    }
    if (pending >= 0) send_payload_segments(pending, side, *pending_round);
  }

  void start_payload_chunk(Gpu& gpu, Slot& slot, Side side, const LandedChunk& chunk) {
    slot.rows = chunk.rows;
    if (chunk.rows == 0) return;
    gpu::DeviceGuard guard(gpu.device);
    const int pb = widths(side).payload_bytes;
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.h2d, slot.part_done, 0));
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(slot.in_payload.data(), at(host_payload(side), chunk.first, pb), chunk.rows * pb,
                                    cudaMemcpyHostToDevice, gpu.h2d));
    slot.h2d_done.record(gpu.h2d);
    bytes_in_ += static_cast<std::uint64_t>(chunk.rows) * pb;
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.part, slot.h2d_done, 0));
    if (slot.sent_recorded)
      for (auto& e : slot.sent) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.part, e, 0));
    const auto* map = reinterpret_cast<const std::uint32_t*>(gpu.maps[static_cast<int>(side)].data()) + chunk.map_row;
    gather_rows(slot.in_payload.data(), map, chunk.landed, pb, slot.out_payload.data(), gpu.part);
    slot.part_done.record(gpu.part);
  }

  void send_payload_segments(int b, Side side, const Round& round) {
    const int pb = widths(side).payload_bytes;
    std::vector<p2p::PeerCopy> copies;
    for (const SegmentCopy& c : round.segments) {
      copies.push_back({c.from, c.to, at(gpus_[c.from].slots[b].out_payload, c.from_row, pb),
                        at(gpus_[c.to].partition[static_cast<int>(side)].payload, c.to_row, pb),
                        static_cast<std::size_t>(c.rows) * pb});
      if (c.from != c.to) bytes_nvlink_ += static_cast<std::uint64_t>(c.rows) * pb;
    }
    send(b, copies);
  }

  void send(int b, const std::vector<p2p::PeerCopy>& copies) {
    if (ctx_.exchange == Exchange::Nccl)
      send_nccl(b, copies);
    else
      send_copy_engines(b, copies);
  }

  void start_chunk(Gpu& gpu, Slot& slot, Side side, std::int64_t first, std::int64_t rows) {
    slot.rows = rows;
    LandedChunk chunk{first, rows, gpu.map_filled[static_cast<int>(side)], 0};
    rounds_[static_cast<int>(side)].back().chunks.push_back(chunk);
    if (rows == 0) return;
    gpu::DeviceGuard guard(gpu.device);
    const Widths w = key_pass_widths(side);
    // The slot's input is free once its last partition has read it; its output once sent.
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.h2d, slot.part_done, 0));
    bytes_in_ += slot.copy_in(relation(side), w, first, rows, gpu.h2d);
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.part, slot.h2d_done, 0));
    if (slot.sent_recorded)
      for (auto& e : slot.sent) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.part, e, 0));
    PartitionArgs args = slot.partition_args(w, side, key_xor_, first);
    DeviceBuffer& map = gpu.maps[static_cast<int>(side)];
    if (!map.empty()) {
      args.source_out = reinterpret_cast<std::uint32_t*>(map.data()) + chunk.map_row;
      // Fixed stride per chunk: the plan sized the map for every chunk's most copies.
      gpu.map_filled[static_cast<int>(side)] += static_cast<std::uint64_t>(plan_.chunk_rows) * plan_.sizes.max_copies[static_cast<int>(side)];
    }
    slot.partition(plan_.partitions, args, gpu.part);
  }

  /// Sends every GPU's segments of slot b (round `t` of `side`) to their owners, appending to the
  /// owners' partitions; records the segments for late payloads.
  void exchange(int b, Side side, std::size_t t) {
    std::vector<p2p::PeerCopy> copies;
    const Widths w = key_pass_widths(side);
    Round& round = rounds_[static_cast<int>(side)][t];
    for (int j = 0; j < g_; ++j) {
      Slot& slot = gpus_[j].slots[b];
      if (slot.rows == 0) continue;
      slot.part_done.synchronize();
      const auto* seg = reinterpret_cast<const std::uint64_t*>(slot.segments_host.data());
      round.chunks[j].landed = seg[g_];
      for (int d = 0; d < g_; ++d) {
        const auto rows = static_cast<std::int64_t>(seg[d + 1] - seg[d]);
        if (rows == 0) continue;
        Partition& p = destination(d, side, t);
        if (p.rows + rows > p.capacity)
          throw PlanMissed(std::string("partition ") + std::to_string(d) + " of " + (side == Side::R ? "R" : "S") +
                           " outgrew the " + std::to_string(p.capacity) + " rows its sample planned");
        copies.push_back({j, d, at(slot.out_keys, static_cast<std::int64_t>(seg[d]), w.key_bytes),
                          at(p.keys, p.rows, w.key_bytes), static_cast<std::size_t>(rows) * w.key_bytes});
        if (w.payload_bytes)
          copies.push_back({j, d, at(slot.out_payload, static_cast<std::int64_t>(seg[d]), w.payload_bytes),
                            at(p.payload, p.rows, w.payload_bytes), static_cast<std::size_t>(rows) * w.payload_bytes});
        if (plan_.late) round.segments.push_back({j, d, static_cast<std::int64_t>(seg[d]), p.rows, rows});
        p.rows += rows;
        if (j != d) bytes_nvlink_ += static_cast<std::uint64_t>(rows) * (w.key_bytes + w.payload_bytes);
      }
    }
    send(b, copies);
  }

  void send_copy_engines(int b, const std::vector<p2p::PeerCopy>& copies) {
    for (int j = 0; j < g_; ++j) {
      if (gpus_[j].slots[b].rows == 0) continue;
      for (int d = 0; d < g_; ++d) {
        gpu::DeviceGuard guard(gpus_[d].device);
        MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpus_[d].lanes[j], gpus_[j].slots[b].part_done, 0));
      }
    }
    p2p::all_to_all_copy_engines(copies, ctx_.devices, lanes_);
    for (int j = 0; j < g_; ++j) {
      Slot& slot = gpus_[j].slots[b];
      if (slot.rows == 0) continue;
      for (int d = 0; d < g_; ++d) {
        gpu::DeviceGuard guard(gpus_[d].device);
        slot.sent[d].record(gpus_[d].lanes[j]);
      }
      slot.sent_recorded = true;
    }
  }

  void send_nccl(int b, const std::vector<p2p::PeerCopy>& copies) {
    MGJOIN_EXPECTS(ctx_.comms, "NCCL exchange without communicators");
    std::vector<cudaStream_t> streams;
    for (int j = 0; j < g_; ++j) {
      streams.push_back(gpus_[j].xchg);
      gpu::DeviceGuard guard(gpus_[j].device);
      if (gpus_[j].slots[b].rows) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpus_[j].xchg, gpus_[j].slots[b].part_done, 0));
    }
    p2p::all_to_all_nccl(copies, *ctx_.comms, streams);
    // A slot's segments are sent once the sender's and every receiver's xchg stream passed them: record
    // on all of them (sent[d] lives on GPU d).
    for (int j = 0; j < g_; ++j) {
      Slot& slot = gpus_[j].slots[b];
      if (slot.rows == 0) continue;
      for (int d = 0; d < g_; ++d) {
        gpu::DeviceGuard guard(gpus_[d].device);
        slot.sent[d].record(gpus_[d].xchg);
      }
      slot.sent_recorded = true;
    }
  }

  /// `waiter` waits for every copy into this GPU issued so far: H2D (unless `with_h2d` is false), and
  /// the sends of other GPUs (on the lanes, or xchg for NCCL).
  void wait_inbound(Gpu& gpu, cudaStream_t waiter, bool with_h2d = true) {
    std::vector<const gpu::Stream*> inbound{&gpu.xchg};
    if (with_h2d) inbound.push_back(&gpu.h2d);
    for (const auto& lane : gpu.lanes) inbound.push_back(&lane);
    for (const gpu::Stream* s : inbound) {
      if (s->get() == waiter) continue;  // in order on itself
      gpu::Event arrived(gpu.device, false);
      arrived.record(*s);
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(waiter, arrived, 0));
    }
  }

  /// Sorts rows [first, first + rows) of `p` (keys with their payloads or positions) on the work stream.
  void sort_rows(Gpu& gpu, Side side, Partition& p, std::int64_t first, std::int64_t rows, DeviceBuffer& alt_keys,
                 DeviceBuffer& alt_payload, DeviceBuffer& temp) {
    if (rows == 0) return;
    const sort::TupleLayout l = layout(side);
    std::byte* keys = at(p.keys, first, l.key_bytes);
    std::byte* payload = l.payload_bytes == 0 ? nullptr : at(plan_.late ? p.positions : p.payload, first, l.payload_bytes);
    void* alt = l.payload_bytes ? alt_payload.data() : nullptr;
    const sort::SortedIn where = sort::local_sort(l, keys, alt_keys.data(), payload, alt, rows, 0, l.key_bytes * 8,
                                                  temp.data(), temp.size(), gpu.work);
    if (where == sort::SortedIn::Alternate) sort::copy_tuples(l, keys, payload, alt_keys.data(), alt, rows, gpu.work);
  }

  /// The sorted runs of `side`'s partition: the streamed variant's X in plan_.resident_runs (one run's
  /// sort buffers); counting on arrival, kArrivalRuns; else one.
  int runs(Side side) const {
    if (plan_.streamed) return side == x_side() ? plan_.resident_runs : 1;
    return counts_on_arrival() ? kArrivalRuns[static_cast<int>(side)] : 1;
  }
  /// Rows of a partition of `capacity` rows that one of `runs` runs holds at most.
  static std::int64_t run_capacity(std::int64_t capacity, int runs) { return (capacity + runs - 1) / runs; }
  /// Run i of `side`'s partition p.
  SortedRows run_of(const Partition& p, Side side, int i) const {
    const std::int64_t per = run_capacity(p.rows, runs(side));
    const std::int64_t first = std::min(p.rows, i * per);
    return {&p, first, std::min(per, p.rows - first)};
  }
  static SortedRows whole(const Gpu& gpu, Side side) {
    const Partition& p = gpu.partition[static_cast<int>(side)];
    return {&p, 0, p.rows};
  }
  /// X: the build side of the resident joins (the side whose order the output does not follow).
  Side x_side() const { return plan_.probe == Side::S ? Side::R : Side::S; }

  ResidentPair pair_of(const SortedRows& x, const SortedRows& y) const {
    const int kb = plan_.r.key_bytes;
    return {kb, at(x.p->keys, x.first, kb), static_cast<std::uint64_t>(x.rows), at(y.p->keys, y.first, kb),
            static_cast<std::uint64_t>(y.rows)};
  }

  static mgjoin::detail::TupleCounter* counter(Gpu& gpu) {
    return reinterpret_cast<mgjoin::detail::TupleCounter*>(gpu.counter.data());
  }

  /// Match arrays and their scan for up to `ny` probe rows.
  static OutputArrays make_output_arrays(Gpu& gpu, std::uint64_t ny) {
    gpu::DeviceGuard guard(gpu.device);
    OutputArrays a;
    a.matches = DeviceBuffer(*gpu.memory, (ny + 1) * sizeof(std::uint64_t));
    a.first_match = DeviceBuffer(*gpu.memory, std::max<std::uint64_t>(1, ny) * sizeof(std::uint64_t));
    a.offsets = DeviceBuffer(*gpu.memory, (ny + 1) * sizeof(std::uint64_t));
    a.scan_temp = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, scan_scratch_bytes(ny + 1)));
    return a;
  }

  /// The output offsets of `ny` probe rows: the exclusive scan of their match counts, on the work
  /// stream ahead of the output windows that read them.
  static void scan_matches(Gpu& gpu, const OutputArrays& a, std::uint64_t ny) {
    exclusive_scan(a.view().matches, reinterpret_cast<std::uint64_t*>(a.offsets.data()), ny + 1, a.scan_temp.data(),
                   a.scan_temp.size(), gpu.work);
  }

  /// Runs fn(d) for every GPU d, one host thread each when there are several (each blocks on its own
  /// GPU's copies out); rethrows the first error once all are done.
  template <class Fn>
  void on_every_gpu(Fn&& fn) {
    if (g_ == 1) return fn(0);
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(g_);
    for (int d = 0; d < g_; ++d)
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

  /// The counter once the work issued on `gpu` so far is done. A kernel writes it to mapped host memory:
  /// a copy out would wait on the copy engine behind the output windows' copies already queued there
  /// (on one H100, up to a whole job's windows: 30 ms).
  mgjoin::detail::TupleCounter read_counter(Gpu& gpu) {
    gpu::DeviceGuard guard(gpu.device);
    // Mapped pinned memory: under UVA its host address is valid in kernels too.
    auto* mapped = reinterpret_cast<mgjoin::detail::TupleCounter*>(gpu.counter_host->base());
    publish_counter(counter(gpu), mapped, gpu.work);
    gpu.counted.record(gpu.work);
    gpu.counted.synchronize();
    const volatile mgjoin::detail::TupleCounter* host = mapped;
    mgjoin::detail::TupleCounter c;
    c.count = host->count;
    c.overflowed = host->overflowed;
    return c;
  }

  void write_windows(Gpu& gpu, const OutputWindowArgs& common, std::uint64_t base, std::uint64_t total,
                     JoinResult& result);
  /// Waits for every GPU's output windows to be written and copied out.
  void drain_output() {
    for (auto& gpu : gpus_) {
      gpu::DeviceGuard guard(gpu.device);
      gpu.out.synchronize();
      gpu.d2h.synchronize();
    }
  }
  /// `waiter` waits for the work issued on `gpu`'s work stream so far.
  static void follow_work(Gpu& gpu, cudaStream_t waiter) {
    gpu::Event issued(gpu.device, false);
    issued.record(gpu.work);
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(waiter, issued, 0));
  }
  OutputWindowArgs window_args(const SortedRows& x, const SortedRows& y, const OutputArrays& arrays) const;

  // Streamed rounds (definitions below the class).
  /// Where round t's segments of `side` for GPU d go: its partition, or (streamed Y) landing t % kLandings.
  Partition& destination(int d, Side side, std::size_t t) {
    Gpu& gpu = gpus_[d];
    return plan_.streamed && side == plan_.probe ? gpu.landing[t % kLandings] : gpu.partition[static_cast<int>(side)];
  }
  int bring_round(std::int64_t t);
  void land_round(int slot, std::int64_t t);
  void sort_landing(Gpu& gpu, int lb);
  void count_round(int lb);
  /// `before` and `after`: the share of Y that had arrived before this round and after it.
  void output_round(int lb, OutputColumns& out, double before, double after);
  /// Landing lb's round is done with once `stream` (work, or out where windows read it) gets here.
  void consumed(Gpu& gpu, int lb, cudaStream_t stream) {
    gpu.consumed[lb].record(stream);
    gpu.consumed_recorded[lb] = true;
  }
  /// `stream` waits until landing lb's previous round has been joined and written out.
  static void wait_consumed(Gpu& gpu, int lb, cudaStream_t stream) {
    if (gpu.consumed_recorded[lb]) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(stream, gpu.consumed[lb], 0));
  }

  std::array<RelationView, 2> rel_;
  const CopartPlan& plan_;
  CopartContext ctx_;
  OutputMode output_;
  int g_;
  std::uint64_t key_xor_;
  std::vector<Gpu> gpus_;
  std::vector<cudaStream_t> lanes_;  ///< [dst * g + src]
  int turn_ = 0;
  std::array<bool, 2> sorts_issued_{};
  std::uint64_t output_jobs_ = 0;  ///< streamed: output jobs (round, run) so far; their parity picks the arrays
  std::array<std::vector<Round>, 2> rounds_;  ///< the key pass, per side (g > 1)
  std::uint64_t bytes_in_ = 0, bytes_nvlink_ = 0;
};

std::uint64_t Flow::materialize(OutputColumns& out, const OutputInto& into, PhaseStat& stat) {
  const auto t0 = Clock::now();
  std::vector<OutputArrays> arrays(g_);
  std::vector<MatchArrays> views(g_);
  for (int d = 0; d < g_; ++d) {
    arrays[d] = make_output_arrays(gpus_[d], static_cast<std::uint64_t>(whole(gpus_[d], plan_.probe).rows));
    views[d] = arrays[d].view();
  }
  const Counts counts = join(views);
  std::vector<std::uint64_t> bases(g_);
  std::uint64_t total = 0;  // at most counts.total: join() checked the sum
  for (int d = 0; d < g_; ++d) {
    Gpu& gpu = gpus_[d];
    gpu::DeviceGuard guard(gpu.device);
    scan_matches(gpu, arrays[d], static_cast<std::uint64_t>(whole(gpu, plan_.probe).rows));
    bases[d] = total;
    total += counts.per_gpu[d];
  }
  const std::uint64_t row_bytes = output_row_bytes(plan_.r, plan_.s);
  mgjoin::detail::expect_output_memory(total, row_bytes);
  // Pinned result columns (from the pinned cache after the first join) take the windows straight
  // from the GPUs; pageable ones (no pinned memory to be had) go through the pinned staging.
  const std::uint64_t base = out.reserve(total, into.after);
  on_every_gpu([&](int d) {
    const OutputWindowArgs common = window_args(whole(gpus_[d], x_side()), whole(gpus_[d], plan_.probe), arrays[d]);
    write_windows(gpus_[d], common, base + bases[d], counts.per_gpu[d], out.result());
  });
  drain_output();
  for (auto& gpu : gpus_) gpu.windows.release();
  stat.seconds = seconds_since(t0);
  stat.bytes_pcie = total * row_bytes;
  return total;
}

void Flow::begin_stream(OutputMode output) {
  const sort::TupleLayout l = layout(plan_.probe);
  for (auto& gpu : gpus_) {
    gpu::DeviceGuard guard(gpu.device);
    // The landings take the sort buffers' place once X is sorted, or sit beside them (the rounds'
    // sorts follow X's on the work stream).
    if (!plan_.stream_beside_sort) {
      gpu.work.synchronize();
      gpu.sort_temp.release();
      gpu.alt_payload.release();
      gpu.alt_keys.release();
    }
    for (int lb = 0; lb < kLandings; ++lb) {
      gpu.landing[lb].capacity = plan_.landing_rows;
      make_partition_buffers(gpu, gpu.landing[lb], widths(plan_.probe));
      gpu.consumed[lb] = gpu::Event(gpu.device, false);
      gpu.landed[lb] = gpu::Event(gpu.device, false);
    }
    gpu.landing_alt_keys = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, plan_.landing_rows * l.key_bytes));
    if (l.payload_bytes) gpu.landing_alt_payload = DeviceBuffer(*gpu.memory, plan_.landing_rows * l.payload_bytes);
    gpu.landing_temp = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, sort::local_sort_temp_bytes(l, plan_.landing_rows)));
    if (output == OutputMode::Materialize)
      for (auto& a : gpu.arrays) a = make_output_arrays(gpu, static_cast<std::uint64_t>(plan_.landing_rows));
    MGJOIN_CUDA_TRY(cudaMemsetAsync(gpu.counter.data(), 0, sizeof(mgjoin::detail::TupleCounter), gpu.work));
  }
}

void Flow::stream(JoinResult& result, OutputColumns* out, const OutputInto& into) {
  const std::int64_t n = relation(plan_.probe).size();
  const std::int64_t per_round = plan_.chunk_rows * g_;
  const std::int64_t rounds = (n + per_round - 1) / per_round;
  // Rounds t + 1 .. t + ahead are issued before round t is joined, so that they cross while it is: on
  // one GPU every landing but the joined one's (the copies wait for their landings' earlier rounds),
  // on several one round (its chunks fill one of the two chunk slots that land_round empties).
  const std::int64_t ahead = g_ == 1 ? kLandings - 1 : 1;
  std::vector<int> slots(static_cast<std::size_t>(rounds), -1);
  for (std::int64_t t = 0; t < std::min(ahead, rounds); ++t) slots[t] = bring_round(t);
  for (std::int64_t t = 0; t < rounds; ++t) {
    mgjoin::detail::throw_if_cancelled();
    if (t + ahead < rounds) slots[t + ahead] = bring_round(t + ahead);
    const int lb = static_cast<int>(t % kLandings);
    if (g_ > 1) land_round(slots[t], t);
    if (out)
      output_round(lb, *out, into.at(static_cast<double>(t * per_round) / static_cast<double>(n)),
                   into.at(static_cast<double>(std::min(n, (t + 1) * per_round)) / static_cast<double>(n)));
    else
      count_round(lb);
  }
  if (out) return drain_output();
  std::vector<mgjoin::detail::TupleCounter> counters;
  for (auto& gpu : gpus_) counters.push_back(read_counter(gpu));
  result.count = mgjoin::detail::total_tuples(counters, {});
}

/// One GPU: round t's chunk goes straight into landing t % kLandings. Several: each GPU's chunk goes into a slot
/// and is partitioned there (land_round sends it on). Returns the slot.
int Flow::bring_round(std::int64_t t) {
  const Side y = plan_.probe;
  const std::int64_t n = relation(y).size();
  if (g_ == 1) {
    Gpu& gpu = gpus_[0];
    const int lb = static_cast<int>(t % kLandings);
    Partition& l = gpu.landing[lb];
    const std::int64_t first = t * plan_.chunk_rows;
    gpu::DeviceGuard guard(gpu.device);
    wait_consumed(gpu, lb, gpu.h2d);
    l.rows = std::min(plan_.chunk_rows, n - first);
    copy_rows_in(gpu, y, first, l.rows, l, 0);
    gpu.landed[lb].record(gpu.h2d);
    return 0;
  }
  const int b = turn_++ % 2;
  rounds_[static_cast<int>(y)].emplace_back();
  const std::int64_t per_round = plan_.chunk_rows * g_;
  for (int j = 0; j < g_; ++j) {
    const std::int64_t first = t * per_round + j * plan_.chunk_rows;
    start_chunk(gpus_[j], gpus_[j].slots[b], y, first, std::clamp<std::int64_t>(n - first, 0, plan_.chunk_rows));
  }
  return b;
}

/// Several GPUs: sends round t's partitioned chunks (slot `slot`) into the owners' landings t % kLandings, once
/// the landing's previous round is consumed; the work streams then wait for the copies.
void Flow::land_round(int slot, std::int64_t t) {
  const int lb = static_cast<int>(t % kLandings);
  for (auto& gpu : gpus_) {
    gpu::DeviceGuard guard(gpu.device);
    gpu.landing[lb].rows = 0;
    for (auto& lane : gpu.lanes) wait_consumed(gpu, lb, lane);
    wait_consumed(gpu, lb, gpu.xchg);
  }
  exchange(slot, plan_.probe, static_cast<std::size_t>(t));
  for (auto& gpu : gpus_) {
    gpu::DeviceGuard guard(gpu.device);
    wait_inbound(gpu, gpu.work, /*with_h2d=*/false);  // h2d carries round t + 1 by now
  }
}

/// Sorts landing lb on the work stream once it has arrived (one GPU: its keys came unflipped).
void Flow::sort_landing(Gpu& gpu, int lb) {
  Partition& l = gpu.landing[lb];
  if (g_ == 1) {
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.work, gpu.landed[lb], 0));
    flip_keys(widths(plan_.probe).key_bytes, l.keys.data(), l.rows, key_xor_, gpu.work);
  }
  sort_rows(gpu, plan_.probe, l, 0, l.rows, gpu.landing_alt_keys, gpu.landing_alt_payload, gpu.landing_temp);
}

void Flow::count_round(int lb) {
  for (auto& gpu : gpus_) {
    gpu::DeviceGuard guard(gpu.device);
    sort_landing(gpu, lb);
    const SortedRows y{&gpu.landing[lb], 0, gpu.landing[lb].rows};
    for (int i = 0; i < runs(x_side()) && y.rows; ++i) {
      const SortedRows x = run_of(gpu.partition[static_cast<int>(x_side())], x_side(), i);
      if (x.rows) resident_join(pair_of(x, y), counter(gpu), {}, gpu.join_scratch.data(), gpu.work);
    }
    consumed(gpu, lb, gpu.work);
  }
}

/// Joins landing lb with X's runs one run at a time (an output job each): every GPU counts and scans
/// its pair into one of its two sets of match arrays, the host places each GPU's rows in the output, and
/// every GPU's `out` stream writes them while its work stream goes on to the next job.
void Flow::output_round(int lb, OutputColumns& out, double before, double after) {
  for (auto& gpu : gpus_) {
    gpu::DeviceGuard guard(gpu.device);
    sort_landing(gpu, lb);
  }
  const int n_runs = runs(x_side());
  for (int i = 0; i < n_runs; ++i) {
    const auto set = static_cast<int>(output_jobs_++ % 2);
    std::vector<SortedRows> xs(g_), ys(g_);
    std::vector<std::uint64_t> counts(g_, 0), bases(g_, 0);
    for (int d = 0; d < g_; ++d) {
      Gpu& gpu = gpus_[d];
      gpu::DeviceGuard guard(gpu.device);
      xs[d] = run_of(gpu.partition[static_cast<int>(x_side())], x_side(), i);
      ys[d] = {&gpu.landing[lb], 0, gpu.landing[lb].rows};
      if (xs[d].rows == 0 || ys[d].rows == 0) continue;
      // The set is free once the windows of the job two before have been written from it.
      if (gpu.arrays_free_recorded[set]) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.work, gpu.arrays_free[set], 0));
      MGJOIN_CUDA_TRY(cudaMemsetAsync(gpu.counter.data(), 0, sizeof(mgjoin::detail::TupleCounter), gpu.work));
      resident_join(pair_of(xs[d], ys[d]), counter(gpu), gpu.arrays[set].view(), gpu.join_scratch.data(), gpu.work);
      scan_matches(gpu, gpu.arrays[set], static_cast<std::uint64_t>(ys[d].rows));
    }
    CheckedSum rows;
    for (int d = 0; d < g_; ++d) {
      if (xs[d].rows == 0 || ys[d].rows == 0) continue;
      const mgjoin::detail::TupleCounter c = read_counter(gpus_[d]);
      counts[d] = mgjoin::detail::total_tuples({&c, 1}, {});
      rows.add(counts[d]);
    }
    if (rows.overflowed) mgjoin::detail::throw_output_overflow("the joined parts");
    // Columns that must grow are copied: the windows still crossing into them land first.
    if (!out.holds(rows.value)) drain_output();
    // The job's rows are reserved together, at the share of Y arrived with the whole job: reserving one
    // GPU's rows at that share guessed 1/g of the output, and the columns grew by copying every run.
    // The last run ends exactly at `after` (1 for the last round: the columns grow to their rows).
    if (rows.value) {
      std::uint64_t base = out.reserve(rows.value, i + 1 == n_runs ? after : before + (after - before) * (i + 1) / n_runs);
      for (int d = 0; d < g_; ++d) bases[d] = std::exchange(base, base + counts[d]);
    }
    on_every_gpu([&](int d) {
      if (counts[d]) write_windows(gpus_[d], window_args(xs[d], ys[d], gpus_[d].arrays[set]), bases[d], counts[d], out.result());
    });
    for (auto& gpu : gpus_) {
      gpu::DeviceGuard guard(gpu.device);
      follow_work(gpu, gpu.out);  // a job without windows still frees its set after its join
      gpu.arrays_free[set].record(gpu.out);
      gpu.arrays_free_recorded[set] = true;
    }
  }
  for (auto& gpu : gpus_) {
    gpu::DeviceGuard guard(gpu.device);
    consumed(gpu, lb, gpu.out);  // out has followed the round's joins, and written its windows
  }
}

OutputWindowArgs Flow::window_args(const SortedRows& x, const SortedRows& y, const OutputArrays& arrays) const {
  const Side xs = x_side();
  // Late payloads stay in arrival order: the rows' positions (sorted with the keys) say where each is.
  const auto positions = [](const SortedRows& rows) {
    return rows.p->positions.empty() ? nullptr : reinterpret_cast<const std::uint32_t*>(rows.p->positions.data()) + rows.first;
  };
  const auto payload = [&](const SortedRows& rows, Side side) -> const void* {
    const int bytes = widths(side).payload_bytes;
    return bytes == 0 ? nullptr : plan_.late ? rows.p->payload.data() : at(rows.p->payload, rows.first, bytes);
  };
  OutputWindowArgs a;
  a.pair = pair_of(x, y);
  a.x_payload = payload(x, xs);
  a.x_payload_bytes = widths(xs).payload_bytes;
  a.x_position = positions(x);
  a.y_payload = payload(y, plan_.probe);
  a.y_payload_bytes = widths(plan_.probe).payload_bytes;
  a.y_position = positions(y);
  a.x_is_r = xs == Side::R;
  a.offsets = reinterpret_cast<const std::uint64_t*>(arrays.offsets.data());
  a.first_match = arrays.view().first_match;
  a.key_xor = key_xor_;
  a.r_payload_bytes = plan_.r.payload_bytes;
  a.s_payload_bytes = plan_.s.payload_bytes;
  return a;
}

/// One GPU's output rows [base, base + total) of the result, column by column (key, R's payload, S's
/// payload), each window by window, on the out stream after the work issued so far (the join and scan
/// that filled the arrays): the GPU writes window k + 1 while window k crosses PCIe. Late payloads are
/// still arriving while the key column goes out; a payload column waits for its side's. Pinned result
/// columns take the windows straight, and the host returns at once (drain_output() waits for them);
/// pageable ones go through the pinned staging, which the host copies out window by window.
void Flow::write_windows(Gpu& gpu, const OutputWindowArgs& common, std::uint64_t base, std::uint64_t total,
                         JoinResult& result) {
  if (total == 0) return;
  gpu::DeviceGuard guard(gpu.device);
  struct Column {
    HostColumn* to;
    int bytes;
    Side side;  ///< whose payload (the key column: the probe side's keys)
    bool key;
  };
  std::vector<Column> columns{{&result.key, plan_.r.key_bytes, plan_.probe, true}};
  if (plan_.r.payload_bytes) columns.push_back({&result.r_payload, plan_.r.payload_bytes, Side::R, false});
  if (plan_.s.payload_bytes) columns.push_back({&result.s_payload, plan_.s.payload_bytes, Side::S, false});
  const std::uint64_t window = plan_.window_rows;
  const std::uint64_t windows = (total + window - 1) / window;
  int widest = 0;
  for (const Column& c : columns) widest = std::max(widest, c.bytes);
  const std::uint64_t window_bytes = window * widest;
  const auto pinned = [](const HostColumn* c) { return c->size() == 0 || c->memory_kind() == MemoryKind::Pinned; };
  const bool direct = std::all_of(columns.begin(), columns.end(), [&](const Column& c) { return pinned(c.to); });
  OutputWindows& w = gpu.windows;
  if (w.device[0].empty())
    for (auto& b : w.device) b = DeviceBuffer(*gpu.memory, window_bytes);
  if (!direct && w.staging[0].empty())
    for (auto& st : w.staging) st = PinnedBuffer(*gpu.pinned, window_bytes);
  follow_work(gpu, gpu.out);
  const std::uint64_t jobs = windows * columns.size();
  const int first_window = w.next;
  w.next = static_cast<int>((static_cast<std::uint64_t>(first_window) + jobs) % 2);
  // Job k uses window (first_window + k) % 2: the parity goes on from the GPU's previous jobs.
  const auto window_of = [&](std::uint64_t k) { return static_cast<int>((first_window + k) % 2); };
  const auto rows_of = [&](std::uint64_t w) {
    const std::uint64_t o0 = w * window;
    return std::pair{o0, std::min(total, o0 + window) - o0};
  };
  // Job k is window k % windows of column k / windows.
  auto issue = [&](std::uint64_t k) {
    const Column& c = columns[k / windows];
    const auto [o0, n] = rows_of(k % windows);
    const int b = window_of(k);
    std::byte* out = w.device[b].data();
    if (k % windows == 0 && !c.key && plan_.late)
      MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.out, gpu.payloads_in[static_cast<int>(c.side)], 0));
    OutputWindowArgs a = common;
    a.o_begin = o0;
    a.o_end = o0 + n;
    a.out_key = c.key ? out : nullptr;
    a.out_r_payload = !c.key && c.side == Side::R ? out : nullptr;
    a.out_s_payload = !c.key && c.side == Side::S ? out : nullptr;
    // The buffer is free once its previous copy out is done; the copy out runs on its own stream.
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.out, w.copied[b], 0));
    write_output_window(a, gpu.out);
    w.written[b].record(gpu.out);
    MGJOIN_CUDA_TRY(cudaStreamWaitEvent(gpu.d2h, w.written[b], 0));
    std::byte* to = direct ? c.to->as<std::byte>() + (base + o0) * c.bytes : w.staging[b].data();
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(to, out, n * c.bytes, cudaMemcpyDeviceToHost, gpu.d2h));
    w.copied[b].record(gpu.d2h);
  };
  // Straight into pinned columns the host need not wait: the streams order the windows' reuse.
  // Through staging it copies each window out before its staging is reused.
  auto drain = [&](std::uint64_t k) {
    if (direct) return;
    const int b = window_of(k);
    w.copied[b].synchronize();
    const Column& c = columns[k / windows];
    const auto [o0, n] = rows_of(k % windows);
    const ByteCopy copy{c.to->as<std::byte>() + (base + o0) * c.bytes, w.staging[b].data(), n * c.bytes};
    copy_in_blocks({&copy, 1});
  };
  issue(0);
  for (std::uint64_t k = 1; k < jobs; ++k) {
    issue(k);
    drain(k - 1);
  }
  drain(jobs - 1);
}

}  // namespace

OutputColumns::OutputColumns(const RelationView& r, const RelationView& s, const Widths& rw, const Widths& sw,
                             JoinResult& result)
    : result_(result), types_{r.key.type, r.payload ? r.payload->type : DType::UInt8, s.payload ? s.payload->type : DType::UInt8},
      present_{true, rw.payload_bytes > 0, sw.payload_bytes > 0},
      row_bytes_(output_row_bytes(rw, sw)) {}

std::uint64_t OutputColumns::reserve(std::uint64_t rows, double arrived) {
  CheckedSum end{next_};
  end.add(rows);
  if (end.overflowed) detail::throw_output_overflow("the joined parts");
  if (end.value > capacity_) {
    std::uint64_t wanted = end.value;
    if (arrived < 1) {
      const double guess = static_cast<double>(end.value) / std::max(arrived, 1e-9) * 1.05 + 1024;
      wanted = std::max({end.value, capacity_ + capacity_ / 2, static_cast<std::uint64_t>(std::min(guess, 1.8e19))});
    }
    // The pinned cache may hold blocks of a previous join's output: taking from it needs no new
    // memory, so the guess is tried first and the exact need (checked, or refused) after it.
    try {
      take(wanted);
    } catch (const OutOfMemory&) {
      if (wanted == end.value) throw;
      take(end.value);
    }
  }
  return std::exchange(next_, end.value);
}

void OutputColumns::finish() {
  if (capacity_ == 0) take(0);
  for (HostColumn* c : {&result_.key, &result_.r_payload, &result_.s_payload})
    if (c->size()) c->truncate(static_cast<std::int64_t>(next_));
  result_.count = next_;
}

/// New columns of `rows` rows holding the rows written so far.
void OutputColumns::take(std::uint64_t rows) {
  const std::int64_t n = detail::output_rows(rows, row_bytes_);
  const std::array<HostColumn*, 3> columns{&result_.key, &result_.r_payload, &result_.s_payload};
  std::vector<ByteCopy> copies;
  std::array<HostColumn, 3> fresh;
  for (int c = 0; c < 3; ++c) {
    if (!present_[c]) continue;
    fresh[c] = HostColumn::allocate(types_[c], n, MemoryKind::Pinned);
    copies.push_back({fresh[c].as<std::byte>(), columns[c]->as<std::byte>(), next_ * dtype_size(types_[c])});
  }
  if (next_) copy_in_blocks(copies);
  for (int c = 0; c < 3; ++c) *columns[c] = std::move(fresh[c]);
  capacity_ = rows;
}

ScratchSizes device_scratch_sizes() {
  ScratchSizes s;
  s.sort = [](std::int64_t rows, int key_bytes, int payload_bytes) {
    return sort::local_sort_temp_bytes({key_bytes, payload_bytes, false}, std::max<std::int64_t>(rows, 1));
  };
  s.partition = [](std::int64_t rows, int gpus) { return partition_scratch_bytes(rows, gpus); };
  s.scan = [](std::uint64_t n) { return scan_scratch_bytes(n); };
  return s;
}

std::uint64_t pinned_bytes_needed(const CopartPlan& plan, OutputMode output) {
  const std::uint64_t small = 2 * 4096;  // segment sizes of two slots, with alignment
  if (output != OutputMode::Materialize) return small;
  const std::uint64_t widest = std::max({plan.r.key_bytes, plan.r.payload_bytes, plan.s.payload_bytes});
  return small + 2 * (plan.window_rows * widest + 4096);
}

namespace {

/// The streamed variant: X in and sorted in runs, then Y through in rounds.
void run_streamed(Flow& flow, const CopartPlan& plan, OutputColumns* out, const OutputInto& into, JoinResult& result) {
  const auto t0 = Clock::now();
  const Side x = plan.probe == Side::S ? Side::R : Side::S;
  flow.transfer(x);
  flow.sort_partitions(x);
  flow.wait_transfer();
  flow.begin_stream(out ? OutputMode::Materialize : OutputMode::Count);
  const double resident = seconds_since(t0);
  const std::uint64_t resident_in = flow.bytes_pcie_in(), resident_nvlink = flow.bytes_nvlink();
  mgjoin::detail::throw_if_cancelled();
  const auto t1 = Clock::now();
  const std::uint64_t rows_before = out ? out->rows() : 0;
  flow.stream(result, out, into);
  std::uint64_t bytes_out = 0;
  if (out) {
    result.count = out->rows() - rows_before;
    bytes_out = result.count * output_row_bytes(plan.r, plan.s);
  }
  result.phases.push_back({"copart.resident", resident, resident_in, resident_nvlink});
  result.phases.push_back({"copart.stream", seconds_since(t1), flow.bytes_pcie_in() - resident_in + bytes_out,
                           flow.bytes_nvlink() - resident_nvlink});
}

}  // namespace

/// The in-core flow's state between its steps.
struct InCoreJoin::State {
  State(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output, const CopartContext& context)
      : flow(r, s, plan, output, context), plan(plan) {}
  Flow flow;
  const CopartPlan& plan;
  /// The host's time in start() and in arrive()'s wait: the whole transfer when the steps run back to
  /// back, what was not hidden behind another group's finish when they overlap.
  double transfer_seconds = 0;
  bool arrived = false;
};

InCoreJoin::InCoreJoin(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
                       const CopartContext& context, const OutputInto& into)
    : output_(output), into_(into) {
  MGJOIN_EXPECTS(plan.fits && !plan.streamed, "InCoreJoin runs an in-core plan");
  MGJOIN_EXPECTS(output != OutputMode::Materialize || into.columns, "a materialized InCoreJoin writes into given columns");
  state_ = std::make_unique<State>(r, s, plan, output, context);
}

InCoreJoin::~InCoreJoin() = default;

void InCoreJoin::start() {
  const auto t0 = Clock::now();
  state_->flow.transfer(Side::R);
  state_->flow.sort_partitions(Side::R);  // runs on the work streams while S arrives
  mgjoin::detail::throw_if_cancelled();
  state_->flow.transfer(Side::S);
  // Counting on one GPU, S's runs are sorted and joined as they arrive (stream-ordered behind them).
  if (state_->flow.counts_on_arrival()) state_->flow.sort_partitions(Side::S);
  state_->transfer_seconds += seconds_since(t0);
}

void InCoreJoin::arrive() {
  if (state_->arrived) return;
  state_->arrived = true;
  const auto t0 = Clock::now();
  state_->flow.wait_transfer();
  state_->transfer_seconds += seconds_since(t0);
  mgjoin::detail::throw_if_cancelled();
  state_->flow.sort_partitions(Side::S);
}

void InCoreJoin::finish(JoinResult& result) {
  arrive();
  Flow& flow = state_->flow;
  // Late payloads cross while S is sorted and joined and the key column goes out (issued after the
  // sort, which must not wait for them).
  flow.send_late_payloads(Side::R);
  flow.send_late_payloads(Side::S);
  flow.release_transfer_buffers();
  PhaseStat out_stat{"copart.output", 0, 0, 0};
  mgjoin::detail::throw_if_cancelled();
  const bool materialize = output_ == OutputMode::Materialize;
  result.count = materialize ? flow.materialize(*into_.columns, into_, out_stat) : flow.join({}).total;
  result.phases.push_back({"copart.transfer", state_->transfer_seconds, flow.bytes_pcie_in(), flow.bytes_nvlink()});
  result.phases.push_back({"copart.sort_tail", flow.tail_seconds(false), 0, 0});
  result.phases.push_back({"copart.join", flow.tail_seconds(true), 0, 0});
  if (state_->plan.late) result.phases.push_back({"copart.late_payloads", flow.late_payload_seconds(), 0, 0});
  if (materialize) result.phases.push_back(out_stat);
}

void run_copart(const RelationView& r, const RelationView& s, const CopartPlan& plan, OutputMode output,
                const CopartContext& context, JoinResult& result, const OutputInto& into) {
  MGJOIN_EXPECTS(output != OutputMode::Ranges, "the co-partitioned flow has no ranges output");
  std::optional<OutputColumns> own;
  OutputColumns* out = into.columns;
  if (output == OutputMode::Materialize && !out) out = &own.emplace(r, s, plan.r, plan.s, result);
  if (output != OutputMode::Materialize) out = nullptr;
  if (plan.streamed) {
    Flow flow(r, s, plan, output, context);
    run_streamed(flow, plan, out, into, result);
  } else {
    OutputInto in_core = into;
    in_core.columns = out;
    InCoreJoin join(r, s, plan, output, context, in_core);
    join.start();
    join.finish(result);
  }
  if (own) own->finish();
}

}  // namespace mgjoin::copart
