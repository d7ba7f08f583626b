#include "engine/src/plan/cost_model.hpp"

#include <algorithm>
#include <numeric>

namespace mgjoin::detail {
namespace {

/// `measured` scaled from the machine's n GPUs to g, or g × the per-GPU default.
double scaled(double measured, int n, int g, double per_gpu_default, bool& defaulted) {
  if (measured > 0 && n > 0) return measured * std::min(g, n) / n;
  defaulted = true;
  return per_gpu_default * g;
}

double host_rate(double measured, double fallback, bool& defaulted) {
  if (measured > 0) return measured;
  defaulted = true;
  return fallback;
}

/// Whether `challenger` is faster than `incumbent` by more than the margin (kPaperMarginShare of the
/// incumbent, at least kPaperMarginSeconds).
bool faster_beyond_margin(double incumbent, double challenger) {
  return challenger + std::max(kPaperMarginShare * incumbent, kPaperMarginSeconds) < incumbent;
}

}  // namespace

Rates rates_for(const topology::MeasuredBandwidths* m, int g) {
  Rates r;
  const topology::MeasuredBandwidths none;
  const topology::MeasuredBandwidths& b = m ? *m : none;
  const int n = static_cast<int>(b.h2d_alone.size());
  bool pcie_default = false, host_default = false;
  r.h2d = scaled(b.h2d_all, n, g, kDefaultPcieGbps, pcie_default);
  r.d2h = scaled(b.d2h_all, n, g, kDefaultPcieGbps, pcie_default);
  if (b.both_ways_all > 0 || pcie_default) {
    r.both_ways = scaled(b.both_ways_all, n, g, kDefaultBothWaysGbps, pcie_default);
  } else {
    r.both_ways = kBothWaysShare * (r.h2d + r.d2h);
    pcie_default = true;
  }
  r.host_memcpy = host_rate(b.host_memcpy, kDefaultHostMemcpyGbps, host_default);
  r.cpu_merge = host_rate(b.cpu_merge, kDefaultCpuMergeGbps, host_default);
  r.cpu_gather = host_rate(b.cpu_gather, kDefaultCpuGatherGbps, host_default);
  r.source = !m ? "default rates: no tuning file"
             : pcie_default || host_default
                 ? std::string("tuning file, default ") + (pcie_default ? "PCIe" : "") +
                       (pcie_default && host_default ? " and " : "") + (host_default ? "host" : "") + " rates"
                 : "tuning file";
  return r;
}

double predict_seconds(const FlowTraffic& t, const Rates& rates) {
  const auto sec = [](std::uint64_t bytes, double gbps) { return bytes ? static_cast<double>(bytes) / (gbps * 1e9) : 0.0; };
  const double both = std::max({sec(t.in, rates.h2d), sec(t.out, rates.d2h), sec(t.in + t.out, rates.both_ways)});
  return both + sec(t.again, rates.h2d) + sec(t.merged, rates.cpu_merge) + sec(t.copied, rates.host_memcpy);
}

std::uint64_t moved_bytes(const RelationView& rel, bool payloads) {
  return rel.key.bytes() + (payloads && rel.payload ? rel.payload->bytes() : 0);
}

FlowTraffic copart_traffic(std::uint64_t moved, std::uint64_t bucket_bytes) {
  return {moved, bucket_bytes, bucket_bytes, 0, 0};
}

FlowTraffic passes_traffic(std::uint64_t in, std::uint64_t spilled) { return {in, spilled, 0, 0, 0}; }

FlowTraffic paper_traffic(const RelationView& r, const RelationView& s, const sort::SortPlan& plan) {
  const std::uint64_t tuples = moved_bytes(r, true) + moved_bytes(s, true);
  const std::uint64_t merged = (plan.k_r > 1 ? moved_bytes(r, true) : 0) + (plan.k_s > 1 ? moved_bytes(s, true) : 0);
  return {tuples, tuples, r.key.bytes() + s.key.bytes(), merged, merged};
}

bool paper_predicted_faster(double copart, double paper) { return faster_beyond_margin(copart, paper); }

bool passes_predicted_faster(double bucketed, double passes) { return faster_beyond_margin(bucketed, passes); }

}  // namespace mgjoin::detail
