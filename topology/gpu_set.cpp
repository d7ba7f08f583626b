// The GPU-set cost model and its search (model documented in gpu_set.hpp).
#include "topology/gpu_set.hpp"

#include "topology/tuning_file.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <map>

namespace mgjoin::topology {

namespace {

constexpr double kPcieVolume = 2.5;          // input bytes over host links: sort H2D, sorted D2H, keys H2D
constexpr double kComputeGbpsPerGpu = 150;   // on-GPU sort + join throughput of one GPU
constexpr double kTieTolerance = 1e-9;       // relative: costs this close are a tie
constexpr double kMaxEnumeratedSets = 2e6;   // beyond this, grow the set greedily

int home_socket(const Topology& t, const std::vector<int>& set) {
  std::map<int, int> count;
  for (int i : set) ++count[t.gpus[static_cast<std::size_t>(i)].package];
  int best = -1, best_count = -1;
  for (const auto& [pkg, c] : count)
    if (c > best_count) best = pkg, best_count = c;  // map order: ties go to the lower socket
  return best;
}

bool off_socket(const Gpu& gpu, int home) { return gpu.package >= 0 && home >= 0 && gpu.package != home; }

double host_seconds(const Topology& t, const std::vector<int>& set, int remote) {
  const double g = static_cast<double>(set.size());
  double worst = 0;
  std::map<int, int> per_uplink;
  for (int i : set) {
    const Gpu& gpu = t.gpus[static_cast<std::size_t>(i)];
    worst = std::max(worst, (1 / g) / gpu.host_link_gbps);
    ++per_uplink[gpu.uplink];
  }
  for (const auto& [u, k] : per_uplink)
    if (u >= 0) worst = std::max(worst, (k / g) / t.uplinks[static_cast<std::size_t>(u)].gbps);
  if (remote > 0 && t.inter_socket_gbps > 0) worst = std::max(worst, (remote / g) / t.inter_socket_gbps);
  return worst;
}

double exchange_seconds(const Topology& t, const std::vector<int>& set, int home) {
  const double g = static_cast<double>(set.size());
  if (set.size() < 2) return 0;
  double worst_gbps = std::numeric_limits<double>::infinity();
  int crossing_pairs = 0;  // ordered pairs from the home socket to another one, not over NVLink
  for (int a : set) {
    for (int b : set) {
      if (a == b) continue;
      const Link& l = t.link(a, b);
      worst_gbps = std::min(worst_gbps, l.gbps);
      const bool nvlink = l.kind == LinkKind::NvLink || l.kind == LinkKind::NvSwitch;
      if (!nvlink && !off_socket(t.gpus[static_cast<std::size_t>(a)], home) &&
          off_socket(t.gpus[static_cast<std::size_t>(b)], home))
        ++crossing_pairs;
    }
  }
  double seconds = ((g - 1) / (g * g)) / worst_gbps;
  if (crossing_pairs > 0 && t.inter_socket_gbps > 0)
    seconds = std::max(seconds, (crossing_pairs / (g * g)) / t.inter_socket_gbps);
  return seconds;
}

struct Ranked {
  std::vector<int> set;
  SetCost cost;
};

bool better(const Ranked& a, const Ranked& b) {
  const double scale = std::max(a.cost.total, b.cost.total);
  if (std::abs(a.cost.total - b.cost.total) > kTieTolerance * scale) return a.cost.total < b.cost.total;
  if (a.cost.off_home_socket != b.cost.off_home_socket) return a.cost.off_home_socket < b.cost.off_home_socket;
  return a.set < b.set;
}

double binomial(int n, int k) {
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

// Calls f on every ascending g-subset of {0..n-1}, in lexicographic order.
template <class F>
void for_each_subset(int n, int g, F&& f) {
  std::vector<int> s(static_cast<std::size_t>(g));
  for (int i = 0; i < g; ++i) s[static_cast<std::size_t>(i)] = i;
  while (true) {
    f(s);
    int i = g - 1;
    while (i >= 0 && s[static_cast<std::size_t>(i)] == n - g + i) --i;
    if (i < 0) return;
    ++s[static_cast<std::size_t>(i)];
    for (int k = i + 1; k < g; ++k) s[static_cast<std::size_t>(k)] = s[static_cast<std::size_t>(k - 1)] + 1;
  }
}

// For machines too large to enumerate: add, one at a time, the GPU that keeps the set cheapest.
std::vector<int> grow_greedily(const Topology& t, int g) {
  std::vector<int> set;
  for (int step = 0; step < g; ++step) {
    Ranked best{{}, {std::numeric_limits<double>::infinity(), 0, 0, std::numeric_limits<double>::infinity(), 0}};
    for (int c = 0; c < t.gpu_count(); ++c) {
      if (std::find(set.begin(), set.end(), c) != set.end()) continue;
      auto candidate = set;
      candidate.insert(std::upper_bound(candidate.begin(), candidate.end(), c), c);
      Ranked r{candidate, estimate_set_cost(t, candidate)};
      if (best.set.empty() || better(r, best)) best = std::move(r);
    }
    set = best.set;
  }
  return set;
}

void check_gpu_count(const Topology& t, int g) {
  MGJOIN_INPUT_EXPECTS(g >= 1 && g <= t.gpu_count(), "JoinOptions::gpus " + std::to_string(g) + ": this machine has " +
                                                          std::to_string(t.gpu_count()) + " GPU(s)");
}

bool valid_set(const Topology& t, const std::vector<int>& set, int g) {
  if (static_cast<int>(set.size()) != g) return false;
  for (int i : set)
    if (i < 0 || i >= t.gpu_count()) return false;
  return std::adjacent_find(set.begin(), set.end(), std::greater_equal<>()) == set.end();
}

}  // namespace

SetCost estimate_set_cost(const Topology& t, const std::vector<int>& set) {
  MGJOIN_EXPECTS(!set.empty(), "a GPU set has at least one GPU");
  SetCost c;
  const int home = home_socket(t, set);
  for (int i : set) c.off_home_socket += off_socket(t.gpus[static_cast<std::size_t>(i)], home) ? 1 : 0;
  c.host_seconds = host_seconds(t, set, c.off_home_socket);
  c.exchange_seconds = exchange_seconds(t, set, home);
  c.compute_seconds = (1.0 / static_cast<double>(set.size())) / kComputeGbpsPerGpu;
  c.total = kPcieVolume * c.host_seconds + c.exchange_seconds + c.compute_seconds;
  return c;
}

std::vector<std::vector<int>> rank_gpu_sets(const Topology& t, int g, int max_sets) {
  check_gpu_count(t, g);
  if (binomial(t.gpu_count(), g) > kMaxEnumeratedSets) return {grow_greedily(t, g)};
  std::vector<Ranked> all;
  for_each_subset(t.gpu_count(), g, [&](const std::vector<int>& s) { all.push_back({s, estimate_set_cost(t, s)}); });
  std::stable_sort(all.begin(), all.end(), better);
  std::vector<std::vector<int>> out;
  for (std::size_t i = 0; i < all.size() && static_cast<int>(i) < max_sets; ++i) out.push_back(all[i].set);
  return out;
}

std::vector<int> choose_gpu_set(const Topology& t, int g, const TuningFile* tuning) {
  check_gpu_count(t, g);
  if (tuning && tuning->machine == fingerprint_of(t)) {
    if (const TuningChoice* c = tuning->best_for(g); c && valid_set(t, c->gpus, g)) return c->gpus;
  }
  return rank_gpu_sets(t, g, 1).front();
}

}  // namespace mgjoin::topology
