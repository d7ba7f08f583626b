// Transfer measurements for `mgjoin tune`. Not a hot path: it allocates its own buffers.
#include "topology/bandwidth.hpp"

#include "topology/numa_binding.hpp"

#include "alloc/backings.hpp"
#include "core/device.hpp"
#include "p2p/peer_access.hpp"

#include <mgjoin/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <cstdio>
#include <utility>

namespace mgjoin::topology {

namespace {

/// A device buffer of the measurement (alloc/ owns every CUDA allocation).
class DeviceBuffer {
 public:
  DeviceBuffer(int device, std::size_t bytes) : backing_(std::make_unique<alloc::DeviceBacking>(device, bytes)) {}
  char* data() const { return reinterpret_cast<char*>(backing_->base()); }

 private:
  std::unique_ptr<alloc::DeviceBacking> backing_;
};

// Pinned host memory on the GPU's NUMA node (pinning touches every page, so bind first).
class PinnedBuffer {
 public:
  PinnedBuffer(const Topology& t, int gpu, std::size_t bytes) {
    ScopedGpuNumaMemory near(t, gpu);
    backing_ = std::make_unique<alloc::PinnedHostBacking>(bytes);
  }
  char* data() const { return reinterpret_cast<char*>(backing_->base()); }

 private:
  std::unique_ptr<alloc::PinnedHostBacking> backing_;
};

/// Peer access among all n GPUs of the machine for as long as the measurement runs.
std::vector<int> all_devices(int n) {
  std::vector<int> ids(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = i;
  return ids;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

/// Everything one measurement needs: per GPU a stream, a pinned host buffer and a device buffer
/// of 2 x bytes (first half: source, second half: P2P destination).
class Bench {
 public:
  Bench(const Topology& t, const BandwidthOptions& o) : o_(o), n_(t.gpu_count()), peers_(all_devices(n_)) {
    for (int i = 0; i < n_; ++i) {
      streams_.emplace_back(i);
      back_streams_.emplace_back(i);
      host_.emplace_back(t, i, o.bytes);
      host_back_.emplace_back(t, i, o.bytes);
      device_.emplace_back(i, 2 * o.bytes);
    }
  }

  // Times `issue` (which enqueues copies on streams of device `d`) with events on stream `s`.
  template <class Issue>
  double seconds_on_stream(int d, Issue&& issue) {
    gpu::Event start(d), stop(d);
    std::vector<double> runs;
    for (int r = 0; r < o_.warmup + o_.repeats; ++r) {
      start.record(streams_[static_cast<std::size_t>(d)]);
      issue();
      stop.record(streams_[static_cast<std::size_t>(d)]);
      stop.synchronize();
      if (r >= o_.warmup) runs.push_back(stop.elapsed_ms_since(start) / 1e3);
    }
    return median(runs);
  }

  // Times copies on several devices at once: synchronized host clock around them.
  template <class Issue>
  double seconds_concurrent(Issue&& issue) {
    std::vector<double> runs;
    for (int r = 0; r < o_.warmup + o_.repeats; ++r) {
      synchronize_all();
      const auto t0 = std::chrono::steady_clock::now();
      issue();
      synchronize_all();
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      if (r >= o_.warmup) runs.push_back(dt.count());
    }
    return median(runs);
  }

  void h2d(int i, cudaStream_t s) {
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(dev(i), host(i), o_.bytes, cudaMemcpyHostToDevice, s));
  }
  void d2h(int i, cudaStream_t s) {
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(host(i), dev(i), o_.bytes, cudaMemcpyDeviceToHost, s));
  }
  // D2H of the device buffer's second half into a host buffer of its own, on a stream of its own:
  // runs beside h2d(i) without touching its buffers.
  void d2h_back(int i) {
    MGJOIN_CUDA_TRY(cudaMemcpyAsync(host_back_[static_cast<std::size_t>(i)].data(), dev(i) + o_.bytes, o_.bytes,
                                    cudaMemcpyDeviceToHost, back_streams_[static_cast<std::size_t>(i)]));
  }
  // Copies `bytes` from i's source half (at offset src_off) into j's destination half (at dst_off).
  void peer(int i, int j, std::size_t src_off, std::size_t dst_off, std::size_t bytes, cudaStream_t s) {
    MGJOIN_CUDA_TRY(cudaMemcpyPeerAsync(dev(j) + o_.bytes + dst_off, j, dev(i) + src_off, i, bytes, s));
  }

  cudaStream_t stream(int i) const { return streams_[static_cast<std::size_t>(i)]; }
  // One stream per (source, destination) pair, on the source GPU, so that a GPU's sends overlap.
  void make_pair_streams() {
    for (int a = 0; a < n_; ++a)
      for (int b = 0; b < n_; ++b) pair_streams_.emplace_back(a);
  }
  cudaStream_t pair_stream(int i, int j) const { return pair_streams_[static_cast<std::size_t>(i * n_ + j)]; }
  int n() const { return n_; }
  std::size_t bytes() const { return o_.bytes; }

 private:
  char* dev(int i) const { return device_[static_cast<std::size_t>(i)].data(); }
  char* host(int i) const { return host_[static_cast<std::size_t>(i)].data(); }
  void synchronize_all() {
    for (auto& s : streams_) s.synchronize();
    for (auto& s : back_streams_) s.synchronize();
    for (auto& s : pair_streams_) s.synchronize();
  }

  const BandwidthOptions& o_;
  int n_;
  p2p::PeerAccess peers_;
  std::vector<gpu::Stream> streams_, back_streams_;
  std::vector<PinnedBuffer> host_, host_back_;
  std::vector<DeviceBuffer> device_;
  std::vector<gpu::Stream> pair_streams_;
};

void report(const BandwidthOptions& o, const std::string& what, double value) {
  if (!o.progress) return;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: %.1f GB/s", what.c_str(), value);
  o.progress(buf);
}

void measure_host_links(Bench& b, const BandwidthOptions& o, MeasuredBandwidths& m) {
  const double bytes = static_cast<double>(b.bytes());
  for (int i = 0; i < b.n(); ++i) {
    m.h2d_alone.push_back(gbps(bytes, b.seconds_on_stream(i, [&] { b.h2d(i, b.stream(i)); })));
    report(o, "h2d GPU " + std::to_string(i), m.h2d_alone.back());
    m.d2h_alone.push_back(gbps(bytes, b.seconds_on_stream(i, [&] { b.d2h(i, b.stream(i)); })));
    report(o, "d2h GPU " + std::to_string(i), m.d2h_alone.back());
  }
  const double all_bytes = bytes * b.n();
  m.h2d_all = gbps(all_bytes, b.seconds_concurrent([&] {
    for (int i = 0; i < b.n(); ++i) b.h2d(i, b.stream(i));
  }));
  report(o, "h2d all GPUs at once", m.h2d_all);
  m.d2h_all = gbps(all_bytes, b.seconds_concurrent([&] {
    for (int i = 0; i < b.n(); ++i) b.d2h(i, b.stream(i));
  }));
  report(o, "d2h all GPUs at once", m.d2h_all);
  m.both_ways_all = gbps(2 * all_bytes, b.seconds_concurrent([&] {
    for (int i = 0; i < b.n(); ++i) {
      b.h2d(i, b.stream(i));
      b.d2h_back(i);
    }
  }));
  report(o, "h2d and d2h all GPUs at once, both summed", m.both_ways_all);
}

void measure_p2p_pairs(Bench& b, const BandwidthOptions& o, MeasuredBandwidths& m) {
  const int n = b.n();
  const double bytes = static_cast<double>(b.bytes());
  m.p2p_one_way.assign(static_cast<std::size_t>(n * n), 0);
  m.p2p_both_ways.assign(static_cast<std::size_t>(n * n), 0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const auto at = static_cast<std::size_t>(i * n + j);
      m.p2p_one_way[at] = gbps(bytes, b.seconds_on_stream(i, [&] { b.peer(i, j, 0, 0, b.bytes(), b.stream(i)); }));
      report(o, "p2p " + std::to_string(i) + " -> " + std::to_string(j), m.p2p_one_way[at]);
      if (j < i) {
        m.p2p_both_ways[at] = m.p2p_both_ways[static_cast<std::size_t>(j * n + i)];
        continue;
      }
      m.p2p_both_ways[at] = gbps(2 * bytes, b.seconds_concurrent([&] {
        b.peer(i, j, 0, 0, b.bytes(), b.stream(i));
        b.peer(j, i, 0, 0, b.bytes(), b.stream(j));
      }));
      report(o, "p2p " + std::to_string(i) + " <-> " + std::to_string(j) + " (both ways, total)", m.p2p_both_ways[at]);
    }
  }
}

// Every GPU sends bytes/n to every other GPU at once, each pair on its own stream.
void measure_all_to_all(Bench& b, const BandwidthOptions& o, MeasuredBandwidths& m) {
  const int n = b.n();
  for (int i = 0; i < n; ++i) m.all_to_all_set.push_back(i);
  if (n < 2) return;
  const std::size_t chunk = b.bytes() / static_cast<std::size_t>(n);
  b.make_pair_streams();
  const double total = static_cast<double>(chunk) * n * (n - 1);
  m.all_to_all = gbps(total, b.seconds_concurrent([&] {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j)
          b.peer(i, j, static_cast<std::size_t>(j) * chunk, static_cast<std::size_t>(i) * chunk, chunk,
                 b.pair_stream(i, j));
  }));
  report(o, "all-to-all among " + std::to_string(n) + " GPUs (aggregate)", m.all_to_all);
}

// Measured figures within this fraction of their class's median count as that median: run-to-run
// noise must not decide between GPUs that are wired alike (ties go to lower IDs).
constexpr double kSameWiringSpread = 0.10;

double snap_to(double measured, double class_median) {
  return std::abs(measured - class_median) <= kSameWiringSpread * class_median ? class_median : measured;
}

// One-way P2P figures of every pair wired like `like` (same kind, same number of NVLinks).
std::vector<double> same_class_p2p(const Topology& t, const MeasuredBandwidths& m, const Link& like) {
  std::vector<double> v;
  const int n = t.gpu_count();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const Link& l = t.link(i, j);
      const double g = m.p2p_one_way[static_cast<std::size_t>(i * n + j)];
      if (i != j && g > 0 && l.kind == like.kind && l.nvlinks == like.nvlinks) v.push_back(g);
    }
  return v;
}

}  // namespace

MeasuredBandwidths measure_bandwidths(const Topology& t, const BandwidthOptions& options) {
  MGJOIN_INPUT_EXPECTS(t.gpu_count() > 0, "no CUDA GPUs found: nothing to measure");
  MGJOIN_EXPECTS(options.bytes > 0 && options.repeats > 0, "bandwidth measurement needs bytes and repeats");
  Bench bench(t, options);
  MeasuredBandwidths m;
  measure_host_links(bench, options, m);
  measure_p2p_pairs(bench, options, m);
  measure_all_to_all(bench, options, m);
  return m;
}

Topology with_measured_bandwidths(Topology t, const MeasuredBandwidths& m) {
  const int n = t.gpu_count();
  if (static_cast<int>(m.h2d_alone.size()) != n) return t;
  std::vector<double> host(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::min(m.h2d_alone[i], m.d2h_alone[i]);
  const double host_median = median(host);
  for (std::size_t i = 0; i < host.size(); ++i) t.gpus[i].host_link_gbps = snap_to(host[i], host_median);
  if (m.p2p_one_way.size() != static_cast<std::size_t>(n * n)) return t;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double g = m.p2p_one_way[static_cast<std::size_t>(i * n + j)];
      if (i != j && g > 0) t.link(i, j).gbps = snap_to(g, median(same_class_p2p(t, m, t.link(i, j))));
    }
  return t;
}

}  // namespace mgjoin::topology
