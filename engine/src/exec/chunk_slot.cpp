#include "engine/src/exec/chunk_slot.hpp"

#include "engine/src/exec/rows.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>

namespace mgjoin::exec {

ChunkSlot::ChunkSlot(int device, alloc::DeviceStackAllocator& memory, alloc::PinnedStackAllocator& pinned,
                     std::int64_t chunk_rows, const Widths& r, const Widths& s, const std::array<int, 2>& most_copies,
                     int destinations) {
  const auto chunk = static_cast<std::size_t>(chunk_rows);
  const auto key_bytes = static_cast<std::size_t>(std::max(r.key_bytes, s.key_bytes));
  const auto payload_bytes = static_cast<std::size_t>(std::max(r.payload_bytes, s.payload_bytes));
  const auto copies = static_cast<std::size_t>(std::max(most_copies[0], most_copies[1]));
  in_keys = DeviceBuffer(memory, chunk * key_bytes);
  if (payload_bytes) in_payload = DeviceBuffer(memory, chunk * payload_bytes);
  out_keys = DeviceBuffer(memory, chunk * copies * key_bytes);
  if (payload_bytes) out_payload = DeviceBuffer(memory, chunk * copies * payload_bytes);
  scratch = DeviceBuffer(memory, std::max<std::size_t>(1, copart::partition_scratch_bytes(chunk_rows, destinations)));
  segments = DeviceBuffer(memory, (destinations + 1) * sizeof(std::uint64_t));
  segments_host = PinnedBuffer(pinned, (destinations + 1) * sizeof(std::uint64_t));
  h2d_done = gpu::Event(device, false);
  part_done = gpu::Event(device, false);
}

std::uint64_t copy_rows_in(void* keys, void* payload, const RelationView& rel, const Widths& w, std::int64_t first,
                           std::int64_t n, cudaStream_t stream, InputStaging* staging) {
  if (n == 0) return 0;
  copy_input(staging, keys, row_at(rel.key.data, first, w.key_bytes), n * w.key_bytes, stream);
  if (w.payload_bytes)
    copy_input(staging, payload, row_at(rel.payload->data, first, w.payload_bytes), n * w.payload_bytes, stream);
  return static_cast<std::uint64_t>(n) * (w.key_bytes + w.payload_bytes);
}

std::uint64_t ChunkSlot::copy_in(const RelationView& rel, const Widths& w, std::int64_t first, std::int64_t n,
                                 cudaStream_t h2d, InputStaging* staging) {
  const std::uint64_t bytes = copy_rows_in(in_keys.data(), in_payload.data(), rel, w, first, n, h2d, staging);
  h2d_done.record(h2d);
  return bytes;
}

PartitionArgs partition_args(const Widths& w, Side side, std::uint64_t key_xor, const void* keys, const void* payload,
                             std::int64_t n, std::uint64_t first_row, void* keys_out, void* payload_out,
                             std::uint64_t* segments, void* scratch, std::size_t scratch_bytes) {
  PartitionArgs args;
  args.widths = w;
  args.side = side;
  args.key_xor = key_xor;
  args.keys = keys;
  args.payload = w.payload_bytes ? payload : nullptr;
  args.n = n;
  args.first_row = first_row;
  args.keys_out = keys_out;
  args.payload_out = w.payload_bytes ? payload_out : nullptr;
  args.segments = segments;
  args.scratch = scratch;
  args.scratch_bytes = scratch_bytes;
  return args;
}

PartitionArgs ChunkSlot::partition_args(const Widths& w, Side side, std::uint64_t key_xor, std::int64_t first) const {
  return exec::partition_args(w, side, key_xor, in_keys.data(), in_payload.data(), rows, static_cast<std::uint64_t>(first),
                              out_keys.data(), out_payload.data(), reinterpret_cast<std::uint64_t*>(segments.data()),
                              scratch.data(), scratch.size());
}

void partition_and_read_bounds(const PartitionPlan& plan, const PartitionArgs& args, std::uint64_t* segments_host,
                               cudaStream_t stream) {
  copart::partition_chunk(plan, args, stream);
  MGJOIN_CUDA_TRY(cudaMemcpyAsync(segments_host, args.segments, (plan.gpus + 1) * sizeof(std::uint64_t),
                                  cudaMemcpyDeviceToHost, stream));
}

void ChunkSlot::partition(const PartitionPlan& plan, const PartitionArgs& args, cudaStream_t part) {
  partition_and_read_bounds(plan, args, reinterpret_cast<std::uint64_t*>(segments_host.data()), part);
  part_done.record(part);
}

}  // namespace mgjoin::exec
