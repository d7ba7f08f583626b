// What fresh host memory costs a process before the GPUs can copy into or out of it at the link's rate:
// the ways of getting `--gib` GiB of pinned memory, timed apart (median of --repeat), with --gpus GPU
// contexts alive (cudaHostRegister and cudaHostAlloc map the pages for every context):
//
//   host_alloc           cudaHostAlloc(Portable): the driver faults, zeroes and pins on one thread
//   touch                mmap + MADV_HUGEPAGE + every thread writing one byte a page (the kernel zeroes)
//   register <flags>     cudaHostRegister of the touched pages with each set of flags (portable|mapped is
//                        alloc/host_column.cpp's way), and the D2H rate into them from the first and last GPU
//   register_per_context each GPU's context registering its own share (no flags), all at once
//   copy_into_touched    all threads copying a pinned buffer into touched pageable memory (a staging drain)
//   copy_into_fresh      the same into untouched pageable memory (faults taken by the copy)
//
//   bench_pin_rates [--gib N] [--gpus N] [--repeat N]
//
// Prints one line per way with seconds and GB/s, and the machine's transparent-huge-page setting.
#include <cuda_runtime_api.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "bench_pin_rates: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

struct Mapping {
  char* p = nullptr;
  std::size_t bytes = 0;
  explicit Mapping(std::size_t n) : bytes(n) {
    void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      std::perror("mmap");
      std::exit(1);
    }
    ::madvise(m, n, MADV_HUGEPAGE);
    p = static_cast<char*>(m);
  }
  ~Mapping() { ::munmap(p, bytes); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
};

void touch(char* p, std::size_t bytes) {
  const auto pages = static_cast<std::int64_t>(bytes / 4096);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < pages; ++i) p[i * 4096] = 0;
}

void copy_all_threads(char* to, const char* from, std::size_t bytes) {
  constexpr std::size_t kBlock = std::size_t{2} << 20;
  const auto blocks = static_cast<std::int64_t>((bytes + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t at = static_cast<std::size_t>(b) * kBlock;
    std::memcpy(to + at, from + at, std::min(kBlock, bytes - at));
  }
}

/// Seconds of `timed`, after `setup` (untimed) and before `teardown` (untimed), median of `repeat`.
double median_seconds(int repeat, const std::function<void()>& setup, const std::function<void()>& timed,
                      const std::function<void()>& teardown) {
  std::vector<double> runs;
  for (int i = 0; i < repeat; ++i) {
    setup();
    const auto t0 = Clock::now();
    timed();
    runs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    teardown();
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

void report(const char* way, double seconds, std::size_t bytes) {
  std::printf("%-22s %8.4f s  %7.2f GB/s\n", way, seconds, static_cast<double>(bytes) / seconds / 1e9);
}

std::string thp_setting() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s.empty() ? "(unknown)" : s;
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 4;
  int gpus = 1, repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--gib") gib = std::atof(argv[i + 1]);
    else if (a == "--gpus") gpus = std::atoi(argv[i + 1]);
    else if (a == "--repeat") repeat = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_pin_rates: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const std::size_t bytes = static_cast<std::size_t>(gib * (1 << 30)) / (2 << 20) * (2 << 20);
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  gpus = std::min(gpus, devices);
  for (int d = 0; d < gpus; ++d) {
    check(cudaSetDevice(d), "cudaSetDevice");
    check(cudaFree(nullptr), "context");
  }
  check(cudaSetDevice(0), "cudaSetDevice");
  std::printf("%.2f GiB, %d GPU contexts, %d threads, THP: %s\n", gib, gpus, omp_get_max_threads(), thp_setting().c_str());

  void* pinned = nullptr;
  report("host_alloc", median_seconds(repeat, [] {}, [&] { check(cudaHostAlloc(&pinned, bytes, cudaHostAllocPortable), "cudaHostAlloc"); },
                                      [&] { check(cudaFreeHost(pinned), "cudaFreeHost"); }), bytes);

  std::optional<Mapping> m;
  const auto map = [&] { m.emplace(bytes); };
  const auto unmap = [&] { m.reset(); };
  report("touch", median_seconds(repeat, map, [&] { touch(m->p, bytes); }, unmap), bytes);
  // Registration with each set of flags: Portable maps the pages for every context, Mapped into the GPUs'
  // address space; then the D2H rate into that memory from the first and the last GPU (a rate far below
  // the link's says the copy was staged: the memory is not pinned for that GPU's context).
  const std::pair<const char*, unsigned> flag_sets[] = {{"portable|mapped", cudaHostRegisterPortable | cudaHostRegisterMapped},
                                                        {"portable", cudaHostRegisterPortable},
                                                        {"mapped", cudaHostRegisterMapped},
                                                        {"default", cudaHostRegisterDefault}};
  const std::size_t probe = std::min<std::size_t>(bytes, std::size_t{1} << 30);
  for (const auto& [name, flags] : flag_sets) {
    const std::string way = std::string("register ") + name;
    report(way.c_str(), median_seconds(repeat, [&] { map(); touch(m->p, bytes); },
                                       [&, f = flags] { check(cudaHostRegister(m->p, bytes, f), "cudaHostRegister"); },
                                       [&] { check(cudaHostUnregister(m->p), "cudaHostUnregister"); unmap(); }), bytes);
    map();
    touch(m->p, bytes);
    check(cudaHostRegister(m->p, bytes, flags), "cudaHostRegister");
    for (int d : {0, gpus - 1}) {
      check(cudaSetDevice(d), "cudaSetDevice");
      void* dev = nullptr;
      check(cudaMalloc(&dev, probe), "cudaMalloc");
      check(cudaMemcpy(m->p, dev, probe, cudaMemcpyDeviceToHost), "warm-up copy");
      const double s = median_seconds(repeat, [] {}, [&] { check(cudaMemcpy(m->p, dev, probe, cudaMemcpyDeviceToHost), "D2H"); }, [] {});
      std::printf("    D2H from GPU %d into it: %.2f GB/s\n", d, static_cast<double>(probe) / s / 1e9);
      check(cudaFree(dev), "cudaFree");
    }
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaHostUnregister(m->p), "cudaHostUnregister");
    unmap();
  }
  // Each GPU registers its own quarter (page-aligned) in its own context, all at once: do contexts serialise?
  const std::size_t piece = bytes / gpus / (2 << 20) * (2 << 20);
  const auto per_context = [&] {
    std::vector<std::thread> threads;
    for (int d = 0; d < gpus; ++d)
      threads.emplace_back([&, d] {
        check(cudaSetDevice(d), "cudaSetDevice");
        const std::size_t n = d + 1 < gpus ? piece : bytes - piece * (gpus - 1);
        check(cudaHostRegister(m->p + piece * d, n, cudaHostRegisterDefault), "cudaHostRegister (per context)");
      });
    for (auto& t : threads) t.join();
  };
  const auto unregister_per_context = [&] {
    for (int d = 0; d < gpus; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
      check(cudaHostUnregister(m->p + piece * d), "cudaHostUnregister (per context)");
    }
    check(cudaSetDevice(0), "cudaSetDevice");
    unmap();
  };
  report("register_per_context", median_seconds(repeat, [&] { map(); touch(m->p, bytes); }, per_context, unregister_per_context), bytes);

  check(cudaHostAlloc(&pinned, bytes, cudaHostAllocPortable), "cudaHostAlloc");
  const char* from = static_cast<const char*>(pinned);
  report("copy_into_touched", median_seconds(repeat, [&] { map(); touch(m->p, bytes); }, [&] { copy_all_threads(m->p, from, bytes); }, unmap), bytes);
  report("copy_into_fresh", median_seconds(repeat, map, [&] { copy_all_threads(m->p, from, bytes); }, unmap), bytes);
  check(cudaFreeHost(pinned), "cudaFreeHost");
  return 0;
}
