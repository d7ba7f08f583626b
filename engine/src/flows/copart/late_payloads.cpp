// Late payloads (late_payloads.hpp).
#include "engine/src/flows/copart/late_payloads.hpp"

#include "engine/src/exec/rows.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>

namespace mgjoin::copart {

using exec::row_at;

LatePayloads::LatePayloads(PartitionPairs& pairs) : pairs_(pairs), payloads_in_(pairs.gpus()) {
  for (int d = 0; d < pairs.gpus(); ++d)
    for (auto& e : payloads_in_[d]) e = gpu::Event(pairs.gpu(d).device);
}

void LatePayloads::send(Side side) {
  if (!pairs_.plan().late || pairs_.widths(side).payload_bytes == 0) return;
  if (pairs_.gpus() == 1)
    send_whole(side);
  else
    send_rounds(side);
  // Recorded on xchg, idle by now (the NCCL exchange of the payloads ran on it, in order).
  for (int d = 0; d < pairs_.gpus(); ++d) {
    const exec::Lane& lane = pairs_.lanes()[d];
    gpu::DeviceGuard guard(lane.device);
    pairs_.wait_inbound(d, lane.xchg);
    payloads_in_[d][static_cast<int>(side)].record(lane.xchg);
  }
}

double LatePayloads::seconds() const {
  float worst = 0;
  for (int d = 0; d < pairs_.gpus(); ++d)
    for (const Side side : {Side::R, Side::S})
      if (pairs_.widths(side).payload_bytes)
        worst = std::max(worst, payloads_in_[d][static_cast<int>(side)].elapsed_ms_since(pairs_.gpu(d).tail_begin));
  return worst / 1e3;
}

void LatePayloads::send_whole(Side side) {
  const PairGpu& gpu = pairs_.gpu(0);
  gpu::DeviceGuard guard(gpu.device);
  const std::int64_t n = pairs_.relation(side).size();
  const int pb = pairs_.widths(side).payload_bytes;
  const exec::Lane& lane = pairs_.lanes()[0];
  exec::copy_input(lane.staging, gpu.partition[static_cast<int>(side)].payload.data(), pairs_.host_payload(side), n * pb, lane.h2d);
  pairs_.add_bytes(static_cast<std::uint64_t>(n) * pb, 0);
}

void LatePayloads::send_rounds(Side side) {
  const std::vector<Round>& rounds = pairs_.rounds(side);
  pairs_.router().run_rounds(
      static_cast<std::int64_t>(rounds.size()), exec::kNoStep,
      [&](int b, std::int64_t t) {
        for (int j = 0; j < pairs_.gpus(); ++j) start_chunk(j, b, side, rounds[t].chunks[j]);
      },
      [&](int b, std::int64_t t) { send_segments(b, side, rounds[t]); });
}

void LatePayloads::start_chunk(int j, int b, Side side, const LandedChunk& chunk) {
  exec::ChunkSlot& slot = pairs_.router().slot(j, b);
  slot.rows = chunk.rows;
  if (chunk.rows == 0) return;
  const PairGpu& gpu = pairs_.gpu(j);
  const exec::Lane& lane = pairs_.lanes()[j];
  gpu::DeviceGuard guard(gpu.device);
  const int pb = pairs_.widths(side).payload_bytes;
  MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane.h2d, slot.part_done, 0));
  exec::copy_input(lane.staging, slot.in_payload.data(), row_at(pairs_.host_payload(side), chunk.first, pb), chunk.rows * pb,
                   lane.h2d);
  slot.h2d_done.record(lane.h2d);
  pairs_.add_bytes(static_cast<std::uint64_t>(chunk.rows) * pb, 0);
  MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane.part, slot.h2d_done, 0));
  if (slot.released_recorded)
    for (auto& e : slot.released) MGJOIN_CUDA_TRY(cudaStreamWaitEvent(lane.part, e, 0));
  const auto* map = reinterpret_cast<const std::uint32_t*>(gpu.maps[static_cast<int>(side)].data()) + chunk.map_row;
  gather_rows(slot.in_payload.data(), map, chunk.landed, pb, slot.out_payload.data(), lane.part);
  slot.part_done.record(lane.part);
}

void LatePayloads::send_segments(int b, Side side, const Round& round) {
  const int pb = pairs_.widths(side).payload_bytes;
  std::vector<p2p::PeerCopy> copies;
  std::uint64_t nvlink = 0;
  for (const SegmentCopy& c : round.segments) {
    copies.push_back({c.from, c.to, row_at(pairs_.router().slot(c.from, b).out_payload.data(), c.from_row, pb),
                      row_at(pairs_.gpu(c.to).partition[static_cast<int>(side)].payload.data(), c.to_row, pb),
                      static_cast<std::size_t>(c.rows) * pb});
    if (c.from != c.to) nvlink += static_cast<std::uint64_t>(c.rows) * pb;
  }
  pairs_.add_bytes(0, nvlink);
  pairs_.peers().send(pairs_.router().slots(b), copies);
}

}  // namespace mgjoin::copart
