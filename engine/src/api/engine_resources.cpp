// An Engine's resources (engine_resources.hpp).
#include "engine/src/api/engine_resources.hpp"

#include "alloc/host_memory.hpp"
#include "engine/src/exec/labels.hpp"
#include "engine/src/sort/sort_phase.hpp"
#include "host_merge/multiway_merge.hpp"
#include "core/device.hpp"
#include "core/timing.hpp"
#include "topology/gpu_set.hpp"
#include "topology/log.hpp"
#include "topology/topology_cache.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>

namespace mgjoin::detail {
namespace {

std::vector<int> explicit_gpu_set(const std::vector<int>& ids, int present) {
  std::set<int> seen;
  for (const int d : ids) {
    MGJOIN_INPUT_EXPECTS(d >= 0 && d < present, "JoinOptions::gpu_ids: GPU " + std::to_string(d) + " does not exist (" +
                                                    std::to_string(present) + " GPUs present)");
    MGJOIN_INPUT_EXPECTS(seen.insert(d).second, "JoinOptions::gpu_ids: GPU " + std::to_string(d) + " is listed twice");
  }
  return ids;
}

}  // namespace

struct EngineResources::Machine {
  topology::Topology topo;
  std::optional<topology::TuningFile> tuning;
  std::vector<int> set;
  std::vector<PhaseStat> startup;  ///< the driver's start, the GPU set's and the contexts'
  timing::Clock::time_point probed;  ///< when the probe ended: the device memory's part starts there
};

EngineResources::Machine EngineResources::probe_machine(const EngineOptions& options) {
  // The driver starts once per process: only the engine that started it counts its time.
  static std::atomic<bool> driver_counted{false};
  const int present = gpu::device_count();
  MGJOIN_INPUT_EXPECTS(present > 0, "JoinOptions::gpus: no CUDA GPU found on this machine");
  auto start = timing::Clock::now();
  Machine m{topology::cached_topology(), std::nullopt, {}, {}, {}};
  m.startup.push_back({"start.driver", driver_counted.exchange(true) ? 0.0 : gpu::driver_start_seconds()});
  const std::string tuning_path = options.tuning_file.empty() ? topology::default_tuning_path() : options.tuning_file;
  m.tuning = topology::read_tuning_file(tuning_path, m.topo);
  if (!options.gpu_ids.empty()) {
    m.set = explicit_gpu_set(options.gpu_ids, present);
  } else {
    const int g = options.gpus < 0 ? present : options.gpus;
    MGJOIN_INPUT_EXPECTS(g <= present, "JoinOptions::gpus " + std::to_string(g) + ": only " + std::to_string(present) +
                                           " GPUs present");
    m.set = topology::choose_gpu_set(m.topo, g, m.tuning ? &*m.tuning : nullptr);
  }
  topology::log_verbose("GPUs " + exec::gpu_list(m.set) +
                        (!options.gpu_ids.empty() ? " (JoinOptions::gpu_ids)"
                         : m.tuning               ? " (tuning file " + tuning_path + ")"
                                                  : std::string(" (topology model)")));
  m.startup.push_back({"start.gpu_set", timing::seconds_since(start)});
  start = timing::Clock::now();
  gpu::start_contexts(m.set.data(), static_cast<int>(m.set.size()));
  m.startup.push_back({"start.contexts", timing::seconds_since(start)});
  m.probed = timing::Clock::now();
  return m;
}

EngineResources::EngineResources(const EngineOptions& options) : EngineResources(options, probe_machine(options)) {}

EngineResources::EngineResources(const EngineOptions& options, Machine&& m)
    : startup_(std::move(m.startup)), made_with_(options), devices_(std::move(m.set)),
      device_bytes_(sort::usable_device_bytes(sort::free_device_bytes(devices_), options.gpu_memory_limit)),
      tuning_(std::move(m.tuning)), peers_(devices_), topo_(std::move(m.topo)), ranges_(devices_, topo_) {
  for (const int d : devices_) {
    stacks_.add(d, device_bytes_);
    staging_view_.push_back(staging_.emplace_back(std::make_unique<exec::InputStaging>(d)).get());
  }
  startup_.push_back({"start.device_memory", timing::seconds_since(m.probed)});
  const auto start = timing::Clock::now();
  ranges_.make(exec::kMinRangeBytes);
  startup_.push_back({"start.pinned", timing::seconds_since(start)});
}

Rates EngineResources::rates() const {
  return rates_for(tuning_ ? &tuning_->bandwidths : nullptr, static_cast<int>(devices_.size()));
}

bool EngineResources::tuning_says_paper() const {
  const auto* tuned = tuning_ ? tuning_->best_for(static_cast<int>(devices_.size())) : nullptr;
  return tuned && tuned->flow == "paper" &&
         std::is_permutation(tuned->gpus.begin(), tuned->gpus.end(), devices_.begin(), devices_.end());
}

const p2p::NcclComms* EngineResources::comms_for(Exchange exchange) {
  if (exchange != Exchange::Nccl) return nullptr;
  if (!nccl_) nccl_ = std::make_unique<p2p::NcclComms>(devices_);
  return nccl_.get();
}

copart::CopartContext EngineResources::copart_context(Exchange exchange, std::uint64_t pinned, bool stage_inputs) {
  if (ranges_[0].available() < pinned) ranges_.make(pinned + exec::kMinRangeBytes);
  copart::CopartContext context{devices_, stacks_.view(), ranges_.view(), exchange, comms_for(exchange)};
  if (stage_inputs) context.staging = staging_view_;
  return context;
}

PhaseStat EngineResources::staged_inputs() const {
  PhaseStat p{"input.staged", 0, 0, 0};
  for (const auto& s : staging_) {
    p.seconds += s->staged_seconds();
    p.bytes_pcie += s->staged_bytes();
  }
  return p;
}

PaperContext EngineResources::paper_context() {
  return {devices_,       device_bytes_,   stacks_.view(), tuning_ ? &*tuning_ : nullptr,
          &topo_,         &merge_buffers_, &ranges_,       [this](Exchange e) { return comms_for(e); }};
}

std::optional<sort::SortPlan> EngineResources::paper_plan_if_runnable(const RelationView& r, const RelationView& s) {
  try {
    const sort::SortPlan plan = paper_sort_plan(r, s, paper_context());
    if (std::max(plan.k_r, plan.k_s) > static_cast<int>(host_merge::kMaxRuns)) return std::nullopt;
    if (!alloc::host_memory_would_hold(merge_memory_needed(r, s, plan, merge_buffers_))) return std::nullopt;
    return plan;
  } catch (const Error&) {
    return std::nullopt;  // the paper flow has no plan here
  }
}

void EngineResources::synchronize() const noexcept {
  int previous = 0;
  cudaGetDevice(&previous);
  for (const int d : devices_)
    if (cudaSetDevice(d) == cudaSuccess) cudaDeviceSynchronize();
  cudaSetDevice(previous);
  cudaGetLastError();
}

}  // namespace mgjoin::detail
