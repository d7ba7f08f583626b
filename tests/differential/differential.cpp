// Differential harness: draws join cases from a seed (sizes, key widths and signedness, payload widths,
// key distributions, GPU counts, flows, sorts, exchanges, memory limits, output forms), runs each
// through the public API and compares it with an independent reference: a hash map from key bits to R's
// payloads, counted and expanded pair by pair. Materialized and ranges outputs are compared as multisets
// of (key, R payload, S payload) by an order-independent hash, and also tuple by tuple when small.
//
//   differential --cases 10000 [--seed S] [--gpus-max G] [--minutes M] [--case K] [--max-rows N]
//                [--gpu-memory-limit-mib M] [--shard I/N]
//
// Prints the seed; a failing case prints its number and description, and `--seed S --case K` (with the
// same --gpus-max and --max-rows) replays it alone. --max-rows caps each relation's rows and
// --gpu-memory-limit-mib the GPU memory of cases that draw no limit, for runs under compute-sanitizer
// (scripts/device-sanitize.sh), whose initcheck shadows every byte the engine allocates. --shard I/N runs
// only the cases k with k % N == I, so that N processes side by side (each with its own
// --gpu-memory-limit-mib) share one seed's cases on a machine's cores and GPUs. Exit status 1
// when any case mismatches or throws.
#include <mgjoin/engine.hpp>
#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace {

using namespace mgjoin;

/// Largest output the harness materializes; larger cases fall back to a count.
constexpr std::uint64_t kMaxOutputRows = 3'000'000;
/// Outputs at most this large are also compared tuple by tuple.
constexpr std::uint64_t kSortedCompareRows = 200'000;

enum class Dist { Dense, FullRange, Zipf, HotKey, AllEqual, SharedTopBits, Sorted, Reverse, Extremes };
const char* dist_name(Dist d) {
  static const char* names[] = {"dense", "full-range", "zipf", "hot-key", "all-equal", "shared-top-bits",
                                "sorted", "reverse", "extremes"};
  return names[static_cast<int>(d)];
}

struct Case {
  std::uint64_t seed = 0;
  std::int64_t r_rows = 0, s_rows = 0;
  DType key = DType::UInt64;
  int r_payload = 0, s_payload = 0;  ///< bytes: 0, 4 or 8
  Dist dist = Dist::Dense;
  double zipf = 1, domain_factor = 1;
  int gpus = 0;
  std::uint64_t memory_limit = 0;
  JoinOptions options;

  std::string describe() const {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "R %lld x S %lld rows, key %s, payloads %d/%d bytes, %s (zipf %.1f, domain x%.2f), gpus %d, "
                  "limit %llu MiB, %s, %s sort, %s exchange, payloads %s, output %s",
                  static_cast<long long>(r_rows), static_cast<long long>(s_rows), std::string(dtype_name(key)).c_str(),
                  r_payload, s_payload, dist_name(dist), zipf, domain_factor, gpus,
                  static_cast<unsigned long long>(memory_limit >> 20), strategy_name(options.strategy),
                  options.sort == SortStrategy::Merge ? "merge" : "radix",
                  options.exchange == Exchange::Nccl ? "nccl" : "copy",
                  options.payloads == PayloadFlow::Late ? "late" : options.payloads == PayloadFlow::Carry ? "carry" : "auto",
                  options.output == OutputMode::Count ? "count" : options.output == OutputMode::Ranges ? "ranges" : "materialize");
    return buf;
  }
};

template <class T>
T pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  std::uniform_int_distribution<std::size_t> d(0, values.size() - 1);
  return *(values.begin() + d(rng));
}

bool power_of_two(int g) { return g > 0 && (g & (g - 1)) == 0; }

/// Rows: mostly small (where the edge cases live), sometimes up to a few hundred thousand.
std::int64_t draw_rows(std::mt19937_64& rng) {
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0: return std::uniform_int_distribution<std::int64_t>(0, 2)(rng);
    case 1: case 2: case 3: return std::uniform_int_distribution<std::int64_t>(3, 1000)(rng);
    case 4: case 5: case 6: return std::uniform_int_distribution<std::int64_t>(1000, 30'000)(rng);
    case 7: case 8: return std::uniform_int_distribution<std::int64_t>(30'000, 200'000)(rng);
    default: return std::uniform_int_distribution<std::int64_t>(200'000, 600'000)(rng);
  }
}

Case draw_case(std::uint64_t seed, int gpus_max, std::int64_t max_rows) {
  std::mt19937_64 rng(seed);
  Case c;
  c.seed = seed;
  c.r_rows = std::min(draw_rows(rng), max_rows);
  c.s_rows = std::min(draw_rows(rng), max_rows);
  c.key = pick(rng, {DType::Int32, DType::UInt32, DType::Int64, DType::UInt64});
  c.r_payload = pick(rng, {0, 4, 8, 8});
  c.s_payload = pick(rng, {0, 4, 8, 8});
  c.dist = static_cast<Dist>(std::uniform_int_distribution<int>(0, 8)(rng));
  c.zipf = pick(rng, {0.5, 1.0, 1.5});
  c.domain_factor = pick(rng, {0.25, 1.0, 4.0});
  if (c.dist == Dist::AllEqual) {  // every pair matches: keep the output bounded
    c.r_rows = std::min<std::int64_t>(c.r_rows, 1500);
    c.s_rows = std::min<std::int64_t>(c.s_rows, 1500);
  }
  c.gpus = std::uniform_int_distribution<int>(0, gpus_max)(rng);
  JoinOptions& o = c.options;
  o.output = pick(rng, {OutputMode::Count, OutputMode::Ranges, OutputMode::Materialize, OutputMode::Materialize});
  o.strategy = pick(rng, {JoinStrategy::Auto, JoinStrategy::Paper, JoinStrategy::CoPartitioned});
  if (o.strategy == JoinStrategy::CoPartitioned && o.output == OutputMode::Ranges) o.strategy = JoinStrategy::Paper;
  o.sort = power_of_two(c.gpus) ? pick(rng, {SortStrategy::Radix, SortStrategy::Merge}) : SortStrategy::Radix;
  o.exchange = c.gpus >= 2 && std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? Exchange::Nccl : Exchange::CopyEngines;
  o.payloads = pick(rng, {PayloadFlow::Auto, PayloadFlow::Carry, PayloadFlow::Late});
  // A tight memory limit sends the paper flow out of core (several chunksets, the CPU merge) and the
  // co-partitioned flow into bucket groups (72 MiB: 8 MiB beside its slack holds no large relation).
  if (c.gpus > 0 && o.strategy != JoinStrategy::CoPartitioned && std::uniform_int_distribution<int>(0, 3)(rng) == 0)
    c.memory_limit = pick(rng, {std::uint64_t{72} << 20, std::uint64_t{96} << 20, std::uint64_t{256} << 20});
  // Bucket groups: a count of relations too large for 8 MiB beside the co-partitioned flow's slack, in
  // core or streamed (a materialized join's output windows alone need more than 72 MiB).
  if (c.gpus > 0 && o.strategy == JoinStrategy::Auto && o.output == OutputMode::Count &&
      std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
    c.memory_limit = std::uint64_t{72} << 20;
    c.r_rows = std::min<std::int64_t>(std::max<std::int64_t>(c.r_rows, 250'000), max_rows);
    c.s_rows = std::min<std::int64_t>(std::max<std::int64_t>(c.s_rows, 250'000), max_rows);
  }
  return c;
}

std::uint64_t width_mask(DType t) { return dtype_size(t) == 4 ? 0xffffffffull : ~0ull; }

std::vector<std::uint64_t> draw_keys(const Case& c, std::int64_t n, std::uint64_t domain, std::mt19937_64& rng,
                                     const std::vector<double>& zipf_cdf, std::uint64_t hot, std::uint64_t top) {
  std::vector<std::uint64_t> k(static_cast<std::size_t>(n));
  const std::uint64_t mask = width_mask(c.key);
  std::uniform_int_distribution<std::uint64_t> in_domain(0, domain - 1);
  // Spread domain values over the key's width (an odd multiplier is a bijection mod 2^w).
  const auto spread = [&](std::uint64_t v) { return (v * 0x9E3779B97F4A7C15ull) & mask; };
  std::uniform_real_distribution<double> unit(0, 1);
  for (auto& x : k) {
    switch (c.dist) {
      case Dist::Dense: case Dist::Sorted: case Dist::Reverse: x = in_domain(rng) & mask; break;
      case Dist::FullRange: x = rng() & mask; break;
      case Dist::Zipf: {
        const auto at = std::lower_bound(zipf_cdf.begin(), zipf_cdf.end(), unit(rng)) - zipf_cdf.begin();
        x = spread(static_cast<std::uint64_t>(std::min<std::ptrdiff_t>(at, static_cast<std::ptrdiff_t>(zipf_cdf.size()) - 1)));
        break;
      }
      case Dist::HotKey: x = unit(rng) < 0.4 ? hot : spread(in_domain(rng)); break;
      case Dist::AllEqual: x = hot; break;
      case Dist::SharedTopBits: x = (top | (in_domain(rng) & 0xffff)) & mask; break;
      case Dist::Extremes: {
        const std::uint64_t sign = dtype_size(c.key) == 4 ? 0x80000000ull : 0x8000000000000000ull;
        x = pick(rng, {std::uint64_t{0}, std::uint64_t{1}, mask, mask - 1, sign, sign - 1, sign + 1}) & mask;
        break;
      }
    }
  }
  if (c.dist == Dist::Sorted || c.dist == Dist::Reverse) {
    // Sorted in the key's own order (signed keys as signed).
    const bool is_signed = c.key == DType::Int32 || c.key == DType::Int64;
    const std::uint64_t flip = !is_signed ? 0 : dtype_size(c.key) == 4 ? 0x80000000ull : 0x8000000000000000ull;
    std::sort(k.begin(), k.end(), [&](std::uint64_t a, std::uint64_t b) { return (a ^ flip) < (b ^ flip); });
    if (c.dist == Dist::Reverse) std::reverse(k.begin(), k.end());
  }
  return k;
}

HostColumn column_of(DType type, const std::vector<std::uint64_t>& values) {
  HostColumn col = HostColumn::allocate(type, static_cast<std::int64_t>(values.size()));
  const std::size_t w = dtype_size(type);
  for (std::size_t i = 0; i < values.size(); ++i) std::memcpy(col.as<char>() + i * w, &values[i], w);
  return col;
}

std::uint64_t read(const HostColumn& col, std::int64_t i) {
  std::uint64_t v = 0;
  std::memcpy(&v, col.as<char>() + static_cast<std::size_t>(i) * dtype_size(col.type()), dtype_size(col.type()));
  return v;
}

DType payload_type(int bytes) { return bytes == 4 ? DType::UInt32 : DType::UInt64; }

struct Inputs {
  Relation r, s;
};

Inputs make_inputs(const Case& c) {
  std::mt19937_64 rng(c.seed ^ 0x5DEECE66Dull);
  const auto larger = static_cast<std::uint64_t>(std::max<std::int64_t>({c.r_rows, c.s_rows, 1}));
  const std::uint64_t domain = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(larger * c.domain_factor));
  std::vector<double> cdf;
  if (c.dist == Dist::Zipf) {
    cdf.resize(std::min<std::uint64_t>(domain, 1'000'000));
    double sum = 0;
    for (std::size_t i = 0; i < cdf.size(); ++i) cdf[i] = sum += 1.0 / std::pow(static_cast<double>(i + 1), c.zipf);
    for (auto& x : cdf) x /= sum;
  }
  const std::uint64_t hot = rng() & width_mask(c.key);
  const std::uint64_t top = rng() & width_mask(c.key) & ~0xffffull;
  Inputs in;
  const auto relation = [&](std::int64_t n, int payload_bytes, std::uint64_t tag) {
    Relation rel{column_of(c.key, draw_keys(c, n, domain, rng, cdf, hot, top)), std::nullopt};
    if (payload_bytes) {
      std::vector<std::uint64_t> p(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < p.size(); ++i) p[i] = (tag << 28) + i;  // identifies the row
      rel.payload = column_of(payload_type(payload_bytes), p);
    }
    return rel;
  };
  in.r = relation(c.r_rows, c.r_payload, 1);
  in.s = relation(c.s_rows, c.s_payload, 2);
  return in;
}

Relation copy_of(const Relation& rel) {
  Relation out{HostColumn::allocate(rel.key.type(), rel.key.size()), std::nullopt};
  std::memcpy(out.key.data(), rel.key.data(), rel.key.bytes());
  if (rel.payload) {
    out.payload = HostColumn::allocate(rel.payload->type(), rel.payload->size());
    std::memcpy(out.payload->data(), rel.payload->data(), rel.payload->bytes());
  }
  return out;
}

/// An order-independent hash of a tuple multiset: the sum of a strong mix of each tuple.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
std::uint64_t tuple_hash(std::uint64_t key, std::uint64_t rp, std::uint64_t sp) {
  return mix(key ^ mix(rp ^ mix(sp)));
}

struct Tuple {
  std::uint64_t key, rp, sp;
  friend bool operator<(const Tuple& a, const Tuple& b) {
    return std::tie(a.key, a.rp, a.sp) < std::tie(b.key, b.rp, b.sp);
  }
  friend bool operator==(const Tuple&, const Tuple&) = default;
};

/// The reference: R's payloads by key bits; the count, the multiset hash and (small) the tuples.
struct Reference {
  std::uint64_t count = 0, hash = 0;
  std::vector<Tuple> tuples;
};

Reference reference(const Relation& r, const Relation& s, bool expand) {
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> by_key;
  for (std::int64_t i = 0; i < r.key.size(); ++i)
    by_key[read(r.key, i)].push_back(r.payload ? read(*r.payload, i) : 0);
  Reference ref;
  for (std::int64_t j = 0; j < s.key.size(); ++j) {
    const auto it = by_key.find(read(s.key, j));
    if (it == by_key.end()) continue;
    ref.count += it->second.size();
    if (!expand) continue;
    const std::uint64_t sp = s.payload ? read(*s.payload, j) : 0;
    for (const std::uint64_t rp : it->second) {
      ref.hash += tuple_hash(it->first, rp, sp);
      if (ref.count <= kSortedCompareRows) ref.tuples.push_back({it->first, rp, sp});
    }
  }
  return ref;
}

/// The engine's output as the same multiset (ranges expand over the inputs it sorted in place).
Reference observed(const JoinResult& res, const Relation& r_sorted, const Relation& s_sorted, OutputMode output,
                   std::string& problem) {
  Reference seen;
  seen.count = res.count;
  const auto add = [&](std::uint64_t key, std::uint64_t rp, std::uint64_t sp, std::uint64_t n) {
    seen.hash += tuple_hash(key, rp, sp);
    if (n <= kSortedCompareRows) seen.tuples.push_back({key, rp, sp});
  };
  if (output == OutputMode::Materialize) {
    if (res.key.size() != static_cast<std::int64_t>(res.count)) problem = "key column length differs from the count";
    if (r_sorted.payload && res.r_payload.size() != res.key.size()) problem = "R payload column length differs";
    if (s_sorted.payload && res.s_payload.size() != res.key.size()) problem = "S payload column length differs";
    if (!problem.empty()) return seen;
    for (std::int64_t i = 0; i < res.key.size(); ++i)
      add(read(res.key, i), r_sorted.payload ? read(res.r_payload, i) : 0, s_sorted.payload ? read(res.s_payload, i) : 0,
          res.count);
  } else if (output == OutputMode::Ranges) {
    std::uint64_t n = 0;
    for (const MatchRange& m : res.ranges) n += m.tuples();
    if (n != res.count) problem = "ranges hold " + std::to_string(n) + " tuples, the count says " + std::to_string(res.count);
    for (const MatchRange& m : res.ranges) {
      if (m.r_end > static_cast<std::uint64_t>(r_sorted.key.size()) ||
          m.s_end > static_cast<std::uint64_t>(s_sorted.key.size()) || m.r_begin > m.r_end || m.s_begin > m.s_end) {
        problem = "a range lies outside the inputs";
        return seen;
      }
      for (std::uint64_t a = m.r_begin; a < m.r_end; ++a)
        for (std::uint64_t b = m.s_begin; b < m.s_end; ++b) {
          const std::uint64_t key = read(r_sorted.key, static_cast<std::int64_t>(a));
          if (key != read(s_sorted.key, static_cast<std::int64_t>(b))) problem = "a range pairs different keys";
          add(key, r_sorted.payload ? read(*r_sorted.payload, static_cast<std::int64_t>(a)) : 0,
              s_sorted.payload ? read(*s_sorted.payload, static_cast<std::int64_t>(b)) : 0, n);
        }
    }
  }
  return seen;
}

class Engines {
 public:
  /// `default_limit`: the GPU memory limit of cases that draw none (0: the engine's default).
  explicit Engines(std::uint64_t default_limit) : default_limit_(default_limit) {}

  Engine& get(int gpus, std::uint64_t limit) {
    auto& e = engines_[{gpus, limit}];
    if (!e) {
      EngineOptions o;
      o.gpus = gpus;
      o.gpu_memory_limit = limit != 0 ? limit : default_limit_;
      e = std::make_unique<Engine>(o);
    }
    return *e;
  }

 private:
  std::map<std::pair<int, std::uint64_t>, std::unique_ptr<Engine>> engines_;
  std::uint64_t default_limit_;
};

/// The flow that ran a join, from its result: cpu, paper, or co-partitioned in core, streamed, in passes
/// or bucketed.
std::string flow_of(const JoinResult& res, int gpus) {
  if (gpus == 0) return "cpu";
  if (res.strategy == JoinStrategy::Paper) return "paper";
  // (A pass's own plan names its variant, and the weighing against the buckets names them: first.)
  if (res.strategy_reason.find("passes by key range") != std::string::npos) return "in passes";
  for (const char* variant : {"bucketed", "streamed"})
    if (res.strategy_reason.find(variant) != std::string::npos) return variant;
  return "in core";
}

/// Runs one case; returns "" when it agrees with the reference, else what differs. `flow` gets the flow
/// that ran it.
std::string run_case(Case c, Engines& engines, std::string& flow) {
  Inputs in = make_inputs(c);
  Reference ref = reference(in.r, in.s, false);
  if (ref.count > kMaxOutputRows) c.options.output = OutputMode::Count;
  const bool expand = c.options.output != OutputMode::Count;
  if (expand) ref = reference(in.r, in.s, true);
  Relation r = copy_of(in.r), s = copy_of(in.s);
  JoinResult res;
  if (c.gpus == 0) {
    JoinOptions o = c.options;
    o.gpus = 0;
    res = join(r.view(), s.view(), o);
  } else {
    res = engines.get(c.gpus, c.memory_limit).join(r.view(), s.view(), c.options);
  }
  flow = flow_of(res, c.gpus);
  if (res.count != ref.count)
    return "count " + std::to_string(res.count) + ", reference " + std::to_string(ref.count);
  if (!expand) return "";
  std::string problem;
  Reference seen = observed(res, r, s, c.options.output, problem);
  if (!problem.empty()) return problem;
  if (seen.hash != ref.hash) return "the output tuples differ from the reference (multiset hash)";
  if (ref.count <= kSortedCompareRows) {
    std::sort(seen.tuples.begin(), seen.tuples.end());
    std::sort(ref.tuples.begin(), ref.tuples.end());
    if (seen.tuples != ref.tuples) return "the output tuples differ from the reference";
  }
  return "";
}

struct Args {
  std::uint64_t cases = 1000, seed = 0;
  int gpus_max = 0;
  double minutes = 0;
  long long only_case = -1;
  std::int64_t max_rows = std::numeric_limits<std::int64_t>::max();
  std::uint64_t gpu_memory_limit = 0;  ///< bytes, for cases that draw no limit; 0: the engine's default
  std::uint64_t shard = 0, shards = 1;  ///< run the cases k with k % shards == shard
};

void parse_shard(const std::string& v, Args& a) {
  const auto slash = v.find('/');
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (slash == std::string::npos || !digits(v.substr(0, slash)) || !digits(v.substr(slash + 1)))
    throw InputError("--shard " + v + ": expected I/N, e.g. 0/2");
  a.shard = std::stoull(v.substr(0, slash));
  a.shards = std::stoull(v.substr(slash + 1));
  if (a.shards == 0 || a.shard >= a.shards) throw InputError("--shard " + v + ": expected 0 <= I < N");
}

Args parse(int argc, char** argv) {
  Args a;
  a.seed = std::random_device{}() ^ static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw InputError(flag + ": expected a value");
    const std::string v = argv[++i];
    if (flag == "--cases") a.cases = std::stoull(v);
    else if (flag == "--seed") a.seed = std::stoull(v);
    else if (flag == "--gpus-max") a.gpus_max = std::stoi(v);
    else if (flag == "--minutes") a.minutes = std::stod(v);
    else if (flag == "--case") a.only_case = std::stoll(v);
    else if (flag == "--max-rows") a.max_rows = std::stoll(v);
    else if (flag == "--gpu-memory-limit-mib") a.gpu_memory_limit = std::stoull(v) << 20;
    else if (flag == "--shard") parse_shard(v, a);
    else
      throw InputError(flag + ": unknown option (--cases, --seed, --gpus-max, --minutes, --case, --max-rows, "
                              "--gpu-memory-limit-mib, --shard)");
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  std::printf("differential: seed %llu, %llu cases (shard %llu/%llu), up to %d GPUs\n",
              static_cast<unsigned long long>(args.seed), static_cast<unsigned long long>(args.cases),
              static_cast<unsigned long long>(args.shard), static_cast<unsigned long long>(args.shards), args.gpus_max);
  std::fflush(stdout);
  Engines engines(args.gpu_memory_limit);
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t ran = 0, failed = 0;
  std::map<std::string, std::uint64_t> by_kind;
  for (std::uint64_t k = 0; k < args.cases; ++k) {
    if (args.only_case >= 0 && k != static_cast<std::uint64_t>(args.only_case)) continue;
    if (k % args.shards != args.shard) continue;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (args.minutes > 0 && elapsed > args.minutes * 60) break;
    const Case c = draw_case(mix(args.seed + k), args.gpus_max, args.max_rows);
    std::string problem, flow = "threw";
    try {
      problem = run_case(c, engines, flow);
    } catch (const std::exception& e) {
      problem = std::string("threw: ") + e.what();
    }
    ++ran;
    ++by_kind["gpus " + std::to_string(c.gpus)];
    ++by_kind[std::string(strategy_name(c.options.strategy))];
    ++by_kind["ran " + flow];
    if (!problem.empty()) {
      ++failed;
      std::printf("MISMATCH case %llu (replay: --seed %llu --case %llu): %s\n  %s\n", static_cast<unsigned long long>(k),
                  static_cast<unsigned long long>(args.seed), static_cast<unsigned long long>(k), c.describe().c_str(),
                  problem.c_str());
      std::fflush(stdout);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string kinds;
  for (const auto& [kind, n] : by_kind) kinds += (kinds.empty() ? "" : ", ") + kind + ": " + std::to_string(n);
  std::printf("differential: %llu cases, %llu mismatches, seed %llu, %.1f s (%s)\n", static_cast<unsigned long long>(ran),
              static_cast<unsigned long long>(failed), static_cast<unsigned long long>(args.seed), seconds, kinds.c_str());
  return failed == 0 && ran > 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "differential: %s\n", e.what());
  return 2;
}
