#include "engine/src/table/gather_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace mgjoin::table {
namespace {

/// Room for the device stack's alignment of up to six buffers (128 B each: two maps, two sources, two
/// outputs) and nothing else: the buffers' sizes are exact.
constexpr std::uint64_t kAlignmentSlack = 1ull << 12;

/// A GPU's fixed costs beside its bytes: its streams, events and buffers set up once, then two copies and
/// a kernel queued a column, with their waits. Measured on nvidia-h100-x2 (PERFORMANCE.md, issue 19):
/// 8 columns of 10^4 rows took the GPUs 0.37 ms, the CPU 0.09 ms; of 10^5 rows 0.47 ms and 1.6 ms.
/// They keep small joins' columns on the CPU.
constexpr double kGpuSetupSeconds = 200e-6, kGpuSecondsPerColumn = 50e-6;

double seconds(std::uint64_t bytes, double gbps) { return bytes ? static_cast<double>(bytes) / (gbps * 1e9) : 0.0; }

std::uint64_t output_bytes(std::int64_t rows, int width) { return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(width); }

GpuGatherLoad with_column(GpuGatherLoad load, const GatherColumn& c, std::int64_t rows, bool maps_pinned) {
  const std::uint64_t source = c.source_rows * static_cast<std::uint64_t>(c.width);
  load.in += source;
  if (!load.map_used[c.map]) {  // the map comes in once, with its first column
    load.in += output_bytes(rows, 8);
    if (!maps_pinned) load.registered += output_bytes(rows, 8);
  }
  load.map_used[c.map] = true;
  load.out += output_bytes(rows, c.width);
  if (!c.pinned) load.registered += source;
  load.largest_source = std::max(load.largest_source, source);
  load.largest_output = std::max(load.largest_output, output_bytes(rows, c.width));
  ++load.columns;
  return load;
}

/// The rates of one GPU of the set (Rates are the set's together).
detail::Rates per_gpu(const detail::Rates& all, int gpus) {
  detail::Rates r = all;
  r.h2d /= gpus;
  r.d2h /= gpus;
  r.both_ways /= gpus;
  return r;
}

std::string describe(const GatherPlan& p, std::size_t too_large, GatherOn choice) {
  const std::size_t on_gpus = p.columns_on_gpus();
  char text[200];
  std::snprintf(text, sizeof text, "gathers: %zu payload column(s) on GPUs, %zu on the CPU (predicted GPUs %.3f s, CPU %.3f s%s)",
                on_gpus, p.place.size() - on_gpus, p.gpu_seconds, p.cpu_seconds, choice == GatherOn::Gpus ? ", GPUs asked for" : "");
  std::string why = text;
  if (too_large) why += "; " + std::to_string(too_large) + " column(s) too large for a GPU's free memory";
  return why;
}

}  // namespace

std::uint64_t gather_device_bytes(const GpuGatherLoad& load, std::int64_t rows) {
  if (load.columns == 0) return 0;
  const std::uint64_t maps = static_cast<std::uint64_t>(load.map_used[0] + load.map_used[1]) * output_bytes(rows, 8);
  const std::uint64_t buffers = std::min(load.columns, 2);  // double-buffered from the second column on
  return maps + buffers * (load.largest_source + load.largest_output) + kAlignmentSlack;
}

double gpu_gather_seconds(const GpuGatherLoad& load, const detail::Rates& per_gpu) {
  if (load.columns == 0) return 0;
  return kGpuSetupSeconds + load.columns * kGpuSecondsPerColumn +
         std::max({seconds(load.in, per_gpu.h2d), seconds(load.out, per_gpu.d2h), seconds(load.in + load.out, per_gpu.both_ways)});
}

double pin_seconds(std::uint64_t bytes, const detail::Rates& rates) {
  // Registration touches every page once: taken at the host memcpy rate.
  return seconds(bytes, rates.host_memcpy);
}

double cpu_gather_seconds(std::int64_t rows, const detail::Rates& rates) { return seconds(output_bytes(rows, 8), rates.cpu_gather); }

GatherPlan plan_gathers(std::span<const GatherColumn> columns, std::int64_t rows, int cpu_columns,
                        const GatherMachine& machine, GatherOn choice) {
  GatherPlan p;
  p.place.assign(columns.size(), kOnCpu);
  p.gpus.resize(static_cast<std::size_t>(std::max(machine.gpus, 0)));
  const double one_column = cpu_gather_seconds(rows, machine.rates);
  double cpu = cpu_columns * one_column;  // the CPU's gathers, after the pinning
  if (choice == GatherOn::Cpu || machine.gpus <= 0 || columns.empty() || rows == 0) {
    p.cpu_seconds = cpu + static_cast<double>(columns.size()) * one_column;
    p.why = choice == GatherOn::Cpu ? "gathers: CPU (asked for)" : machine.gpus <= 0 ? "gathers: CPU (no GPU)" : "gathers: CPU";
    return p;
  }
  const detail::Rates gpu_rates = per_gpu(machine.rates, machine.gpus);
  // Longest first: the balance of a greedy placement is best when the last columns placed are short.
  std::vector<std::size_t> order(columns.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const auto cost = [&](std::size_t c) { return columns[c].source_rows * columns[c].width + output_bytes(rows, columns[c].width); };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost(a) > cost(b); });
  // The host pins every pageable source and map before it queues any copy or gathers a column itself:
  // pinning delays the CPU and every GPU alike.
  std::uint64_t registered = 0;
  std::size_t too_large = 0;
  for (const std::size_t c : order) {
    int best = kOnCpu;
    double best_finish = choice == GatherOn::Auto ? pin_seconds(registered, machine.rates) + cpu + one_column : 0;
    for (int d = 0; d < machine.gpus; ++d) {
      const GpuGatherLoad& load = p.gpus[static_cast<std::size_t>(d)];
      const GpuGatherLoad trial = with_column(load, columns[c], rows, machine.maps_pinned);
      if (gather_device_bytes(trial, rows) > machine.device_bytes) continue;
      const double finish = pin_seconds(registered + trial.registered - load.registered, machine.rates) +
                            gpu_gather_seconds(trial, gpu_rates);
      if (best == kOnCpu ? (choice == GatherOn::Gpus || finish < best_finish) : finish < best_finish) {
        best = d;
        best_finish = finish;
      }
    }
    too_large += gather_device_bytes(with_column({}, columns[c], rows, machine.maps_pinned), rows) > machine.device_bytes;
    p.place[c] = best;
    if (best == kOnCpu) {
      cpu += one_column;
      continue;
    }
    GpuGatherLoad& load = p.gpus[static_cast<std::size_t>(best)];
    const GpuGatherLoad grown = with_column(load, columns[c], rows, machine.maps_pinned);
    registered += grown.registered - load.registered;
    load = grown;
  }
  const double pins = pin_seconds(registered, machine.rates);
  p.cpu_seconds = pins + cpu;
  for (const GpuGatherLoad& load : p.gpus) p.gpu_seconds = std::max(p.gpu_seconds, pins + gpu_gather_seconds(load, gpu_rates));
  p.why = describe(p, too_large, choice);
  return p;
}

}  // namespace mgjoin::table
