#pragma once
// Pass 1 of the bucketed variant (bucket_plan.hpp draws it): both relations through the GPUs into the
// buckets. On each GPU, two chunk slots of the chunk router (exec/chunk_router.hpp); chunk c of a
// relation goes to GPU c % g. While chunk t is partitioned by the group splitters (keys in the ordered
// form, turned back on the way out), chunk t + 1 crosses in and chunk t - 1's segments cross out into
// their groups' buckets: PCIe carries both directions at once. One host thread drives every GPU; it
// blocks only to read a chunk's segment sizes, which address the copies out and are checked against
// the buckets' bounds.
//
// Resident groups (hybrid) take their device buffers from each GPU's stack before pass 1's slots, so
// they stay when the slots go. A chunk's segment of resident group k crosses to GPU k (a device copy,
// over NVLink from another GPU) on the D2H stream, in order with the host buckets' copies.
#include "alloc/stack_buffer.hpp"
#include "engine/src/copart/bucket_plan.hpp"
#include "engine/src/exec/chunk_router.hpp"
#include "engine/src/exec/lanes.hpp"
#include "engine/src/exec/rows.hpp"
#include "engine/src/flows/copart/copart_flow.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/types.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mgjoin::copart {

/// One side's pinned buckets: one region per group, each as long as the group's bound.
class Buckets {
 public:
  Buckets(const RelationView& rel, const Widths& w, const std::vector<std::int64_t>& bound)
      : rel_(rel), w_(w), bound_(bound), filled_(bound.size(), 0) {
    std::int64_t rows = 0;
    for (const std::int64_t b : bound) {
      first_.push_back(rows);
      rows += b;
    }
    keys_ = HostColumn::allocate(rel.key.type, rows, MemoryKind::Pinned);
    if (w.payload_bytes) payload_ = HostColumn::allocate(rel.payload->type, rows, MemoryKind::Pinned);
  }

  /// Where `rows` more rows of group q go: key and payload destinations (payload nullptr when none).
  /// @throw PlanMissed when they pass the group's bound.
  std::pair<std::byte*, std::byte*> append(int q, std::int64_t rows, const char* side) {
    if (filled_[q] + rows > bound_[q])
      throw PlanMissed(std::string("bucket group ") + std::to_string(q) + " of " + side + " outgrew the " +
                       std::to_string(bound_[q]) + " rows its sample planned");
    const std::int64_t row = first_[q] + filled_[q];
    filled_[q] += rows;
    return {exec::row_at(keys_.as<std::byte>(), row, w_.key_bytes),
            w_.payload_bytes ? exec::row_at(payload_.as<std::byte>(), row, w_.payload_bytes) : nullptr};
  }

  /// Group q's rows as a relation of the input's types.
  RelationView group(int q) {
    RelationView v{{exec::row_at(keys_.as<std::byte>(), first_[q], w_.key_bytes), filled_[q], rel_.key.type}, std::nullopt};
    if (w_.payload_bytes)
      v.payload = MutableColumnView{exec::row_at(payload_.as<std::byte>(), first_[q], w_.payload_bytes), filled_[q], rel_.payload->type};
    return v;
  }

  std::int64_t rows(int q) const { return filled_[q]; }

 private:
  const RelationView& rel_;
  Widths w_;
  std::vector<std::int64_t> bound_, filled_, first_;
  HostColumn keys_, payload_;
};

using DeviceBuffer = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;

/// The resident groups: group host_groups() + k of each side in GPU k's memory, as long as its bound.
class Resident {
 public:
  Resident(const BucketPlan& plan, const CopartContext& ctx, const RelationView& r, const RelationView& s)
      : host_groups_(plan.host_groups()), rel_{r, s}, w_{plan.r, plan.s} {
    MGJOIN_EXPECTS(plan.resident == 0 || plan.resident == static_cast<int>(ctx.devices.size()),
                   "one resident group per GPU");
    for (int k = 0; k < plan.resident; ++k) {
      GpuPart& gpu = gpus_.emplace_back();
      gpu.context = {ctx.devices.subspan(k, 1), ctx.device_memory.subspan(k, 1), ctx.pinned.subspan(k, 1), ctx.exchange,
                     ctx.comms};
      if (!ctx.staging.empty()) gpu.context.staging = ctx.staging.subspan(k, 1);
      for (int side = 0; side < 2; ++side) {
        Part& part = gpu.side[side];
        part.bound = plan.sizes.bound[side][host_groups_ + k];
        const Widths& w = w_[side];
        if (part.bound == 0) continue;
        part.keys = DeviceBuffer(*ctx.device_memory[k], static_cast<std::size_t>(part.bound) * w.key_bytes);
        if (w.payload_bytes)
          part.payload = DeviceBuffer(*ctx.device_memory[k], static_cast<std::size_t>(part.bound) * w.payload_bytes);
      }
    }
  }

  int gpus() const { return static_cast<int>(gpus_.size()); }
  int device(int k) const { return gpus_[k].context.devices[0]; }
  /// GPU k's stacks alone: its group's one-GPU flow runs on them.
  const CopartContext& context(int k) const { return gpus_[k].context; }

  /// Where `rows` more rows of `side` go on GPU k: key and payload destinations (payload nullptr when none).
  /// @throw PlanMissed when they pass the group's bound.
  std::pair<std::byte*, std::byte*> append(int k, Side side, std::int64_t rows) {
    Part& part = gpus_[k].side[static_cast<int>(side)];
    if (part.filled + rows > part.bound)
      throw PlanMissed("resident group " + std::to_string(host_groups_ + k) + " of " + (side == Side::R ? "R" : "S") +
                       " outgrew the " + std::to_string(part.bound) + " rows its sample planned");
    const Widths& w = w_[static_cast<int>(side)];
    const std::int64_t row = part.filled;
    part.filled += rows;
    return {exec::row_at(part.keys.data(), row, w.key_bytes), w.payload_bytes ? exec::row_at(part.payload.data(), row, w.payload_bytes) : nullptr};
  }

  /// GPU k's rows of `side` as a relation of the input's types, in device memory.
  RelationView group(int k, Side side) const {
    const Part& part = gpus_[k].side[static_cast<int>(side)];
    const RelationView& rel = rel_[static_cast<int>(side)];
    RelationView v{{part.keys.data(), part.filled, rel.key.type}, std::nullopt};
    if (w_[static_cast<int>(side)].payload_bytes) v.payload = MutableColumnView{part.payload.data(), part.filled, rel.payload->type};
    return v;
  }

  std::int64_t rows(int k, Side side) const { return gpus_[k].side[static_cast<int>(side)].filled; }

 private:
  struct Part {
    std::int64_t bound = 0, filled = 0;
    DeviceBuffer keys, payload;  // (payload freed first: the stack takes any order, but so it is LIFO)
  };
  struct GpuPart {
    CopartContext context;  ///< GPU k alone
    std::array<Part, 2> side;
  };
  int host_groups_;
  std::array<RelationView, 2> rel_;
  std::array<Widths, 2> w_;
  std::deque<GpuPart> gpus_;
};

/// Pass 1: both relations through the GPUs into the buckets and the resident groups.
class Pass1 {
 public:
  Pass1(const BucketPlan& plan, const CopartContext& ctx, std::uint64_t key_xor, Resident& resident);
  // Copies may still be in flight when an error unwinds: wait for them before any buffer goes back.
  ~Pass1();
  Pass1(const Pass1&) = delete;
  Pass1& operator=(const Pass1&) = delete;

  /// Partitions `rel` (side `side`) into `buckets`, chunk by chunk on every GPU.
  void run(const RelationView& rel, Side side, Buckets& buckets);

  std::uint64_t bytes_in() const { return bytes_in_; }
  std::uint64_t bytes_out() const { return bytes_out_; }
  /// Resident rows' bytes copied to another GPU than the one that partitioned them.
  std::uint64_t bytes_nvlink() const { return bytes_nvlink_; }

 private:
  /// Once the slot's chunk is partitioned: its keys back to the input's form, and each group's segment
  /// D2H into its bucket (or to its resident group's GPU).
  void drain(int j, exec::ChunkSlot& slot, const std::uint64_t* seg, Side side, const Widths& w, Buckets& buckets);

  const BucketPlan& plan_;
  std::uint64_t key_xor_;
  Resident& resident_;
  exec::Lanes lanes_;
  exec::ChunkRouter router_;
  std::uint64_t bytes_in_ = 0, bytes_out_ = 0, bytes_nvlink_ = 0;
};

}  // namespace mgjoin::copart
