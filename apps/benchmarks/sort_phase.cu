// Sort phase alone (paper, Section 3.1): inputs in pinned host memory, each part and the total against
// the PCIe floor: H2D + D2H of the relation at DEVICE.md's link rates ("floor"), and at the rates all
// g GPUs reach together in this run ("measured"). Median of 3 after a warm-up.
//   bench_sort_phase                       workload B (10^9, 8/8) and A (2·10^9, 4/4) on g = 1, 2, 4
//   bench_sort_phase --tuples 1e8 --key-bytes 4 --gpus 4 --exchange nccl --strategy both --json
// The merge strategy has no exchange choice (its block swaps are P2P copies): it runs once per g, and
// only where g is a power of two.
#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "apps/benchmarks/pcie_rate.hpp"
#include "engine/src/sort/merge_sort.hpp"
#include "engine/src/sort/sort_phase.hpp"
#include "p2p/nccl_comms.hpp"
#include "p2p/peer_access.hpp"

#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace mgjoin;

struct Options {
  std::vector<std::pair<std::int64_t, int>> workloads{{1'000'000'000, 8}, {2'000'000'000, 4}};
  std::vector<int> gpu_counts{1, 2, 4};
  std::vector<Exchange> exchanges{Exchange::CopyEngines, Exchange::Nccl};
  std::vector<SortStrategy> strategies{SortStrategy::Radix};
  int reps = 3;
  bool json = false;
};

/// PCIe floor of moving `bytes` in and out on g GPUs (DEVICE.md: 55.4 GB/s per GPU each way; with four
/// GPUs 204.8 GB/s H2D and 162.1 GB/s D2H in all).
double pcie_floor_seconds(double bytes, int g) {
  const double h2d = g >= 4 ? 204.8e9 : 55.4e9 * g;
  const double d2h = g >= 4 ? 162.1e9 : 55.4e9 * g;
  return bytes / h2d + bytes / d2h;
}

void fill_random(Relation& rel, std::uint64_t seed) {
  // Host threads (nvcc does not pass OpenMP to the host compiler): xorshift64 per thread slice.
  const std::int64_t n = rel.size();
  const bool wide = dtype_size(rel.key.type()) == 8;
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(t + 1));
      for (std::int64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        if (wide) {
          rel.key.as<std::uint64_t>()[i] = x;
          rel.payload->as<std::uint64_t>()[i] = static_cast<std::uint64_t>(i);
        } else {
          rel.key.as<std::uint32_t>()[i] = static_cast<std::uint32_t>(x >> 32);
          rel.payload->as<std::uint32_t>()[i] = static_cast<std::uint32_t>(i);
        }
      }
    });
  for (auto& th : pool) th.join();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--json") o.json = true;
    else if (a == "--reps") o.reps = std::stoi(next());
    else if (a == "--tuples") o.workloads = {{static_cast<std::int64_t>(std::stod(next())), 8}};
    else if (a == "--key-bytes") for (auto& w : o.workloads) w.second = std::stoi(next());
    else if (a == "--gpus") {
      o.gpu_counts.clear();
      std::string list = next();
      for (std::size_t p = 0; p != std::string::npos;) {
        const auto q = list.find(',', p);
        o.gpu_counts.push_back(std::stoi(list.substr(p, q == std::string::npos ? q : q - p)));
        p = q == std::string::npos ? q : q + 1;
      }
    } else if (a == "--exchange") {
      const auto e = next();
      o.exchanges = e == "nccl" ? std::vector{Exchange::Nccl}
                    : e == "copy" ? std::vector{Exchange::CopyEngines}
                                  : std::vector{Exchange::CopyEngines, Exchange::Nccl};
    } else if (a == "--strategy") {
      const auto st = next();
      o.strategies = st == "radix" ? std::vector{SortStrategy::Radix}
                     : st == "merge" ? std::vector{SortStrategy::Merge}
                                     : std::vector{SortStrategy::Radix, SortStrategy::Merge};
    } else {
      std::fprintf(stderr, "usage: %s [--tuples N] [--key-bytes 4|8] [--gpus 1,2,4] [--exchange copy|nccl|both] "
                           "[--strategy radix|merge|both] [--reps 3] [--json]\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

/// The H2D + D2H floor of `bytes` on these GPUs at the rates they reach together now (1 GiB per GPU,
/// or the chunk if smaller, from and to the relation's pinned key column).
double measured_floor_seconds(double bytes, Relation& rel, const std::vector<int>& devices,
                              std::span<alloc::DeviceStackAllocator* const> stacks) {
  const auto g = static_cast<std::uint64_t>(devices.size());
  const std::uint64_t probe = std::max<std::uint64_t>(1, std::min<std::uint64_t>(1ull << 30, rel.key.bytes() / g));
  std::byte* host = rel.key.as<std::byte>();
  const double h2d = static_cast<double>(probe * g) / bench::measured_copy_seconds(devices, host, probe, stacks, cudaMemcpyHostToDevice);
  const double d2h = static_cast<double>(probe * g) / bench::measured_copy_seconds(devices, host, probe, stacks, cudaMemcpyDeviceToHost);
  std::printf("# measured with %llu GPU(s) at once: H2D %.1f GB/s, D2H %.1f GB/s\n", static_cast<unsigned long long>(g),
              h2d / 1e9, d2h / 1e9);
  return bytes / h2d + bytes / d2h;
}

/// One (g, strategy, exchange) case: warm-up, then the median of `reps` runs of each part.
nlohmann::json bench_case(Relation& rel, std::int64_t tuples, int width, const sort::SortPlan& plan,
                          const std::vector<int>& devices, std::span<alloc::DeviceStackAllocator* const> stacks,
                          SortStrategy strategy, Exchange exchange, const p2p::NcclComms* nccl, int reps,
                          double measured_floor) {
  const int g = static_cast<int>(devices.size());
  std::map<std::string, std::vector<double>> seconds;
  for (int rep = -1; rep < reps; ++rep) {  // rep -1 is the warm-up
    fill_random(rel, 12345 + rep);
    std::vector<PhaseStat> stats;
    sort::sort_phase(rel.view(), plan, devices, stacks, strategy, exchange, nccl, stats);
    if (rep >= 0)
      for (const auto& s : stats) seconds[s.name].push_back(s.seconds);
  }
  const double bytes = static_cast<double>(tuples) * 2 * width;
  const double floor = pcie_floor_seconds(bytes, g);
  const auto med = [&](const char* name) { return seconds.count(name) ? median(seconds[name]) : 0.0; };
  const char* st = strategy == SortStrategy::Merge ? "merge" : "radix";
  const char* ex = strategy == SortStrategy::Merge ? "p2p" : exchange == Exchange::Nccl ? "nccl" : "copy_engines";
  std::printf("%-10lld %4d %-6s %-12s %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %7.2f %9.4f %7.2f\n",
              static_cast<long long>(tuples), g, st, ex, med("sort.h2d"), med("sort.partition"), med("sort.exchange"),
              med("sort.local_sort"), med("sort.d2h"), med("sort.total"), floor, med("sort.total") / floor,
              measured_floor, med("sort.total") / measured_floor);
  nlohmann::json row{{"tuples", tuples}, {"key_bytes", width}, {"payload_bytes", width}, {"gpus", g},
                     {"exchange", ex}, {"strategy", st}, {"chunksets", sort::chunksets_for(tuples, plan)},
                     {"floor_seconds", floor}, {"measured_floor_seconds", measured_floor}};
  for (const auto& [name, v] : seconds) row[name] = median(v);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured, even if killed
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  const Options opt = parse(argc, argv);
  int available = 0;
  if (cudaGetDeviceCount(&available) != cudaSuccess || available == 0) {
    std::fprintf(stderr, "bench_sort_phase: no GPU\n");
    return 1;
  }
  nlohmann::json out = nlohmann::json::array();
  std::printf("%-10s %4s %-6s %-12s %9s %9s %9s %9s %9s %9s %9s %7s %9s %7s\n", "tuples", "g", "sort", "exchange",
              "h2d", "partition", "exchange", "local", "d2h", "total", "floor", "x floor", "measured", "x meas");
  for (const auto& [tuples, width] : opt.workloads) {
    const DType type = width == 8 ? DType::UInt64 : DType::UInt32;
    Relation rel{HostColumn::allocate(type, tuples, MemoryKind::Pinned), HostColumn::allocate(type, tuples, MemoryKind::Pinned)};
    // Written once before the PCIe rates are probed: the first probe of a fresh relation once gave
    // 2 GPUs 54.7 GB/s, the rate of one; pages never touched by the CPU are the likely cause.
    fill_random(rel, 1);
    for (const int g : opt.gpu_counts) {
      if (g > available) continue;
      std::vector<int> devices(g);
      std::iota(devices.begin(), devices.end(), 0);
      const auto plan = sort::plan_sort_on_devices(rel.view(), rel.view(), devices, 0);
      alloc::StackSet<alloc::DeviceStackAllocator> stacks;
      for (const int d : devices) stacks.add(d, plan.device_bytes);
      p2p::PeerAccess peers(devices);
      std::unique_ptr<p2p::NcclComms> nccl;
      const double measured_floor =
          measured_floor_seconds(static_cast<double>(tuples) * 2 * width, rel, devices, stacks.view());
      for (const auto strategy : opt.strategies) {
        if (strategy == SortStrategy::Merge && !sort::merge_sort_supported(g)) continue;
        // The merge strategy swaps blocks with P2P copies: one run per g, labelled "p2p".
        const std::vector<Exchange> exchanges =
            strategy == SortStrategy::Merge ? std::vector{Exchange::CopyEngines} : opt.exchanges;
        for (const auto exchange : exchanges) {
          if (exchange == Exchange::Nccl && !nccl) nccl = std::make_unique<p2p::NcclComms>(devices);
          out.push_back(bench_case(rel, tuples, width, plan, devices, stacks.view(), strategy, exchange, nccl.get(), opt.reps,
                                   measured_floor));
        }
      }
    }
  }
  if (opt.json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
