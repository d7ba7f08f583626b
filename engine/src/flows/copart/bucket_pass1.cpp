// Pass 1 of the bucketed variant (bucket_pass1.hpp).
#include "engine/src/flows/copart/bucket_pass1.hpp"

#include "engine/src/exec/key_order.hpp"
#include "core/cancel.hpp"
#include "core/device.hpp"

namespace mgjoin::copart {

Pass1::Pass1(const BucketPlan& plan, const CopartContext& ctx, std::uint64_t key_xor, Resident& resident)
    : plan_(plan), key_xor_(key_xor), resident_(resident), lanes_(ctx.devices, {.h2d = true, .part = true, .d2h = true}, ctx.staging),
      // A slot's input is free once drain() waited for its partition on the host.
      router_(lanes_, /*wait_input_on_device=*/false) {
  for (std::size_t d = 0; d < ctx.devices.size(); ++d) {
    const int device = ctx.devices[d];
    router_.make_slots(static_cast<int>(d), *ctx.device_memory[d], *ctx.pinned[d], plan.chunk_rows, plan.r, plan.s,
                       plan.sizes.max_copies, plan.groups.gpus, {&device, 1});
  }
}

Pass1::~Pass1() {
  for (const exec::Lane& lane : lanes_) {
    gpu::DeviceGuard guard(lane.device);
    cudaDeviceSynchronize();
  }
}

void Pass1::run(const RelationView& rel, Side side, Buckets& buckets) {
  const Widths& w = side == Side::R ? plan_.r : plan_.s;
  const int g = lanes_.gpus();
  const exec::RoundCut cut{rel.size(), plan_.chunk_rows, g};
  router_.restart_slots();  // each relation's chunk t takes slot t % 2
  router_.run_rounds(
      cut.rounds(), [](std::int64_t) { mgjoin::detail::throw_if_cancelled(); },
      [&](int b, std::int64_t t) {
        for (int j = 0; j < g; ++j)
          bytes_in_ += router_.start_chunk(j, b, rel, w, side, key_xor_, cut.first(t, j), cut.rows_of(t, j), plan_.groups);
      },
      [&](int b, std::int64_t) {
        router_.for_each_partitioned(b, [&](int j, exec::ChunkSlot& slot, const std::uint64_t* seg) {
          drain(j, slot, seg, side, w, buckets);
        });
      });
  for (const exec::Lane& lane : lanes_) lane.d2h.synchronize();
}

void Pass1::drain(int j, exec::ChunkSlot& slot, const std::uint64_t* seg, Side side, const Widths& w, Buckets& buckets) {
  const exec::Lane& lane = lanes_[j];
  gpu::DeviceGuard guard(lane.device);
  const int groups = plan_.groups.gpus;
  // On the D2H stream, in order before the copies: the partition stream has the next chunk's work.
  exec::flip_keys(w.key_bytes, slot.out_keys.data(), static_cast<std::int64_t>(seg[groups]), key_xor_, lane.d2h,
                  exec::kCopartFlipBlocks);
  for (int q = 0; q < groups; ++q) {
    const auto rows = static_cast<std::int64_t>(seg[q + 1] - seg[q]);
    if (rows == 0) continue;
    const std::byte* keys_from = exec::row_at(slot.out_keys.data(), static_cast<std::int64_t>(seg[q]), w.key_bytes);
    const std::byte* payload_from = exec::row_at(slot.out_payload.data(), static_cast<std::int64_t>(seg[q]), w.payload_bytes);
    const std::uint64_t bytes = static_cast<std::uint64_t>(rows) * (w.key_bytes + w.payload_bytes);
    if (const int k = plan_.resident_gpu(q); k >= 0) {  // stays on the GPUs: to GPU k
      const auto [keys, payload] = resident_.append(k, side, rows);
      const int to = resident_.device(k);
      MGJOIN_CUDA_TRY(cudaMemcpyPeerAsync(keys, to, keys_from, lane.device, rows * w.key_bytes, lane.d2h));
      if (payload) MGJOIN_CUDA_TRY(cudaMemcpyPeerAsync(payload, to, payload_from, lane.device, rows * w.payload_bytes, lane.d2h));
      if (to != lane.device) bytes_nvlink_ += bytes;
      continue;
    }
    const auto [keys, payload] = buckets.append(q, rows, side == Side::R ? "R" : "S");
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(keys, keys_from, rows * w.key_bytes, cudaMemcpyDeviceToHost, lane.d2h));
    if (payload) MGJOIN_CUDA_TRY(cudaMemcpyAsync(payload, payload_from, rows * w.payload_bytes, cudaMemcpyDeviceToHost, lane.d2h));
    bytes_out_ += bytes;
  }
  slot.released[0].record(lane.d2h);
  slot.released_recorded = true;
}

}  // namespace mgjoin::copart
