#include "engine/src/copart/splitters.hpp"

#include "core/dispatch.hpp"

#include <mgjoin/error.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace mgjoin::copart {
namespace {

template <class Key>
std::uint64_t to_ordered(Key k) {
  using U = std::make_unsigned_t<Key>;
  auto u = static_cast<U>(k);
  if constexpr (std::is_signed_v<Key>) u ^= U(1) << (sizeof(U) * 8 - 1);
  return static_cast<std::uint64_t>(u);
}

/// One distinct sampled key with the tuples it stands for on each side.
struct KeyWeight {
  std::uint64_t key;
  double r, s;
  double total() const { return r + s; }
};

/// Distinct keys of both sorted samples in ascending order with their weights.
std::vector<KeyWeight> weigh(const KeySample& r, const KeySample& s) {
  std::vector<KeyWeight> out;
  const double wr = r.weight(), ws = s.weight();
  std::size_t i = 0, j = 0;
  while (i < r.keys.size() || j < s.keys.size()) {
    const std::uint64_t k = (j == s.keys.size() || (i < r.keys.size() && r.keys[i] <= s.keys[j])) ? r.keys[i] : s.keys[j];
    KeyWeight kw{k, 0, 0};
    for (; i < r.keys.size() && r.keys[i] == k; ++i) kw.r += wr;
    for (; j < s.keys.size() && s.keys[j] == k; ++j) kw.s += ws;
    out.push_back(kw);
  }
  return out;
}

/// Walks the weighted keys in order and fills the GPUs one after the other.
class PlanBuilder {
 public:
  /// `shares[d]`: destination d's part of `total` (empty: equal parts).
  PlanBuilder(int gpus, double total, const PlanOptions& options, std::span<const double> shares) : options_(options) {
    plan_.gpus = gpus;
    double sum = 0;
    for (const double w : shares) sum += w;
    for (int d = 0; d < gpus; ++d)
      targets_.push_back(shares.empty() ? total / gpus : total * shares[static_cast<std::size_t>(d)] / sum);
    std::fill(std::begin(plan_.upper), std::end(plan_.upper), std::numeric_limits<std::uint64_t>::max());
  }

  void add(const KeyWeight& k) {
    const double w = k.total();
    if (last_gpu()) {
      load_ += w;
    } else if (w > room() && w > options_.hot_fraction * target()) {
      add_hot(k);
    } else {
      // A key goes whole to the next GPU when more than half of it would not fit here.
      if (load_ > 0 && load_ + w / 2 > target()) close();
      load_ += w;
    }
    previous_ = k.key;
    any_ = true;
  }

  PartitionPlan finish() { return plan_; }

 private:
  bool last_gpu() const { return gpu_ == plan_.gpus - 1; }
  /// What destination d (default: the one being filled) should receive.
  double target(int d = -1) const { return targets_[static_cast<std::size_t>(d < 0 ? gpu_ : std::min(d, plan_.gpus - 1))]; }
  double room() const { return std::max(0.0, target() - load_); }

  /// GPU gpu_ takes no key above the last one added.
  void close() {
    plan_.upper[gpu_] = any_ ? previous_ : 0;
    ++gpu_;
    load_ = 0;
  }

  /// Spreads the heavier side of `k` over GPUs from gpu_ on, each taking what room it has, and
  /// replicates the lighter side to every GPU of the run.
  void add_hot(const KeyWeight& k) {
    const Side split = k.s >= k.r ? Side::S : Side::R;
    const double w_split = split == Side::S ? k.s : k.r;
    const double w_copy = split == Side::S ? k.r : k.s;
    // Each GPU of the run holds the replicated side whole and fills the rest of its room with the split
    // side; where the replicated side leaves no room (both sides huge: the output is |R|·|S| anyway) it
    // still takes a quarter of a share, overfilling.
    const double little = 0.02 * target();
    const auto take_on = [&](double room_here, int d) { return room_here - w_copy > little ? room_here - w_copy : target(d) / 4; };
    std::vector<double> shares;
    double left = w_split;
    double room_here = room();
    if (room_here - w_copy <= little && load_ > 0) {
      close();
      room_here = target();
    }
    while (left > 0) {
      const int d = gpu_ + static_cast<int>(shares.size());
      const bool last = d == plan_.gpus - 1;
      const double take = last ? left : std::min(left, take_on(room_here, d));
      shares.push_back(take);
      left -= take;
      room_here = target(d + 1);
    }
    if (shares.size() == 1) {  // fits where it falls after all
      load_ += k.total();
      return;
    }
    HotKey& hot = plan_.hot[plan_.hot_count++];
    hot.key = k.key;
    hot.first = gpu_;
    hot.span = static_cast<int>(shares.size());
    hot.split_side = split;
    double cumulative = 0;
    for (int i = 0; i < hot.span; ++i) {
      cumulative += shares[i];
      hot.cut[i] = i == hot.span - 1 ? kShareUnits
                                     : static_cast<std::uint32_t>(std::llround(cumulative / w_split * kShareUnits));
    }
    for (int i = 0; i < hot.span - 1; ++i) plan_.upper[gpu_ + i] = k.key;
    gpu_ += hot.span - 1;
    load_ = w_copy + shares.back();
  }

  PartitionPlan plan_;
  std::vector<double> targets_;
  PlanOptions options_;
  int gpu_ = 0;
  double load_ = 0;
  std::uint64_t previous_ = 0;
  bool any_ = false;
};

/// Six standard deviations of a count estimated from a sample of m rows standing for n rows, of which
/// a fraction p falls on a GPU; zero when every row was sampled.
double sampling_margin(const KeySample& sample, double p) {
  if (sample.exact() || sample.keys.empty()) return 0;
  const double m = static_cast<double>(sample.keys.size());
  return 6 * static_cast<double>(sample.rows) * std::sqrt(std::max(p * (1 - p), 1.0 / m) / m);
}

}  // namespace

std::uint64_t ordered_key(const ColumnView& keys, std::int64_t row) {
  return dispatch_key_type(keys.type, [&](auto key) {
    using Key = decltype(key);
    return to_ordered(static_cast<const Key*>(keys.data)[row]);
  });
}

KeySample sample_keys(const ColumnView& keys, std::int64_t samples, std::uint64_t seed) {
  KeySample out;
  out.rows = keys.size;
  if (keys.size == 0 || samples <= 0) return out;
  const std::int64_t m = std::min(samples, keys.size);
  out.keys.resize(static_cast<std::size_t>(m));
  dispatch_key_type(keys.type, [&](auto key) {
    using Key = decltype(key);
    const Key* data = static_cast<const Key*>(keys.data);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < m; ++i) {
      // Stratum i is rows [i*n/m, (i+1)*n/m); a hash of (seed, i) picks the row inside it.
      const auto lo = static_cast<std::int64_t>(static_cast<__int128>(i) * keys.size / m);
      const auto hi = static_cast<std::int64_t>(static_cast<__int128>(i + 1) * keys.size / m);
      const std::uint64_t h = static_cast<std::uint64_t>(row_share_hash(seed * 0x100000001b3ull + i)) << 16 |
                              row_share_hash(~seed + static_cast<std::uint64_t>(i));
      const std::int64_t row = lo + static_cast<std::int64_t>(h % static_cast<std::uint64_t>(hi - lo));
      out.keys[static_cast<std::size_t>(i)] = to_ordered(data[row]);
    }
  });
  std::sort(out.keys.begin(), out.keys.end());
  return out;
}

PartitionPlan choose_plan(const KeySample& r, const KeySample& s, int gpus, const PlanOptions& options,
                          std::span<const double> shares) {
  MGJOIN_EXPECTS(gpus >= 1 && gpus <= kMaxGpus, "the co-partitioned flow takes 1 to 16 GPUs");
  MGJOIN_EXPECTS(shares.empty() || (static_cast<int>(shares.size()) == gpus &&
                                    std::all_of(shares.begin(), shares.end(), [](double w) { return w > 0; })),
                 "choose_plan: one positive share per destination");
  const std::vector<KeyWeight> keys = weigh(r, s);
  double total = 0;
  for (const auto& k : keys) total += k.total();
  PlanBuilder builder(gpus, std::max(total, 1.0), options, shares);
  for (const auto& k : keys) builder.add(k);
  return builder.finish();
}

PartitionSizes estimate_sizes(const PartitionPlan& plan, const KeySample& r, const KeySample& s) {
  PartitionSizes sizes;
  const KeySample* samples[2] = {&r, &s};
  if (plan.gpus == 1) {  // one GPU takes every row (no hot key spans one GPU): its sizes are exact
    for (int side = 0; side < 2; ++side) sizes.estimate[side] = sizes.bound[side] = {samples[side]->rows};
    return sizes;
  }
  for (int side = 0; side < 2; ++side) {
    const KeySample& sample = *samples[side];
    std::vector<double> est(plan.gpus, 0.0);
    for (const std::uint64_t key : sample.keys) {
      const Destinations d = destinations(plan, static_cast<Side>(side), key, 0);
      const HotKey* hot = nullptr;
      for (int h = 0; h < plan.hot_count; ++h)
        if (plan.hot[h].key == key) hot = &plan.hot[h];
      if (hot && hot->split_side == static_cast<Side>(side)) {
        // Spread by the shares of the hash, not by the one row 0 hashes to.
        std::uint32_t below = 0;
        for (int i = 0; i < hot->span; ++i) {
          est[hot->first + i] += sample.weight() * (hot->cut[i] - below) / kShareUnits;
          below = hot->cut[i];
        }
        continue;
      }
      for (int i = 0; i < d.count; ++i) est[d.first + i] += sample.weight();
    }
    // A hot key's copied side goes to every GPU of its run whether the sample caught a row of it or
    // not: the chunk buffers hold that many copies of every row (the kernels write without a check).
    for (int h = 0; h < plan.hot_count; ++h)
      if (plan.hot[h].split_side != static_cast<Side>(side))
        sizes.max_copies[side] = std::max(sizes.max_copies[side], plan.hot[h].span);
    for (int g = 0; g < plan.gpus; ++g) {
      const double p = sample.rows > 0 ? std::min(1.0, est[g] / static_cast<double>(sample.rows)) : 0;
      // The hash split of a hot key adds a binomial spread: covered by 6 sqrt(estimate).
      const double margin = sample.exact() && plan.hot_count == 0
                                ? 0
                                : sampling_margin(sample, p) + 0.01 * est[g] + 6 * std::sqrt(est[g]) + 1024;
      sizes.estimate[side].push_back(std::llround(est[g]));
      sizes.bound[side].push_back(std::llround(est[g] + margin));
    }
  }
  return sizes;
}

KeySample group_sample(const KeySample& sample, Side side, const PartitionPlan& groups, int q, std::int64_t rows) {
  KeySample out;
  out.rows = rows;
  for (std::size_t i = 0; i < sample.keys.size();) {
    const std::uint64_t key = sample.keys[i];
    std::size_t end = i;
    while (end < sample.keys.size() && sample.keys[end] == key) ++end;
    const Destinations d = destinations(groups, side, key, 0);
    const HotKey* hot = nullptr;
    for (int h = 0; h < groups.hot_count; ++h)
      if (groups.hot[h].key == key && groups.hot[h].split_side == side) hot = &groups.hot[h];
    for (std::size_t j = i; j < end; ++j) {
      bool here = q >= d.first && q < d.first + d.count;
      if (hot) {
        // The j-th of c copies of a split key stands for the share of the hash at (j + 1/2) / c.
        const auto u = static_cast<std::uint32_t>((static_cast<double>(j - i) + 0.5) / static_cast<double>(end - i) * kShareUnits);
        int k = 0;
        while (k < hot->span - 1 && u >= hot->cut[k]) ++k;
        here = hot->first + k == q;
      }
      if (here) out.keys.push_back(key);
    }
    i = end;
  }
  return out;
}

}  // namespace mgjoin::copart
