// The co-partitioned flow across ranks on their GPUs (rank_gpus.hpp draws it).
#include "dist/rank_gpus.hpp"

#include "alloc/stack_buffer.hpp"
#include "core/device.hpp"
#include "engine/src/api/copart.hpp"
#include "engine/src/api/engine_resources.hpp"

#include <array>
#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

namespace mgjoin::dist::detail {
namespace {

using copart::Side;
using DeviceBuffer = alloc::StackBuffer<std::byte, alloc::DeviceStackAllocator>;

bool all_ranks(const Comm& c, bool mine) {
  int v = mine ? 1 : 0, all = 0;
  MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, c.comm);
  return all == 1;
}

bool key_or_payload_width(std::size_t bytes) { return bytes == 4 || bytes == 8; }

/// What crosses for one relation: its key, and its payload when the join materializes.
copart::Widths widths_of(const RelationView& rel, OutputMode output) {
  return {static_cast<int>(dtype_size(rel.key.type)),
          output == OutputMode::Materialize && rel.payload ? static_cast<int>(dtype_size(rel.payload->type)) : 0};
}

/// The rows of one relation this rank receives, on its GPU, in the relation's own types.
struct Received {
  DeviceBuffer keys, payload;
  std::int64_t bound = 0;  ///< rows the buffers hold (the plan's bound for this rank)
  std::int64_t rows = 0;   ///< rows received

  Received(alloc::DeviceStackAllocator& memory, std::int64_t bound_rows, const copart::Widths& w) : bound(bound_rows) {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(bound_rows, 1));
    keys = DeviceBuffer(memory, n * static_cast<std::size_t>(w.key_bytes));
    if (w.payload_bytes) payload = DeviceBuffer(memory, n * static_cast<std::size_t>(w.payload_bytes));
  }

  RelationView view(const RelationView& like) const {
    RelationView v{{keys.data(), rows, like.key.type}, std::nullopt};
    if (!payload.empty()) v.payload = MutableColumnView{payload.data(), rows, like.payload->type};
    return v;
  }
};

/// One relation's slice on this rank's GPU, copied there on its own stream.
struct Slice {
  DeviceBuffer keys, payload;
  gpu::Stream stream;
  std::int64_t rows = 0;

  Slice(alloc::DeviceStackAllocator& memory, int device, const RelationView& rel, const copart::Widths& w)
      : stream(device), rows(rel.size()) {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(rows, 1));
    keys = DeviceBuffer(memory, n * static_cast<std::size_t>(w.key_bytes));
    if (w.payload_bytes) payload = DeviceBuffer(memory, n * static_cast<std::size_t>(w.payload_bytes));
  }

  /// Issues the slice's H2D (the chunk router's step, on this path's own buffers).
  void copy_in(const RelationView& rel, const copart::Widths& w) {
    exec::copy_rows_in(keys.data(), payload.data(), rel, w, 0, rows, stream);
  }
};

/// One relation's slice partitioned by destination rank (hot-key copies included).
struct Outgoing {
  DeviceBuffer keys, payload, scratch, segments;
  std::vector<std::int64_t> rows;  ///< per destination rank

  Outgoing(alloc::DeviceStackAllocator& memory, std::int64_t slice_rows, const copart::Widths& w, int copies, int ranks) {
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(slice_rows, 1)) * static_cast<std::size_t>(copies);
    keys = DeviceBuffer(memory, n * static_cast<std::size_t>(w.key_bytes));
    if (w.payload_bytes) payload = DeviceBuffer(memory, n * static_cast<std::size_t>(w.payload_bytes));
    scratch = DeviceBuffer(memory, std::max<std::size_t>(1, copart::partition_scratch_bytes(std::max<std::int64_t>(slice_rows, 1), ranks)));
    segments = DeviceBuffer(memory, static_cast<std::size_t>(ranks + 1) * sizeof(std::uint64_t));
  }

  /// Partitions `in` by `plan` on its stream (after its H2D) and reads each destination's rows.
  void partition(const copart::PartitionPlan& plan, Slice& in, const copart::Widths& w, Side side, std::uint64_t key_xor,
                 std::int64_t first_row) {
    rows.assign(static_cast<std::size_t>(plan.gpus), 0);
    if (in.rows == 0) return;
    const copart::PartitionArgs a = exec::partition_args(
        w, side, key_xor, in.keys.data(), in.payload.data(), in.rows, static_cast<std::uint64_t>(first_row), keys.data(),
        payload.data(), reinterpret_cast<std::uint64_t*>(segments.data()), scratch.data(), scratch.size());
    std::vector<std::uint64_t> seg(static_cast<std::size_t>(plan.gpus) + 1);
    exec::partition_and_read_bounds(plan, a, seg.data(), in.stream);
    in.stream.synchronize();
    for (std::size_t d = 0; d < rows.size(); ++d) rows[d] = static_cast<std::int64_t>(seg[d + 1] - seg[d]);
  }
};

/// Frees buffers taken from one stack in reverse order, so that the stack gets them back at once.
template <class T>
void release(std::vector<T>& buffers) {
  while (!buffers.empty()) buffers.pop_back();
}

/// Test hook (MGJOIN_TEST_RANK_GPUS_DECLINE="<rank>:<step>"): that rank finds its GPU too small at
/// `step` (take: the buffers before any rows move; plan: the local join's plan after the exchange), as
/// one whose memory ran short would, so that every rank's turn to the host route can be tested.
bool test_declines(int rank, const char* step) {
  const char* spec = std::getenv("MGJOIN_TEST_RANK_GPUS_DECLINE");
  return spec && std::string(spec) == std::to_string(rank) + ":" + step;
}

/// Test hook (MGJOIN_TEST_KILL_RANK="<rank>:nccl", beside the CLI's own steps): that rank ends itself
/// with SIGKILL just before the rows go GPU to GPU, as a rank lost mid-join would; the others are then
/// waiting on it in NCCL, and the launcher must end the job.
void test_kill_point(int rank) {
  const char* spec = std::getenv("MGJOIN_TEST_KILL_RANK");
  if (spec && std::string(spec) == std::to_string(rank) + ":nccl") ::raise(SIGKILL);
}

std::string gpu_name(int device) { return "GPU " + std::to_string(device); }

/// The local join: the one-GPU co-partitioned flow on what arrived (one GPU's plan reads no keys). Its
/// inputs are in this GPU's memory: one GPU with payloads carried copies them in by copy_rows_in, whose
/// direction follows the pointers (late payloads or several GPUs would copy host to device). nullopt
/// where the GPU cannot hold its plan (the host route takes over).
std::optional<JoinResult> join_received(const Comm& c, mgjoin::Engine& local, alloc::DeviceStackAllocator& memory,
                                        int device, const std::array<RelationView, 2>& rel,
                                        const std::array<copart::Widths, 2>& w, std::vector<Received>& in,
                                        OutputMode output, StepClock& clock) {
  // The partition kernel left the keys in the ordered unsigned form; the local flow takes the user's.
  const gpu::Stream work(device);
  for (int side = 0; side < 2; ++side)
    if (in[side].rows > 0)
      exec::flip_keys(w[side].key_bytes, in[side].keys.data(), in[side].rows, exec::ordered_key_xor(rel[side].key.type), work,
                      exec::kCopartFlipBlocks);
  work.synchronize();
  const RelationView rv = in[0].view(rel[0]), sv = in[1].view(rel[1]);
  const copart::CopartPlan local_plan =
      copart::plan_copart(copart::one_gpu_sample(rv.size()), copart::one_gpu_sample(sv.size()), rv, sv, 1, output,
                          memory.available(), copart::device_scratch_sizes(), PayloadFlow::Carry);
  if (!local_plan.fits || test_declines(c.rank, "plan")) return std::nullopt;
  clock.mark("gpus.plan");
  const copart::CopartContext ctx =
      local.resources().copart_context(Exchange::CopyEngines, copart::pinned_bytes_needed(local_plan, output));
  JoinResult res;
  res.strategy = JoinStrategy::CoPartitioned;
  res.strategy_reason = "co-partitioned across " + std::to_string(c.size) + " ranks on their GPUs: " + local_plan.reason;
  res.executor = gpu_name(device) + " of rank " + std::to_string(c.rank) + " (co-partitioned across ranks, NCCL)";
  try {
    copart::run_copart(rv, sv, local_plan, output, ctx, res);
  } catch (const copart::PlanMissed&) {
    return std::nullopt;
  }
  return res;
}

}  // namespace

bool rank_gpus_can_join(const Comm& c, const RelationView& r, const RelationView& s, OutputMode output,
                        const mgjoin::Engine* local, const NcclRows* nccl) {
  bool mine = nccl && !nccl->aborted() && local && local->devices().size() == 1 && local->devices()[0] == nccl->device() &&
              key_or_payload_width(dtype_size(r.key.type));
  for (const RelationView* rel : {&r, &s})
    if (output == OutputMode::Materialize && rel->payload) mine = mine && key_or_payload_width(dtype_size(rel->payload->type));
  return all_ranks(c, mine);
}

struct RankGpuJoin::State {
  const NcclRows& nccl;
  mgjoin::Engine& local;
  std::array<RelationView, 2> rel;
  OutputMode output;
  std::array<copart::Widths, 2> w;
  std::vector<Slice> slices;  ///< R's, S's: at the bottom of the stack, dead once partitioned

  ~State() {
    for (Slice& slice : slices) cudaStreamSynchronize(slice.stream);  // (no throw: the copies end either way)
  }
  int device() const { return nccl.device(); }
  alloc::DeviceStackAllocator& memory() const { return *local.resources().device_stacks()[0]; }
};

RankGpuJoin::RankGpuJoin(std::unique_ptr<State> state) : state_(std::move(state)) {}
RankGpuJoin::~RankGpuJoin() = default;

std::unique_ptr<RankGpuJoin> RankGpuJoin::start(const Comm& c, const NcclRows& nccl, mgjoin::Engine& local,
                                                const RelationView& r, const RelationView& s, OutputMode output) {
  auto state = std::unique_ptr<State>(new State{nccl, local, {r, s}, output, {widths_of(r, output), widths_of(s, output)}, {}});
  const gpu::DeviceGuard guard(state->device());
  const bool taken = agreed(c, [&] {
    try {
      for (int side = 0; side < 2; ++side) state->slices.emplace_back(state->memory(), state->device(), state->rel[side], state->w[side]);
      for (int side = 0; side < 2; ++side) state->slices[side].copy_in(state->rel[side], state->w[side]);
      return true;
    } catch (const OutOfMemory&) {
      release(state->slices);
      return false;
    }
  });
  if (!all_ranks(c, taken)) return nullptr;
  return std::unique_ptr<RankGpuJoin>(new RankGpuJoin(std::move(state)));
}

std::optional<RankJoined> RankGpuJoin::finish(const Comm& c, const RankPlan& plan) {
  State& st = *state_;
  const int device = st.device();
  const gpu::DeviceGuard guard(device);
  const auto& w = st.w;
  const std::array<std::int64_t, 2> first{plan.r_first, plan.s_first};
  const copart::PartitionSizes sizes = copart::estimate_sizes(plan.partitions, plan.r_sample, plan.s_sample);
  const auto rank = static_cast<std::size_t>(c.rank);
  StepClock clock;  // this rank's steps, "ranks.gpus.<step>", before the local join's own phases

  // The rows this rank receives (the plan's bound for it), the partitioned slices above them: those go
  // once their rows have left, and the local join takes what they held.
  std::vector<Received> in;
  std::vector<Outgoing> out;
  const bool taken = agreed(c, [&] {
    try {
      for (int side = 0; side < 2; ++side) in.emplace_back(st.memory(), sizes.bound[side][rank], w[side]);
      for (int side = 0; side < 2; ++side)
        out.emplace_back(st.memory(), st.slices[side].rows, w[side], sizes.max_copies[side], c.size);
      if (test_declines(c.rank, "take")) throw OutOfMemory("MGJOIN_TEST_RANK_GPUS_DECLINE");
      return true;
    } catch (const OutOfMemory&) {
      release(out);
      release(in);
      return false;
    }
  });
  if (!all_ranks(c, taken)) return std::nullopt;
  clock.mark("gpus.take");

  agreed(c, [&] {
    for (int side = 0; side < 2; ++side)
      out[side].partition(plan.partitions, st.slices[side], w[side], static_cast<Side>(side),
                          exec::ordered_key_xor(st.rel[side].key.type), first[side]);
    return 0;
  });
  std::array<ExchangeLayout, 2> layout;
  for (int side = 0; side < 2; ++side) layout[side] = exchange_layout(c, out[side].rows);
  // A rank sent more than its bound only where the global sample misled: the host route has no bound.
  bool fits = true;
  for (int side = 0; side < 2; ++side) fits = fits && layout[side].received() <= in[side].bound;
  if (!all_ranks(c, fits)) return std::nullopt;
  clock.mark("gpus.partition");

  test_kill_point(c.rank);
  for (int side = 0; side < 2; ++side) {
    std::vector<NcclRows::DeviceColumn> columns{{out[side].keys.data(), in[side].keys.data(), w[side].key_bytes}};
    if (w[side].payload_bytes) columns.push_back({out[side].payload.data(), in[side].payload.data(), w[side].payload_bytes});
    st.nccl.exchange_on_device(c, columns, layout[side], st.slices[side].stream);
    in[side].rows = layout[side].received();
  }
  release(out);
  clock.mark("gpus.nccl");

  std::optional<JoinResult> result =
      agreed(c, [&] { return join_received(c, st.local, st.memory(), device, st.rel, w, in, st.output, clock); });
  if (!all_ranks(c, result.has_value())) return std::nullopt;
  clock.prepend_to(result->phases);
  return RankJoined{std::move(*result), in[0].rows, in[1].rows};
}

}  // namespace mgjoin::dist::detail
