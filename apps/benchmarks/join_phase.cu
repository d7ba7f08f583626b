// Join phase alone (paper Section 3.3) on sorted keys in pinned host memory: merge-path partition,
// three-stream pipelines on g GPUs, ranges back. Reports each part against the PCIe floor of copying
// the keys (measured here: all g GPUs copying pinned memory at once) and per-stream event timelines
// that show H2D and kernels overlapping. Median of --repeats after one warm-up.
//   bench_join_phase                                   workload B (10^9 x 10^9, 8-byte keys) and A
//                                                      (10^8 x 10^9, 4-byte keys) on g = 1, 2, 4
//   bench_join_phase --workload B --scale 0.1 --gpus 1,2 --output count --timeline --json
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "apps/benchmarks/pcie_rate.hpp"
#include "engine/src/join/join_pipeline.hpp"
#include "core/device.hpp"

#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace mgjoin;
using detail::JoinPhaseResult;
using detail::StreamTimelineEntry;

struct Workload {
  std::string name;  // "A" or "B"
  std::int64_t r_rows = 0, s_rows = 0;
  DType key = DType::UInt64;
};

struct Options {
  std::vector<std::string> workloads{"B", "A"};
  double scale = 1.0;
  std::int64_t r_rows = 0, s_rows = 0;  // override the workload's sizes
  std::vector<int> gpu_counts{1, 2, 4};
  OutputMode output = OutputMode::Ranges;
  std::uint64_t sub_rows = 1ull << 26;  // bound on |R_ij| + |S_ij| (512 MiB of 8-byte keys)
  double gpu_gib = 4, range_gib = 8;  // range_gib: mapped pinned range memory per GPU
  int repeats = 3;
  bool json = false, timeline = false;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "bench_join_phase: %s\n"
               "options: --workload A|B (repeatable) --scale F --r-rows N --s-rows N --gpus 1,2,4\n"
               "         --output count|ranges --sub-rows N --gpu-gib G --range-gib G (per GPU) --repeats N\n"
               "         --timeline --json\n",
               msg);
  std::exit(2);
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  for (std::size_t p = 0; p < s.size();) {
    const std::size_t q = std::min(s.find(',', p), s.size());
    out.push_back(std::atoi(s.substr(p, q - p).c_str()));
    p = q + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  bool workload_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--workload") {
      if (!workload_given) o.workloads.clear();
      workload_given = true;
      o.workloads.push_back(next());
      if (o.workloads.back() != "A" && o.workloads.back() != "B") usage("--workload must be A or B");
    } else if (a == "--scale") o.scale = std::atof(next().c_str());
    else if (a == "--r-rows") o.r_rows = static_cast<std::int64_t>(std::atof(next().c_str()));
    else if (a == "--s-rows") o.s_rows = static_cast<std::int64_t>(std::atof(next().c_str()));
    else if (a == "--gpus") o.gpu_counts = parse_list(next());
    else if (a == "--output") {
      const std::string v = next();
      if (v != "count" && v != "ranges") usage("--output must be count or ranges");
      o.output = v == "count" ? OutputMode::Count : OutputMode::Ranges;
    } else if (a == "--sub-rows") o.sub_rows = static_cast<std::uint64_t>(std::atof(next().c_str()));
    else if (a == "--gpu-gib") o.gpu_gib = std::atof(next().c_str());
    else if (a == "--range-gib") o.range_gib = std::atof(next().c_str());
    else if (a == "--repeats") o.repeats = std::max(1, std::atoi(next().c_str()));
    else if (a == "--timeline") o.timeline = true;
    else if (a == "--json") o.json = true;
    else usage(("unknown option " + a).c_str());
  }
  return o;
}

Workload workload(const std::string& name, const Options& o) {
  // Table 2: A = 4-byte keys, |R| = f 10^8, |S| = f 10^9; B = 8-byte keys, |R| = |S| = f 10^9.
  Workload w{name, 0, 0, name == "A" ? DType::UInt32 : DType::UInt64};
  w.r_rows = static_cast<std::int64_t>(o.scale * (name == "A" ? 1e8 : 1e9));
  w.s_rows = static_cast<std::int64_t>(o.scale * 1e9);
  if (o.r_rows) w.r_rows = o.r_rows;
  if (o.s_rows) w.s_rows = o.s_rows;
  return w;
}

template <class F>
void parallel_rows(std::int64_t n, F&& f) {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads); });
  for (auto& th : pool) th.join();
}

/// Sorted inputs generated directly: R unique keys spread over the key range (i * step + jitter), S the
/// foreign keys of R in sorted order (every S key matches one R key; |S| / |R| per R key).
template <class Key>
void generate_sorted(HostColumn& r, HostColumn& s) {
  const std::uint64_t nr = static_cast<std::uint64_t>(r.size()), ns = static_cast<std::uint64_t>(s.size());
  const std::uint64_t step = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<Key>(~Key(0))) / std::max<std::uint64_t>(nr, 1));
  Key* rk = r.as<Key>();
  Key* sk = s.as<Key>();
  parallel_rows(static_cast<std::int64_t>(nr), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
      rk[i] = static_cast<Key>(static_cast<std::uint64_t>(i) * step + (h >> 32) % step);
    }
  });
  parallel_rows(static_cast<std::int64_t>(ns), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t j = b; j < e; ++j)
      sk[j] = rk[static_cast<std::uint64_t>(static_cast<unsigned __int128>(j) * nr / ns)];
  });
}

struct Run {
  double partition = 0, gpu = 0, ranges = 0, total = 0;
  double h2d_busy = 0, kernel_busy = 0, span = 0;  // per GPU, the slowest GPU's
  std::uint64_t count = 0, range_count = 0, subpartitions = 0, fallback = 0;
  std::vector<StreamTimelineEntry> timeline;
};

Run summarize(const JoinPhaseResult& r, const std::vector<PhaseStat>& stats, double total) {
  Run run;
  for (const PhaseStat& s : stats) {
    if (s.name == "join.partition") run.partition = s.seconds;
    if (s.name == "join.gpu") run.gpu = s.seconds;
    if (s.name == "join.ranges") run.ranges = s.seconds;
  }
  run.total = total;
  run.count = r.count;
  run.range_count = r.ranges.size();
  run.subpartitions = r.subpartitions;
  run.fallback = r.cpu_fallback_subpartitions;
  run.timeline = r.timeline;
  // Busy time of each GPU's copy and compute work (summed over its streams) and its span.
  std::vector<int> devices;
  for (const auto& e : r.timeline) devices.push_back(e.device);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  for (int d : devices) {
    double h2d = 0, kernel = 0, span = 0;
    for (const auto& e : r.timeline)
      if (e.device == d) {
        h2d += (e.h2d_end_ms - e.h2d_begin_ms) / 1e3;
        kernel += (e.kernel_end_ms - e.h2d_end_ms) / 1e3;
        span = std::max(span, e.kernel_end_ms / 1e3);
      }
    run.h2d_busy = std::max(run.h2d_busy, h2d);
    run.kernel_busy = std::max(run.kernel_busy, kernel);
    run.span = std::max(run.span, span);
  }
  return run;
}

nlohmann::json timeline_json(const std::vector<StreamTimelineEntry>& t) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : t)
    out.push_back({{"device", e.device}, {"stream", e.stream}, {"subpartition", e.subpartition},
                   {"key_bytes", e.key_bytes}, {"h2d_begin_ms", e.h2d_begin_ms}, {"h2d_end_ms", e.h2d_end_ms},
                   {"kernel_end_ms", e.kernel_end_ms}});
  return out;
}

void print_timeline(const std::vector<StreamTimelineEntry>& t) {
  std::printf("    %-6s %-6s %-5s %12s %12s %12s\n", "device", "stream", "sub", "h2d begin ms", "h2d end ms", "kernel end");
  for (const auto& e : t)
    std::printf("    %-6d %-6d %-5llu %12.3f %12.3f %12.3f\n", e.device, e.stream,
                static_cast<unsigned long long>(e.subpartition), e.h2d_begin_ms, e.h2d_end_ms, e.kernel_end_ms);
}

nlohmann::json bench_one(const Workload& w, int g, const Options& o, HostColumn& r, HostColumn& s) {
  std::vector<int> devices;
  alloc::StackSet<alloc::DeviceStackAllocator> memory;
  for (int d = 0; d < g; ++d) {
    devices.push_back(d);
    memory.add(d, static_cast<std::size_t>(o.gpu_gib * (1ull << 30)));
  }
  // Each GPU's ranges land in its own mapped pinned stack; ranges beyond it are redone on the CPU.
  const std::size_t range_bytes = o.output == OutputMode::Count ? (1 << 20) : static_cast<std::size_t>(o.range_gib * (1ull << 30));
  alloc::StackSet<alloc::PinnedStackAllocator> range_memory;
  for (int d = 0; d < g; ++d) range_memory.add(range_bytes, /*mapped=*/true);

  const std::uint64_t key_bytes = r.bytes() + s.bytes();
  // The floor: every key crosses PCIe once at the rate all g GPUs reach together (measured now).
  HostColumn& larger = r.bytes() >= s.bytes() ? r : s;
  const std::uint64_t probe =
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(1ull << 30, larger.bytes() / static_cast<std::uint64_t>(g)));
  const double h2d_rate = static_cast<double>(probe) * g /
                          bench::measured_copy_seconds(devices, larger.as<std::byte>(), probe, memory.view(), cudaMemcpyHostToDevice);
  const double floor = static_cast<double>(key_bytes) / h2d_rate;

  detail::JoinPhaseOptions options;
  options.max_subpartition_rows = o.sub_rows;
  options.record_timeline = true;
  std::vector<Run> runs;
  for (int rep = 0; rep <= o.repeats; ++rep) {  // rep 0 warms up
    std::vector<PhaseStat> stats;
    const auto t0 = std::chrono::steady_clock::now();
    JoinPhaseResult result = detail::join_phase(r.view(), s.view(), devices, memory.view(), range_memory.view(), o.output, stats, options);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) runs.push_back(summarize(result, stats, total));
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.total < b.total; });
  const Run& m = runs[runs.size() / 2];

  if (!o.json) {
    std::printf("%-2s %11lld %11lld %2d %7.3f %7.3f %7.3f %7.3f %7.3f | %8.3f %8.3f %6.2f | %6.2fx %5.2fx %6llu %llu\n",
                w.name.c_str(), static_cast<long long>(w.r_rows), static_cast<long long>(w.s_rows), g, m.partition,
                m.h2d_busy, m.kernel_busy, m.ranges, m.total, floor, m.span, (m.h2d_busy + m.kernel_busy) / std::max(m.span, 1e-9),
                m.total / floor, m.gpu / floor, static_cast<unsigned long long>(m.subpartitions),
                static_cast<unsigned long long>(m.count));
    if (o.timeline) print_timeline(m.timeline);
  }
  nlohmann::json j = {{"workload", w.name}, {"r_rows", w.r_rows}, {"s_rows", w.s_rows},
                      {"key_bytes_each", dtype_size(w.key)}, {"gpus", g},
                      {"output", o.output == OutputMode::Count ? "count" : "ranges"},
                      {"sub_rows", o.sub_rows}, {"repeats", o.repeats},
                      {"median", {{"partition_s", m.partition}, {"gpu_s", m.gpu}, {"ranges_s", m.ranges},
                                  {"total_s", m.total}, {"h2d_busy_s", m.h2d_busy}, {"kernel_busy_s", m.kernel_busy},
                                  {"gpu_span_s", m.span}, {"count", m.count}, {"ranges", m.range_count},
                                  {"subpartitions", m.subpartitions}, {"cpu_fallback_subpartitions", m.fallback}}},
                      {"h2d_gbps_measured", h2d_rate / 1e9}, {"pcie_floor_s", floor}, {"total_over_floor", m.total / floor},
                      {"overlap", (m.h2d_busy + m.kernel_busy) / std::max(m.span, 1e-9)}};
  if (o.timeline) j["timeline"] = timeline_json(m.timeline);
  return j;
}

}  // namespace

int main(int argc, char** argv) try {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured, even if killed
  const Options o = parse(argc, argv);
  const int present = gpu::device_count();
  if (present == 0) {
    std::fprintf(stderr, "bench_join_phase: no GPU found\n");
    return 1;
  }
  nlohmann::json results = nlohmann::json::array();
  if (!o.json)
    std::printf("%-2s %11s %11s %2s %7s %7s %7s %7s %7s | %8s %8s %6s | %7s %6s %6s %s\n", "wl", "|R|", "|S|", "g",
                "part s", "h2d s", "kern s", "rng s", "total s", "floor s", "span s", "ovlp", "tot/fl", "gpu/fl",
                "subs", "count");
  for (const std::string& name : o.workloads) {
    const Workload w = workload(name, o);
    HostColumn r = HostColumn::allocate(w.key, w.r_rows, MemoryKind::Pinned);
    HostColumn s = HostColumn::allocate(w.key, w.s_rows, MemoryKind::Pinned);
    if (w.key == DType::UInt32)
      generate_sorted<std::uint32_t>(r, s);
    else
      generate_sorted<std::uint64_t>(r, s);
    for (int g : o.gpu_counts) {
      if (g < 1 || g > present) {
        std::fprintf(stderr, "bench_join_phase: skipping g = %d (%d GPU(s) present)\n", g, present);
        continue;
      }
      results.push_back(bench_one(w, g, o, r, s));
    }
  }
  if (o.json) std::printf("%s\n", results.dump(2).c_str());
  if (!o.json)
    std::printf("h2d/kern: busy seconds summed over a GPU's streams (slowest GPU); span: first H2D to last kernel;\n"
                "ovlp = (h2d + kern) / span (> 1: copies and kernels overlap); floor: keys over PCIe at the\n"
                "measured all-GPU H2D rate.\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_join_phase: %s\n", e.what());
  return 1;
}
