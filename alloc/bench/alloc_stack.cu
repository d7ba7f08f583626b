// Taking and returning device memory: the device stack allocator (alloc/stack_allocator.hpp) vs
// cudaMalloc/cudaFree of the same size — why the paper (Section 3.1.3) allocates once up front.
//
//   bench_alloc_stack [--gpu N] [--sizes 1,16,64] (GiB) [--repeats N] [--json]
//
// Each size: one warm-up, then the median of --repeats rounds of cudaMalloc+cudaFree (host clock; both
// calls are synchronous), and the median of 100x as many allocate+deallocate rounds on a device stack
// whose one-time creation (its own cudaMalloc) is reported separately.
#include "alloc/stack_allocator.hpp"

#include "core/device.hpp"

#include <mgjoin/error.hpp>

#include <nlohmann/json.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using mgjoin::alloc::DeviceStackAllocator;
constexpr std::size_t kGiB = std::size_t{1} << 30;

struct Options {
  int gpu = 0;
  std::vector<std::size_t> sizes_gib = {1, 16, 64};
  int repeats = 9;
  bool json = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw mgjoin::InputError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--gpu") o.gpu = std::stoi(value());
    else if (a == "--repeats") o.repeats = std::max(1, std::stoi(value()));
    else if (a == "--json") o.json = true;
    else if (a == "--sizes") {
      o.sizes_gib.clear();
      std::stringstream list(value());
      for (std::string s; std::getline(list, s, ',');) o.sizes_gib.push_back(std::stoull(s));
    } else {
      throw mgjoin::InputError("unknown option " + a +
                               " (use --gpu N, --sizes 1,16,64, --repeats N, --json)");
    }
  }
  return o;
}

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

struct Row {
  std::size_t gib = 0;
  bool fits = false;
  double cuda_malloc_s = 0, cuda_free_s = 0, stack_create_s = 0, stack_take_return_s = 0;
};

// Raw cudaMalloc/cudaFree are what the benchmark compares against: the one place outside alloc/ that
// calls them on purpose.
Row measure_cuda_malloc(std::size_t gib, int repeats) {
  Row row{gib};
  const std::size_t bytes = gib * kGiB;
  std::vector<double> take, give;
  for (int r = -1; r < repeats; ++r) {  // r == -1 is the warm-up
    void* p = nullptr;
    const double t = seconds([&] { MGJOIN_CUDA_TRY(cudaMalloc(&p, bytes)); });
    const double g = seconds([&] { MGJOIN_CUDA_TRY(cudaFree(p)); });
    if (r >= 0) {
      take.push_back(t);
      give.push_back(g);
    }
  }
  row.cuda_malloc_s = median(take);
  row.cuda_free_s = median(give);
  return row;
}

void measure_stack(Row& row, int gpu, int repeats) {
  const std::size_t bytes = row.gib * kGiB;
  std::unique_ptr<DeviceStackAllocator> stack;
  row.stack_create_s = seconds([&] { stack = std::make_unique<DeviceStackAllocator>(gpu, bytes); });
  std::vector<double> rounds;
  for (int r = -1; r < 100 * repeats; ++r) {
    const double s = seconds([&] { stack->deallocate(stack->allocate(bytes)); });
    if (r >= 0) rounds.push_back(s);
  }
  row.stack_take_return_s = median(rounds);
}

bool fits_on_gpu(std::size_t gib) {
  std::size_t free_bytes = 0, total = 0;
  MGJOIN_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total));
  return gib * kGiB + kGiB / 2 <= free_bytes;  // leave room for the context
}

void print_table(const std::vector<Row>& rows, int gpu) {
  std::printf("device stack vs cudaMalloc/cudaFree on GPU %d (medians)\n", gpu);
  std::printf("%8s %14s %14s %14s %18s %10s\n", "size", "cudaMalloc", "cudaFree", "stack create",
              "stack take+return", "speed-up");
  for (const auto& r : rows) {
    if (!r.fits) {
      std::printf("%5zu GiB  skipped: does not fit in free GPU memory\n", r.gib);
      continue;
    }
    const double raw = r.cuda_malloc_s + r.cuda_free_s;
    std::printf("%5zu GiB %11.3f ms %11.3f ms %11.3f ms %15.3f us %9.0fx\n", r.gib, r.cuda_malloc_s * 1e3,
                r.cuda_free_s * 1e3, r.stack_create_s * 1e3, r.stack_take_return_s * 1e6,
                raw / r.stack_take_return_s);
  }
}

void print_json(const std::vector<Row>& rows, int gpu, int repeats) {
  nlohmann::json j;
  j["benchmark"] = "alloc_stack";
  j["gpu"] = gpu;
  j["repeats"] = repeats;
  cudaDeviceProp prop{};
  MGJOIN_CUDA_TRY(cudaGetDeviceProperties(&prop, gpu));
  j["device_name"] = prop.name;
  for (const auto& r : rows) {
    nlohmann::json row = {{"size_gib", r.gib}, {"fits", r.fits}};
    if (r.fits) {
      row["cuda_malloc_s"] = r.cuda_malloc_s;
      row["cuda_free_s"] = r.cuda_free_s;
      row["stack_create_s"] = r.stack_create_s;
      row["stack_take_return_s"] = r.stack_take_return_s;
    }
    j["rows"].push_back(row);
  }
  std::cout << j.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) try {
  const Options opt = parse(argc, argv);
  if (mgjoin::gpu::device_count() <= opt.gpu) {
    std::fprintf(stderr, "bench_alloc_stack: GPU %d not present\n", opt.gpu);
    return 1;
  }
  mgjoin::gpu::DeviceGuard guard(opt.gpu);
  MGJOIN_CUDA_TRY(cudaFree(nullptr));  // create the context before timing anything
  std::vector<Row> rows;
  for (std::size_t gib : opt.sizes_gib) {
    if (!fits_on_gpu(gib)) {
      rows.push_back(Row{gib});
      continue;
    }
    Row row = measure_cuda_malloc(gib, opt.repeats);
    row.fits = true;
    measure_stack(row, opt.gpu, opt.repeats);
    rows.push_back(row);
  }
  if (opt.json) print_json(rows, opt.gpu, opt.repeats);
  else print_table(rows, opt.gpu);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_alloc_stack: %s\n", e.what());
  return 1;
}
