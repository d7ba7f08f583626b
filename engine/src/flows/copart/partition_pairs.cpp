// The partition pairs the co-partitioned variants share (partition_pairs.hpp).
#include "engine/src/flows/copart/partition_pairs.hpp"

#include "engine/src/exec/key_order.hpp"
#include "engine/src/flows/copart/bucket_pass1.hpp"
#include "engine/src/exec/rows.hpp"
#include "engine/src/sort/radix_partition.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <string>
#include <utility>

namespace mgjoin::copart {

using exec::row_at;

PartitionPairs::PartitionPairs(const RelationView& r, const RelationView& s, const CopartPlan& plan,
                               const CopartContext& ctx, exec::Lanes& lanes, std::array<int, 2> runs)
    : rel_{r, s}, plan_(plan), ctx_(ctx), g_(static_cast<int>(ctx.devices.size())),
      key_xor_(exec::ordered_key_xor(r.key.type)), lanes_(lanes), runs_(runs), router_(lanes, /*wait_input_on_device=*/true),
      exchange_(lanes, ctx.devices, ctx.exchange, ctx.comms) {
  MGJOIN_EXPECTS(g_ + (plan.partitions.spill_side >= 0 ? 1 : 0) == plan.partitions.gpus,
                 "the plan was made for another GPU count");
  gpus_.resize(g_);
  for (int d = 0; d < g_; ++d) {
    PairGpu& gpu = gpus_[d];
    gpu.device = ctx.devices[d];
    gpu.memory = ctx.device_memory[d];
    gpu.pinned = ctx.pinned[d];
    gpu.counter = exec::MatchCounter(gpu.device);
    gpu.tail_begin = gpu::Event(gpu.device);
    gpu.sorted = gpu::Event(gpu.device);
    gpu.join_begin = gpu::Event(gpu.device);
    gpu.joined = gpu::Event(gpu.device);
  }
}

void take_rows(Partition& p, alloc::DeviceStackAllocator& memory, const Widths& w) {
  p.keys = DeviceBuffer(memory, std::max<std::size_t>(1, p.capacity * w.key_bytes));
  if (w.payload_bytes) p.payload = DeviceBuffer(memory, std::max<std::size_t>(1, p.capacity * w.payload_bytes));
}

void PartitionPairs::take_partition(Side side, bool positions) {
  for (int d = 0; d < g_; ++d) {
    PairGpu& gpu = gpus_[d];
    Partition& p = gpu.partition[static_cast<int>(side)];
    p.capacity = plan_.sizes.bound[static_cast<int>(side)][d];
    take_rows(p, *gpu.memory, widths(side));
    if (positions) p.positions = DeviceBuffer(*gpu.memory, std::max<std::size_t>(1, p.capacity * 4));
  }
}

void PartitionPairs::take_join_buffers() {
  for (PairGpu& gpu : gpus_) {
    gpu.counter.take(*gpu.memory);
    gpu.join_scratch = DeviceBuffer(*gpu.memory, resident_join_scratch_bytes());
  }
}

void PartitionPairs::take_maps() {
  for (PairGpu& gpu : gpus_)
    for (int side = 0; side < 2; ++side)
      if (plan_.map_rows[side]) gpu.maps[side] = DeviceBuffer(*gpu.memory, 4 * plan_.map_rows[side]);
}

void PartitionPairs::take_slots() {
  for (int d = 0; d < g_; ++d)
    router_.make_slots(d, *gpus_[d].memory, *gpus_[d].pinned, plan_.chunk_rows, plan_.r, plan_.s, plan_.sizes.max_copies,
                       plan_.partitions.gpus, ctx_.devices);
}

void PartitionPairs::take_sort_buffers(std::array<bool, 2> sides) {
  for (PairGpu& gpu : gpus_) {
    std::size_t keys = 1, payload = 0, temp = 1;
    for (int side = 0; side < 2; ++side) {
      if (!sides[side]) continue;
      const std::int64_t rows = run_capacity(gpu.partition[side].capacity, runs(static_cast<Side>(side)));
      keys = std::max<std::size_t>(keys, rows * widths(static_cast<Side>(side)).key_bytes);
      payload = std::max<std::size_t>(payload, rows * plan_.sorted_payload_bytes(static_cast<Side>(side)));
      temp = std::max(temp, sort::local_sort_temp_bytes(layout(static_cast<Side>(side)), rows));
    }
    gpu.alt_keys = DeviceBuffer(*gpu.memory, keys);
    if (payload) gpu.alt_payload = DeviceBuffer(*gpu.memory, payload);
    gpu.sort_temp = DeviceBuffer(*gpu.memory, temp);
  }
}

void PartitionPairs::free_sort_buffers(int d) {
  PairGpu& gpu = gpus_[d];
  gpu.sort_temp.release();
  gpu.alt_payload.release();
  gpu.alt_keys.release();
}

void PartitionPairs::transfer(Side side) {
  if (g_ == 1)
    transfer_whole(side);
  else
    transfer_rounds(side);
}

/// One GPU: the relation goes straight into its partition (keys flipped at sort time), run by run,
/// each run's arrival recorded for its sort.
void PartitionPairs::transfer_whole(Side side) {
  PairGpu& gpu = gpus_[0];
  Partition& p = gpu.partition[static_cast<int>(side)];
  const std::int64_t n = relation(side).size();
  MGJOIN_EXPECTS(n <= p.capacity, "one GPU's partition is the whole relation");
  gpu::DeviceGuard guard(gpu.device);
  p.rows = n;
  auto& arrived = gpu.run_in[static_cast<int>(side)];
  arrived.clear();
  for (int i = 0; i < runs(side); ++i) {
    const SortedRows run = run_of(p, side, i);
    copy_rows_in(side, run.first, run.rows, p, run.first);
    arrived.emplace_back(gpu.device, false);
    arrived.back().record(lanes_[0].h2d);
  }
}

// The rows may be in this GPU's memory already (the bucketed flow's resident groups, the ranks' GPUs):
// the copy's direction follows the pointers.
void PartitionPairs::copy_rows_in(Side side, std::int64_t first, std::int64_t rows, Partition& p, std::int64_t to) {
  const Widths w = key_pass_widths(side);
  const cudaStream_t h2d = lanes_[0].h2d;
  exec::InputStaging* staging = lanes_[0].staging;
  exec::copy_input(staging, row_at(p.keys.data(), to, w.key_bytes), row_at(relation(side).key.data, first, w.key_bytes),
                   rows * w.key_bytes, h2d);
  if (w.payload_bytes)
    exec::copy_input(staging, row_at(p.payload.data(), to, w.payload_bytes), row_at(host_payload(side), first, w.payload_bytes),
                     rows * w.payload_bytes, h2d);
  bytes_in_ += static_cast<std::uint64_t>(rows) * (w.key_bytes + w.payload_bytes);
}

/// Several GPUs: round t gives GPU j the chunk t·g + j; each chunk is partitioned where it lands and
/// its segments sent to their owners while the next chunk arrives.
void PartitionPairs::transfer_rounds(Side side) {
  const exec::RoundCut cut{relation(side).size(), plan_.chunk_rows, g_};
  const Destination own = [&](int d) -> Partition& { return gpus_[d].partition[static_cast<int>(side)]; };
  router_.run_rounds(
      cut.rounds(), exec::kNoStep,
      [&](int b, std::int64_t t) {
        rounds_[static_cast<int>(side)].emplace_back();
        for (int j = 0; j < g_; ++j) start_chunk(j, b, side, cut.first(t, j), cut.rows_of(t, j));
      },
      [&](int b, std::int64_t t) {
        exchange(b, side, static_cast<std::size_t>(t), own);
        if (sort_as_filled_[static_cast<int>(side)]) sort_filled_runs(side);
      });
}

void PartitionPairs::sort_filled_runs(Side side) {
  const int s = static_cast<int>(side);
  for (int d = 0; d < g_; ++d) {
    PairGpu& gpu = gpus_[d];
    Partition& p = gpu.partition[s];
    int& next = gpu.runs_sorted[s];
    while (next + 1 < runs(side) && p.rows >= (next + 1) * run_capacity(p.capacity, runs(side))) {
      gpu::DeviceGuard guard(gpu.device);
      wait_inbound(d, lanes_[d].work, /*with_h2d=*/false);  // the copies into the run (the exchange's alone)
      const SortedRows run = run_of(p, side, next);
      sort_rows(d, side, p, run.first, run.rows, gpu.alt_keys, gpu.alt_payload, gpu.sort_temp);
      ++next;
    }
  }
}

int PartitionPairs::start_round(Side side, std::int64_t t) {
  const exec::RoundCut cut{relation(side).size(), plan_.chunk_rows, g_};
  const int b = router_.next_slot();
  rounds_[static_cast<int>(side)].emplace_back();
  for (int j = 0; j < g_; ++j) start_chunk(j, b, side, cut.first(t, j), cut.rows_of(t, j));
  return b;
}

void PartitionPairs::start_chunk(int j, int b, Side side, std::int64_t first, std::int64_t rows) {
  PairGpu& gpu = gpus_[j];
  const int s = static_cast<int>(side);
  const LandedChunk chunk{first, rows, gpu.map_filled[s], 0};
  rounds_[s].back().chunks.push_back(chunk);
  std::uint32_t* source_out = nullptr;
  if (rows != 0 && !gpu.maps[s].empty()) {
    source_out = reinterpret_cast<std::uint32_t*>(gpu.maps[s].data()) + chunk.map_row;
    // Fixed stride per chunk: the plan sized the map for every chunk's most copies.
    gpu.map_filled[s] += static_cast<std::uint64_t>(plan_.chunk_rows) * plan_.sizes.max_copies[s];
  }
  bytes_in_ += router_.start_chunk(j, b, relation(side), key_pass_widths(side), side, key_xor_, first, rows,
                                   plan_.partitions, source_out);
}

void PartitionPairs::exchange(int b, Side side, std::size_t t, const Destination& destination) {
  std::vector<p2p::PeerCopy> copies;
  const Widths w = key_pass_widths(side);
  Round& round = rounds_[static_cast<int>(side)][t];
  router_.for_each_partitioned(b, [&](int j, exec::ChunkSlot& slot, const std::uint64_t* seg) {
    round.chunks[j].landed = seg[g_];
    for (int d = 0; d < g_; ++d) {
      const auto rows = static_cast<std::int64_t>(seg[d + 1] - seg[d]);
      if (rows == 0) continue;
      Partition& p = destination(d);
      if (p.rows + rows > p.capacity)
        throw PlanMissed(std::string("partition ") + std::to_string(d) + " of " + (side == Side::R ? "R" : "S") +
                         " outgrew the " + std::to_string(p.capacity) + " rows its sample planned");
      copies.push_back({j, d, row_at(slot.out_keys.data(), static_cast<std::int64_t>(seg[d]), w.key_bytes),
                        row_at(p.keys.data(), p.rows, w.key_bytes), static_cast<std::size_t>(rows) * w.key_bytes});
      if (w.payload_bytes)
        copies.push_back({j, d, row_at(slot.out_payload.data(), static_cast<std::int64_t>(seg[d]), w.payload_bytes),
                          row_at(p.payload.data(), p.rows, w.payload_bytes), static_cast<std::size_t>(rows) * w.payload_bytes});
      if (plan_.late) round.segments.push_back({j, d, static_cast<std::int64_t>(seg[d]), p.rows, rows});
      p.rows += rows;
      if (j != d) bytes_nvlink_ += static_cast<std::uint64_t>(rows) * (w.key_bytes + w.payload_bytes);
    }
    if (plan_.partitions.gpus > g_) spill(j, slot, seg, side, copies);
  });
  exchange_.send(router_.slots(b), copies);
}

// The spill segment (its keys already in the input's form: the partition kernel writes them so) goes out
// with the GPU's own segments: a copy from GPU j to itself whose destination is pinned host memory.
void PartitionPairs::spill(int j, exec::ChunkSlot& slot, const std::uint64_t* seg, Side side,
                           std::vector<p2p::PeerCopy>& copies) {
  const auto rows = static_cast<std::int64_t>(seg[g_ + 1] - seg[g_]);
  if (rows == 0 || !ctx_.spill) return;  // no sink: the passes after read X whole
  const auto [keys, payload] = ctx_.spill->append(0, rows, side == Side::R ? "R (the first pass's spill)" : "S (the first pass's spill)");
  const Widths w = key_pass_widths(side);
  copies.push_back({j, j, row_at(slot.out_keys.data(), static_cast<std::int64_t>(seg[g_]), w.key_bytes), keys,
                    static_cast<std::size_t>(rows) * w.key_bytes});
  if (w.payload_bytes)
    copies.push_back({j, j, row_at(slot.out_payload.data(), static_cast<std::int64_t>(seg[g_]), w.payload_bytes), payload,
                      static_cast<std::size_t>(rows) * w.payload_bytes});
  bytes_spilled_ += static_cast<std::uint64_t>(rows) * (w.key_bytes + w.payload_bytes);
}

void PartitionPairs::wait_inbound(int d, cudaStream_t waiter, bool with_h2d) {
  const exec::Lane& lane = lanes_[d];
  std::vector<const gpu::Stream*> inbound{&lane.xchg};
  if (with_h2d) inbound.push_back(&lane.h2d);
  for (const auto& from : lane.from) inbound.push_back(&from);
  for (const gpu::Stream* s : inbound) {
    if (s->get() == waiter) continue;  // in order on itself
    exec::follow(lane.device, *s, waiter);
  }
}

void PartitionPairs::sort_partitions(Side side, bool timed, bool count_runs) {
  if (std::exchange(sorts_issued_[static_cast<int>(side)], true)) return;
  for (int d = 0; d < g_; ++d) {
    PairGpu& gpu = gpus_[d];
    const cudaStream_t work = lanes_[d].work;
    gpu::DeviceGuard guard(gpu.device);
    if (g_ > 1) wait_inbound(d, work);
    Partition& p = gpu.partition[static_cast<int>(side)];
    if (!p.positions.empty())
      fill_positions(reinterpret_cast<std::uint32_t*>(p.positions.data()), static_cast<std::uint64_t>(p.rows), work);
    if (count_runs) gpu.counter.zero(work);
    for (int i = gpu.runs_sorted[static_cast<int>(side)]; i < runs(side); ++i) {
      const SortedRows run = run_of(p, side, i);
      if (g_ == 1) wait_run(d, side, i, run);
      const bool last = i + 1 == runs(side);
      if (timed && last) gpu.tail_begin.record(work);
      sort_rows(d, side, p, run.first, run.rows, gpu.alt_keys, gpu.alt_payload, gpu.sort_temp);
      if (timed && last) gpu.sorted.record(work);
      if (count_runs) count_run_of_s(d, run, last);
    }
  }
}

// The keys came as they are.
void PartitionPairs::wait_run(int d, Side side, int i, const SortedRows& run) {
  PairGpu& gpu = gpus_[d];
  const cudaStream_t work = lanes_[d].work;
  MGJOIN_CUDA_TRY(cudaStreamWaitEvent(work, gpu.run_in[static_cast<int>(side)][i], 0));
  exec::flip_keys(widths(side).key_bytes,
                  row_at(gpu.partition[static_cast<int>(side)].keys.data(), run.first, widths(side).key_bytes), run.rows,
                  key_xor_, work, exec::kCopartFlipBlocks);
}

// The last run's joins are the in-core tail's join.
void PartitionPairs::count_run_of_s(int d, const SortedRows& s_run, bool last) {
  PairGpu& gpu = gpus_[d];
  const cudaStream_t work = lanes_[d].work;
  if (last) gpu.join_begin.record(work);
  for (int i = 0; i < runs(Side::R); ++i) {
    const SortedRows r_run = run_of(gpu.partition[static_cast<int>(Side::R)], Side::R, i);
    const ResidentPair pair = x_side() == Side::R ? pair_of(r_run, s_run) : pair_of(s_run, r_run);
    if (r_run.rows && s_run.rows) resident_join(pair, gpu.counter.get(), {}, gpu.join_scratch.data(), work);
  }
  if (last) gpu.joined.record(work);
}

void PartitionPairs::wait_transfer() {
  for (const exec::Lane& lane : lanes_) {
    gpu::DeviceGuard guard(lane.device);
    for (auto& st : {&lane.h2d, &lane.part, &lane.xchg}) st->synchronize();
    for (auto& from : lane.from) from.synchronize();
  }
}

void PartitionPairs::release_transfer_buffers(bool keep_slots) {
  for (int d = 0; d < g_; ++d) {
    PairGpu& gpu = gpus_[d];
    gpu::DeviceGuard guard(gpu.device);
    lanes_[d].work.synchronize();
    if (!keep_slots) router_.free_slots(d);
    free_sort_buffers(d);
  }
}

void PartitionPairs::sort_rows(int d, Side side, Partition& p, std::int64_t first, std::int64_t rows,
                               DeviceBuffer& alt_keys, DeviceBuffer& alt_payload, DeviceBuffer& temp) {
  if (rows == 0) return;
  const cudaStream_t work = lanes_[d].work;
  const sort::TupleLayout l = layout(side);
  std::byte* keys = row_at(p.keys.data(), first, l.key_bytes);
  std::byte* payload =
      l.payload_bytes == 0 ? nullptr : row_at((plan_.late ? p.positions : p.payload).data(), first, l.payload_bytes);
  void* alt = l.payload_bytes ? alt_payload.data() : nullptr;
  const sort::SortedIn where = sort::local_sort(l, keys, alt_keys.data(), payload, alt, rows, 0, l.key_bytes * 8,
                                                temp.data(), temp.size(), work);
  if (where == sort::SortedIn::Alternate) sort::copy_tuples(l, keys, payload, alt_keys.data(), alt, rows, work);
}

SortedRows PartitionPairs::run_of(const Partition& p, Side side, int i) const {
  const std::int64_t per = run_capacity(g_ > 1 ? p.capacity : p.rows, runs(side));
  const std::int64_t first = std::min(p.rows, i * per);
  return {&p, first, std::min(per, p.rows - first)};
}

SortedRows PartitionPairs::whole(int d, Side side) const {
  const Partition& p = gpus_[d].partition[static_cast<int>(side)];
  return {&p, 0, p.rows};
}

ResidentPair PartitionPairs::pair_of(const SortedRows& x, const SortedRows& y) const {
  const int kb = plan_.r.key_bytes;
  return {kb, row_at(x.p->keys.data(), x.first, kb), static_cast<std::uint64_t>(x.rows), row_at(y.p->keys.data(), y.first, kb),
          static_cast<std::uint64_t>(y.rows)};
}

OutputWindowArgs PartitionPairs::window_args(const SortedRows& x, const SortedRows& y,
                                             const exec::OutputArrays& arrays) const {
  const Side xs = x_side();
  // Late payloads stay in arrival order: the rows' positions (sorted with the keys) say where each is.
  const auto positions = [](const SortedRows& rows) {
    return rows.p->positions.empty() ? nullptr : reinterpret_cast<const std::uint32_t*>(rows.p->positions.data()) + rows.first;
  };
  const auto payload = [&](const SortedRows& rows, Side side) -> const void* {
    const int bytes = widths(side).payload_bytes;
    return bytes == 0 ? nullptr : plan_.late ? rows.p->payload.data() : row_at(rows.p->payload.data(), rows.first, bytes);
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

// The key column holds the probe side's keys; the late payloads' columns wait for their arrival.
void PartitionPairs::write_output(int d, exec::OutputWindows& windows, const OutputWindowArgs& common,
                                  std::uint64_t base, std::uint64_t total, exec::OutputColumns& out,
                                  std::array<const gpu::Event*, 2> ready) {
  using Part = exec::WindowColumn::Part;
  JoinResult& result = out.result();
  std::vector<exec::WindowColumn> columns{{&result.key, plan_.r.key_bytes, Part::Key, nullptr, out.sink()}};
  if (plan_.r.payload_bytes)
    columns.push_back({&result.r_payload, plan_.r.payload_bytes, Part::RPayload, ready[0], out.sink()});
  if (plan_.s.payload_bytes)
    columns.push_back({&result.s_payload, plan_.s.payload_bytes, Part::SPayload, ready[1], out.sink()});
  const PairGpu& gpu = gpus_[d];
  const exec::Lane& lane = lanes_[d];
  const exec::WindowGpu target{gpu.device, gpu.memory, gpu.pinned, lane.work, lane.out, lane.d2h};
  exec::write_windows(windows, target, plan_.window_rows, columns, common, base, total);
}

}  // namespace mgjoin::copart
