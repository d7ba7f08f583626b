// Merge-phase benchmark (paper Section 3.2.2): __gnu_parallel::multiway_merge of k sorted runs on zip
// iterators vs the pair-copy workaround (copy columns into std::pair arrays, merge, copy out), in GB/s
// of bytes read plus written, next to parallel memcpy bandwidth measured in the same run. Optionally
// (--sort) __gnu_parallel::sort on zip iterators vs on a pair array, for the CPU join path; --no-pair
// skips the pair-copy columns (they need 2 extra arrays of n pairs; they then read 0).
//
//   bench_host_merge [--log2-n8 30] [--log2-n4 31] [--ks 2,4,8,16] [--reps 3] [--no-pair] [--sort]
//                    [--log2-sort 27] [--json]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "apps/benchmarks/median_time.hpp"
#include "host_merge/detail/simd_merge.hpp"
#include "host_merge/multiway_merge.hpp"
#include "host_merge/zip_iterator.hpp"

namespace {

using namespace mgjoin::host_merge;

struct Options {
  int log2_n8 = 30;  // tuples of 8-byte keys and payloads
  int log2_n4 = 31;  // tuples of 4-byte keys and payloads
  std::vector<int> ks{2, 4, 8, 16};
  int reps = 3;
  bool pair = true;
  bool sort = false;
  int log2_sort = 27;
  bool json = false;
};

[[noreturn]] void usage(const char* bad) {
  std::fprintf(stderr,
               "bench_host_merge: bad option '%s'\nusage: bench_host_merge [--log2-n8 N] [--log2-n4 N] "
               "[--ks 2,4,8,16] [--reps N] [--no-pair] [--sort] [--log2-sort N] [--json]\n",
               bad);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : (usage(argv[i]), ""); };
    if (a == "--log2-n8") o.log2_n8 = std::stoi(value());
    else if (a == "--log2-n4") o.log2_n4 = std::stoi(value());
    else if (a == "--reps") o.reps = std::max(1, std::stoi(value()));
    else if (a == "--log2-sort") o.log2_sort = std::stoi(value());
    else if (a == "--sort") o.sort = true;
    else if (a == "--no-pair") o.pair = false;
    else if (a == "--json") o.json = true;
    else if (a == "--ks") {
      o.ks.clear();
      const std::string list = value();
      for (std::size_t p = 0; p < list.size();) {
        const auto q = std::min(list.find(',', p), list.size());
        o.ks.push_back(std::stoi(list.substr(p, q - p)));
        p = q + 1;
      }
    } else usage(argv[i]);
  }
  return o;
}

using mgjoin::bench::median_seconds;
using mgjoin::bench::seconds_of;

/// Uninitialised array, first-touched by all threads (so pages spread like the engine's buffers).
template <class T>
std::unique_ptr<T[]> parallel_array(std::int64_t n) {
  std::unique_ptr<T[]> a(new T[static_cast<std::size_t>(n)]);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) a[i] = T{};
  return a;
}

template <class T>
void parallel_copy(const T* src, T* dst, std::int64_t n) {
#pragma omp parallel
  {
    const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const std::int64_t b = n * t / nt, e = n * (t + 1) / nt;
    std::memcpy(dst + b, src + b, static_cast<std::size_t>(e - b) * sizeof(T));
  }
}

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Fills keys[0, m) with a sorted random walk (steps in [0, 2k)), in parallel: each block sums its
/// steps first, then writes them from its prefix offset. Keys of different runs interleave randomly.
template <class K>
void fill_sorted_run(K* keys, std::int64_t m, int k, std::uint64_t seed) {
  const int blocks = 4 * omp_get_max_threads();
  std::vector<std::uint64_t> start(static_cast<std::size_t>(blocks) + 1, 0);
  auto walk = [&](int b, K* out) {
    std::uint64_t s = seed * 1315423911ull + static_cast<std::uint64_t>(b), sum = 0;
    for (std::int64_t i = m * b / blocks; i < m * (b + 1) / blocks; ++i) {
      sum += splitmix(s) % (2 * static_cast<std::uint64_t>(k));
      if (out) out[i] = static_cast<K>(start[static_cast<std::size_t>(b)] + sum);
    }
    return sum;
  };
#pragma omp parallel for schedule(static, 1)
  for (int b = 0; b < blocks; ++b) start[static_cast<std::size_t>(b) + 1] = walk(b, nullptr);
  for (int b = 0; b < blocks; ++b) start[static_cast<std::size_t>(b) + 1] += start[static_cast<std::size_t>(b)];
#pragma omp parallel for schedule(static, 1)
  for (int b = 0; b < blocks; ++b) walk(b, keys);
}

struct Row {
  std::string op;
  int key_bytes, payload_bytes;
  std::int64_t n;
  int k;
  double zip_gbs, pair_gbs, pair_merge_only_gbs, memcpy_gbs;
};

void print_header() {
  std::printf("%-5s %5s %12s %3s %9s %10s %11s %8s %11s %10s\n", "op", "K/P", "tuples", "k", "zip GB/s",
              "pair GB/s", "pair-merge", "zip/pair", "memcpy GB/s", "zip/memcpy");
}

/// Rows are printed as they are measured, so a long run killed midway still reports what it has.
/// A pair column that was not measured (--no-pair) reads 0.0, its ratio "-".
void print_row(const Row& r) {
  char ratio[16] = "       -";
  if (r.pair_gbs > 0) std::snprintf(ratio, sizeof ratio, "%7.1fx", r.zip_gbs / r.pair_gbs);
  std::printf("%-5s %2d/%-2d %12lld %3d %9.1f %10.1f %11.1f %8s %11.1f %9.0f%%\n", r.op.c_str(), r.key_bytes,
              r.payload_bytes, static_cast<long long>(r.n), r.k, r.zip_gbs, r.pair_gbs, r.pair_merge_only_gbs, ratio,
              r.memcpy_gbs, r.memcpy_gbs > 0 ? 100.0 * r.zip_gbs / r.memcpy_gbs : 0.0);
}

void print_footer() {
  std::printf("threads: %d; merge output stores: %s (MGJOIN_MERGE_STREAMING_STORES); 4/4 kernel: %s; GB/s = "
              "bytes read + written (2 x tuples x (key + payload bytes)) / time; pair GB/s includes the parallel "
              "copies into/out of pre-allocated pair arrays, pair-merge is its merge alone\n",
              omp_get_max_threads(), detail::kStreamingStores ? "streaming" : "plain",
              detail::simd_merge_supported() ? "AVX-512 (simd_merge)" : "2-way merge, loser trees");
}


/// The workaround the paper compares against: columns copied into pair arrays, merged, copied back
/// out. The pair arrays are allocated once per size and first-touched in parallel outside the timed
/// region (allocating them per merge zero-fills on one thread: ~2 GB/s, which measured the allocator).
template <class K, class P>
class PairCopyMerge {
 public:
  using Pair = std::pair<K, P>;

  explicit PairCopyMerge(std::int64_t n) : in_(parallel_array<Pair>(n)), out_(parallel_array<Pair>(n)), n_(n) {}

  /// Seconds for copy-in + merge + copy-out; *merge_only gets the merge's share.
  double run(const std::vector<RunView<K, P>>& runs, K* out_keys, P* out_payloads, double* merge_only) {
    return seconds_of([&] {
      auto seqs = copy_in(runs);  // the merge advances the sequences
      *merge_only = seconds_of([&] {
        __gnu_parallel::multiway_merge(seqs.begin(), seqs.end(), out_.get(), n_,
                                       [](const Pair& a, const Pair& b) { return a.first < b.first; },
                                       __gnu_parallel::parallel_tag(omp_get_max_threads()));
      });
      copy_out(out_keys, out_payloads);
    });
  }

 private:
  std::vector<std::pair<Pair*, Pair*>> copy_in(const std::vector<RunView<K, P>>& runs) {
    std::vector<std::pair<Pair*, Pair*>> seqs;
    std::int64_t offset = 0;
    for (const auto& r : runs) {
      Pair* base = in_.get() + offset;
#pragma omp parallel for schedule(static)
      for (std::int64_t i = 0; i < r.size; ++i) base[i] = {r.keys[i], r.payloads[i]};
      seqs.emplace_back(base, base + r.size);
      offset += r.size;
    }
    return seqs;
  }

  void copy_out(K* out_keys, P* out_payloads) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n_; ++i) {
      out_keys[i] = out_[i].first;
      out_payloads[i] = out_[i].second;
    }
  }

  std::unique_ptr<Pair[]> in_, out_;
  std::int64_t n_;
};

/// Median seconds of `reps` pair-copy merges (after a warm-up) and, in *merge_only, of their merges.
template <class K, class P>
double median_pair_copy_merge(int reps, PairCopyMerge<K, P>& pairs, const std::vector<RunView<K, P>>& runs,
                              K* out_keys, P* out_payloads, double* merge_only) {
  std::vector<double> total_s, merge_s;
  double m = 0;
  pairs.run(runs, out_keys, out_payloads, &m);  // warm-up
  for (int i = 0; i < reps; ++i) {
    total_s.push_back(pairs.run(runs, out_keys, out_payloads, &m));
    merge_s.push_back(m);
  }
  std::sort(total_s.begin(), total_s.end());
  std::sort(merge_s.begin(), merge_s.end());
  *merge_only = merge_s[merge_s.size() / 2];
  return total_s[total_s.size() / 2];
}

template <class K>
bool parallel_is_sorted(const K* keys, std::int64_t n) {
  std::int64_t bad = 0;
#pragma omp parallel for reduction(+ : bad)
  for (std::int64_t i = 1; i < n; ++i) bad += keys[i] < keys[i - 1];
  return bad == 0;
}

template <class K, class P>
void bench_merge(const Options& o, std::int64_t n, std::vector<Row>& rows) {
  auto in_k = parallel_array<K>(n), out_k = parallel_array<K>(n);
  auto in_p = parallel_array<P>(n), out_p = parallel_array<P>(n);
  std::unique_ptr<PairCopyMerge<K, P>> pairs;
  if (o.pair) pairs = std::make_unique<PairCopyMerge<K, P>>(n);
  const double bytes = 2.0 * static_cast<double>(n) * (sizeof(K) + sizeof(P));
  const double memcpy_s = median_seconds(o.reps, [&] {
    parallel_copy(in_k.get(), out_k.get(), n);
    parallel_copy(in_p.get(), out_p.get(), n);
  });
  for (const int k : o.ks) {
    std::vector<RunView<K, P>> runs;
    for (int r = 0; r < k; ++r) {
      const std::int64_t b = n * r / k, e = n * (r + 1) / k;
      fill_sorted_run(in_k.get() + b, e - b, k, static_cast<std::uint64_t>(r) + 1);
#pragma omp parallel for schedule(static)
      for (std::int64_t i = b; i < e; ++i) in_p[i] = static_cast<P>(i);
      runs.push_back({in_k.get() + b, in_p.get() + b, e - b});
    }
    const std::span<const RunView<K, P>> view(runs);
    const double zip_s = median_seconds(o.reps, [&] { multiway_merge(view, out_k.get(), out_p.get()); });
    if (!parallel_is_sorted(out_k.get(), n)) {
      std::fprintf(stderr, "bench_host_merge: zip merge output is not sorted (k=%d)\n", k);
      std::exit(1);
    }
    double pair_gbs = 0, merge_only_gbs = 0;  // 0: not measured (--no-pair)
    if (pairs) {
      double merge_only_s = 0;
      const double pair_s = median_pair_copy_merge(o.reps, *pairs, runs, out_k.get(), out_p.get(), &merge_only_s);
      pair_gbs = bytes / pair_s / 1e9;
      merge_only_gbs = bytes / merge_only_s / 1e9;
    }
    rows.push_back({"merge", int(sizeof(K)), int(sizeof(P)), n, k, bytes / zip_s / 1e9, pair_gbs, merge_only_gbs,
                    bytes / memcpy_s / 1e9});
    if (!o.json) print_row(rows.back());
  }
}

/// __gnu_parallel::sort on zip iterators over two columns vs on a pair array (no copies timed): the
/// CPU join path sorts (key, payload) columns in place this way. "GB/s" = 2 x tuple bytes / time.
template <class K, class P>
void bench_sort(const Options& o, std::vector<Row>& rows) {
  const std::int64_t n = std::int64_t{1} << o.log2_sort;
  auto keys = parallel_array<K>(n);
  auto payloads = parallel_array<P>(n);
  std::vector<std::pair<K, P>> pairs(static_cast<std::size_t>(n));
  auto reset = [&] {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint64_t s = static_cast<std::uint64_t>(i);
      keys[i] = static_cast<K>(splitmix(s));
      payloads[i] = static_cast<P>(i);
      pairs[static_cast<std::size_t>(i)] = {keys[i], payloads[i]};
    }
  };
  auto timed = [&](const std::function<void()>& sort) {
    std::vector<double> t;
    for (int i = 0; i <= o.reps; ++i) {
      reset();
      const double s = seconds_of(sort);
      if (i > 0) t.push_back(s);  // first one is the warm-up
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const double zip_s = timed([&] {
    __gnu_parallel::sort(make_zip(keys.get(), payloads.get()), make_zip(keys.get() + n, payloads.get() + n), KeyLess{});
  });
  const double pair_s = timed([&] {
    __gnu_parallel::sort(pairs.begin(), pairs.end(),
                         [](const std::pair<K, P>& a, const std::pair<K, P>& b) { return a.first < b.first; });
  });
  const double bytes = 2.0 * static_cast<double>(n) * (sizeof(K) + sizeof(P));
  rows.push_back({"sort", int(sizeof(K)), int(sizeof(P)), n, 0, bytes / zip_s / 1e9, bytes / pair_s / 1e9, 0, 0});
  if (!o.json) print_row(rows.back());
}

void print_json(const std::vector<Row>& rows) {
  std::printf("{\"benchmark\": \"host_merge\", \"threads\": %d, \"results\": [", omp_get_max_threads());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    std::printf("%s\n  {\"op\": \"%s\", \"key_bytes\": %d, \"payload_bytes\": %d, \"tuples\": %lld, \"k\": %d, "
                "\"zip_gbps\": %.3f, \"pair_gbps\": %.3f, \"pair_merge_only_gbps\": %.3f, \"memcpy_gbps\": %.3f}",
                i ? "," : "", r.op.c_str(), r.key_bytes, r.payload_bytes, static_cast<long long>(r.n), r.k, r.zip_gbs,
                r.pair_gbs, r.pair_merge_only_gbs, r.memcpy_gbs);
  }
  std::printf("\n]}\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured, even if killed
  const Options o = parse(argc, argv);
  std::vector<Row> rows;
  if (!o.json) print_header();
  bench_merge<std::uint64_t, std::uint64_t>(o, std::int64_t{1} << o.log2_n8, rows);
  bench_merge<std::uint32_t, std::uint32_t>(o, std::int64_t{1} << o.log2_n4, rows);
  if (o.sort) {
    bench_sort<std::uint64_t, std::uint64_t>(o, rows);
    bench_sort<std::uint32_t, std::uint32_t>(o, rows);
  }
  if (o.json)
    print_json(rows);
  else
    print_footer();
  return 0;
}
