// bench_thrust_join: the naive single-GPU join a user would write with Thrust, as a benchmark peer of
// mgjoin: copy both key columns in, sort both, lower/upper bound of one side's keys in the other,
// sum the differences. Count only; device memory taken once before the timed runs (Thrust's own
// temporaries come from a stack allocator, so no cudaMalloc is timed). Median of --repeat runs after
// --warmup; the H2D floor of the key bytes is measured in the same run.
//
//   bench_thrust_join --workload B --scale 1 [--zipf 1] [--hot-key 0.5] [--repeat 3] [--verify] [--json]
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>

#include "alloc/stack_allocator.hpp"
#include "alloc/stack_set.hpp"
#include "alloc/thrust_adapter.cuh"
#include "pcie_rate.hpp"
#include "core/device.hpp"

#include <nlohmann/json.hpp>
#include <thrust/binary_search.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sort.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using namespace mgjoin;

struct Args {
  WorkloadSpec spec;
  int repeat = 3, warmup = 1;
  bool verify = false, json = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "bench_thrust_join: %s\n", why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string opt = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(opt + ": needs a value");
      return argv[++i];
    };
    if (opt == "--workload") {
      const auto w = parse_workload(value());
      if (!w) usage("--workload: expected A or B");
      a.spec.workload = *w;
    } else if (opt == "--scale") a.spec.scale = std::stod(value());
    else if (opt == "--zipf") a.spec.zipf = std::stod(value());
    else if (opt == "--hot-key") a.spec.hot_key = std::stod(value());
    else if (opt == "--selectivity") a.spec.selectivity = std::stod(value());
    else if (opt == "--seed") a.spec.seed = std::stoull(value());
    else if (opt == "--repeat") a.repeat = std::stoi(value());
    else if (opt == "--warmup") a.warmup = std::stoi(value());
    else if (opt == "--verify") a.verify = true;
    else if (opt == "--json") a.json = true;
    else usage(opt + ": unknown option");
  }
  if (a.repeat < 1) usage("--repeat: must be at least 1");
  return a;
}

/// matches(i) = how many keys of `other` equal keys[i] (both sorted), by two binary searches.
template <class Key>
struct MatchesOf {
  const Key* keys;
  const Key* other;
  std::uint64_t n_other;
  __device__ unsigned long long operator()(std::uint64_t i) const {
    const Key k = keys[i];
    const Key* lo = thrust::lower_bound(thrust::seq, other, other + n_other, k);
    const Key* hi = thrust::upper_bound(thrust::seq, lo, other + n_other, k);
    return static_cast<unsigned long long>(hi - lo);
  }
};

template <class Key>
struct ThrustJoin {
  Key* r;
  Key* s;
  std::uint64_t nr, ns;
  alloc::DeviceStackAllocator& stack;
  cudaStream_t stream;

  /// One timed join: H2D both key columns, sort both, count. Seconds by CUDA events.
  std::pair<double, unsigned long long> run(const Key* host_r, const Key* host_s) {
    gpu::Event begin(stack.device()), end(stack.device());
    alloc::ThrustAllocator scratch(stack);
    const auto policy = thrust::cuda::par(scratch).on(stream);
    begin.record(stream);
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(r, host_r, nr * sizeof(Key), cudaMemcpyHostToDevice, stream));
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(s, host_s, ns * sizeof(Key), cudaMemcpyHostToDevice, stream));
    thrust::sort(policy, r, r + nr);
    thrust::sort(policy, s, s + ns);
    // Probe with the smaller side: one pair of searches per row of it.
    const bool r_probes = nr <= ns;
    const MatchesOf<Key> f{r_probes ? r : s, r_probes ? s : r, r_probes ? ns : nr};
    const unsigned long long count = thrust::transform_reduce(
        policy, thrust::counting_iterator<std::uint64_t>(0), thrust::counting_iterator<std::uint64_t>(r_probes ? nr : ns),
        f, 0ull, thrust::plus<unsigned long long>());
    end.record(stream);
    end.synchronize();
    return {end.elapsed_ms_since(begin) / 1e3, count};
  }
};

template <class Key>
unsigned long long cpu_count(const Key* r, std::uint64_t nr, const Key* s, std::uint64_t ns) {
  std::unordered_map<Key, unsigned long long> in_r;
  in_r.reserve(nr);
  for (std::uint64_t i = 0; i < nr; ++i) ++in_r[r[i]];
  unsigned long long n = 0;
  for (std::uint64_t j = 0; j < ns; ++j) {
    const auto it = in_r.find(s[j]);
    if (it != in_r.end()) n += it->second;
  }
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

template <class Key>
int run_typed(const Args& a, GeneratedWorkload& w) {
  const auto nr = static_cast<std::uint64_t>(w.r.size()), ns = static_cast<std::uint64_t>(w.s.size());
  const std::uint64_t key_bytes = (nr + ns) * sizeof(Key);
  gpu::DeviceGuard guard(0);
  std::size_t free = 0, total = 0;
  MGJOIN_CUDA_TRY(cudaMemGetInfo(&free, &total));
  // Both columns plus Thrust's sort scratch (about the larger column again, and some).
  const std::uint64_t need = key_bytes + std::max(nr, ns) * sizeof(Key) * 2 + (256ull << 20);
  if (need > free * 0.9) usage("the inputs (" + std::to_string(need >> 20) + " MiB with sort scratch) do not fit GPU 0");
  alloc::StackSet<alloc::DeviceStackAllocator> stacks;
  stacks.add(0, static_cast<std::size_t>(free * 0.9));
  const double floor = bench::measured_copy_seconds({0}, static_cast<std::byte*>(w.s.key.data()),
                                                    std::min<std::uint64_t>(ns * sizeof(Key), 1ull << 30), stacks.view(),
                                                    cudaMemcpyHostToDevice);
  const double h2d_gbps = std::min<std::uint64_t>(ns * sizeof(Key), 1ull << 30) / floor / 1e9;
  alloc::StackBuffer<Key, alloc::DeviceStackAllocator> r(stacks[0], std::max<std::uint64_t>(nr, 1)),
      s(stacks[0], std::max<std::uint64_t>(ns, 1));
  gpu::Stream stream(0);
  ThrustJoin<Key> join{r.data(), s.data(), nr, ns, stacks[0], stream};
  std::vector<double> seconds;
  unsigned long long count = 0;
  for (int i = 0; i < a.warmup + a.repeat; ++i) {
    const auto [t, c] = join.run(w.r.key.as<Key>(), w.s.key.as<Key>());
    count = c;
    if (i >= a.warmup) seconds.push_back(t);
    if (!a.json) std::fprintf(stderr, "bench_thrust_join: %s run: %.4f s, %llu matches\n", i < a.warmup ? "warm-up" : "timed", t, c);
  }
  if (a.verify) {
    const unsigned long long expected = cpu_count(w.r.key.as<Key>(), nr, w.s.key.as<Key>(), ns);
    if (expected != count) {
      std::fprintf(stderr, "bench_thrust_join: --verify: %llu matches, the CPU hash count says %llu\n", count, expected);
      return 1;
    }
  }
  cudaDeviceProp prop{};
  MGJOIN_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  const double keys_floor = key_bytes / (h2d_gbps * 1e9);
  const double med = median(seconds);
  if (a.json) {
    nlohmann::json j = {{"peer", "thrust-1gpu"}, {"workload", a.spec.workload == Workload::A ? "A" : "B"},
                        {"scale", a.spec.scale}, {"zipf", a.spec.zipf}, {"hot_key", a.spec.hot_key},
                        {"r_rows", nr}, {"s_rows", ns}, {"count", count}, {"median_seconds", med},
                        {"run_seconds", seconds}, {"h2d_gbps_measured", h2d_gbps}, {"h2d_floor_seconds", keys_floor},
                        {"verified", a.verify}, {"device", prop.name}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("thrust 1-GPU join (%s): median %.4f s, %llu matches%s; H2D of the keys at the measured %.1f GB/s: "
                "%.4f s (%.2fx)\n",
                prop.name, med, count, a.verify ? " (verified)" : "", h2d_gbps, keys_floor, med / keys_floor);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    if (gpu::device_count() == 0) usage("no CUDA GPU found");
    GeneratedWorkload w = generate_workload(a.spec, MemoryKind::Pinned);
    return a.spec.workload == Workload::A ? run_typed<std::uint32_t>(a, w) : run_typed<std::uint64_t>(a, w);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_thrust_join: %s\n", e.what());
    return 1;
  }
}
