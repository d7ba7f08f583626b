// The paper's workloads A and B (Section 4.1.3, Table 2; selectivity and skew as in Section 4.5).
#include <mgjoin/error.hpp>
#include <mgjoin/generate.hpp>

#include "engine/src/generate/counter_rng.hpp"
#include "engine/src/generate/key_permutation.hpp"
#include "engine/src/generate/zipf.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>

namespace mgjoin {
namespace {

using detail::CounterRng;
using detail::KeyPermutation;

// Random streams: one decides whether an S row matches, one picks its R row (or its absent key).
constexpr std::uint64_t kMatchStream = 0x6d61746368ull;  // "match"
constexpr std::uint64_t kPickStream = 0x7069636bull;     // "pick"
constexpr std::uint64_t kHotStream = 0x686f74ull;         // "hot"
// Rows per unit of work: small enough to balance threads on a busy machine, large enough that
// taking one from the shared counter costs nothing.
constexpr std::int64_t kChunkRows = std::int64_t{1} << 16;

std::string number(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

/// Runs body(row) for every row in [0, rows) on all threads. Progress is reported by thread 0 of the
/// team, which is the calling thread.
template <class Body>
void for_each_row(std::int64_t rows, std::int64_t done_before, std::int64_t total, const ProgressCallback& progress,
                  Body&& body) {
  const std::int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  std::atomic<std::int64_t> done{0};
#pragma omp parallel
  {
    const bool reporter = progress && omp_get_thread_num() == 0;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t begin = c * kChunkRows, end = std::min(rows, begin + kChunkRows);
      for (std::int64_t i = begin; i < end; ++i) body(static_cast<std::uint64_t>(i));
      const std::int64_t now = done.fetch_add(end - begin, std::memory_order_relaxed) + (end - begin);
      if (reporter) progress("generate", static_cast<double>(done_before + now) / static_cast<double>(total));
    }
  }
  // The last chunk may have finished on another thread.
  if (progress) progress("generate", static_cast<double>(done_before + rows) / static_cast<double>(total));
}

/// R: key i = perm(i) (unique, uniform, in random order); payload i = i.
template <class Key>
void generate_r(RelationView r, const KeyPermutation<Key>& perm, std::int64_t total, const ProgressCallback& progress) {
  Key* key = r.key.as<Key>();
  Key* payload = r.payload->as<Key>();
  for_each_row(r.size(), 0, total, progress, [=](std::uint64_t i) {
    key[i] = perm(static_cast<Key>(i));
    payload[i] = static_cast<Key>(i);
  });
}

/// S: row j matches R row pick(bits) with probability sigma, else gets perm(|R| + x) for a random
/// x: an index outside R, hence (perm being a bijection) a key absent from R. A matching row is made
/// to match R row 0 instead with probability hot_key (one hot key).
template <class Key, class PickRow>
void generate_s(RelationView s, const WorkloadSpec& spec, std::int64_t r_rows, const KeyPermutation<Key>& perm,
                PickRow pick_row, std::int64_t total, const ProgressCallback& progress) {
  Key* key = s.key.as<Key>();
  Key* payload = s.payload->as<Key>();
  const CounterRng match_rng(spec.seed, kMatchStream), pick_rng(spec.seed, kPickStream), hot_rng(spec.seed, kHotStream);
  const double hot = spec.hot_key;
  const bool all_match = spec.selectivity >= 1 && r_rows > 0;
  const bool none_match = spec.selectivity <= 0 || r_rows == 0;
  const double sigma = spec.selectivity;
  const auto r_size = static_cast<std::uint64_t>(r_rows);
  // Keys not in R: 2^w - |R| of them (computed mod 2^64; 0 means all 2^64 when |R| = 0 in B).
  const std::uint64_t absent = (std::uint64_t{std::numeric_limits<Key>::max()} - r_size) + 1;
  // One perm() per row, of an index inside R (a match) or beyond it (a key absent from R).
  for_each_row(s.size(), r_rows, total, progress, [=](std::uint64_t j) {
    const std::uint64_t bits = pick_rng(j);
    const bool matches = all_match || (!none_match && detail::uniform_unit(match_rng(j)) < sigma);
    const std::uint64_t miss = absent == 0 ? bits : r_size + detail::uniform_below(bits, absent);
    const bool is_hot = matches && hot > 0 && detail::uniform_unit(hot_rng(j)) < hot;
    key[j] = perm(static_cast<Key>(is_hot ? 0 : matches ? pick_row(bits) : miss));
    payload[j] = static_cast<Key>(j);
  });
}

template <class Key>
void generate_typed(const WorkloadSpec& spec, const WorkloadShape& shape, RelationView r, RelationView s,
                    const ProgressCallback& progress) {
  const KeyPermutation<Key> perm(spec.seed);
  const std::int64_t total = std::max<std::int64_t>(1, shape.r_rows + shape.s_rows);
  generate_r(r, perm, total, progress);

  const auto r_size = static_cast<std::uint64_t>(shape.r_rows);
  if (spec.zipf == 0) {
    generate_s(s, spec, shape.r_rows, perm, [=](std::uint64_t bits) { return detail::uniform_below(bits, r_size); },
               total, progress);
  } else {
    const detail::ZipfGenerator zipf(std::max<std::uint64_t>(r_size, 1), spec.zipf);
    generate_s(s, spec, shape.r_rows, perm, [&zipf](std::uint64_t bits) { return zipf(detail::uniform_unit(bits)); },
               total, progress);
  }
}

bool matches_shape(const RelationView& rel, std::int64_t rows, const WorkloadShape& shape) {
  return rel.key.size == rows && rel.key.type == shape.key_type && rel.payload && rel.payload->size == rows &&
         rel.payload->type == shape.payload_type;
}

/// Rows for `per_unit` rows at scale 1, rounded to nearest.
std::int64_t scaled_rows(double scale, double per_unit) { return std::llround(scale * per_unit); }

}  // namespace

std::optional<Workload> parse_workload(std::string_view name) {
  if (name == "A" || name == "a") return Workload::A;
  if (name == "B" || name == "b") return Workload::B;
  return std::nullopt;
}

WorkloadShape workload_shape(const WorkloadSpec& spec) {
  // 2^62 rows is beyond any host memory; the bound keeps the arithmetic below exact.
  MGJOIN_INPUT_EXPECTS(std::isfinite(spec.scale) && spec.scale >= 0 && spec.scale * 1e9 <= 0x1p62,
                       "WorkloadSpec::scale " + number(spec.scale) + ": must be a non-negative number (fractions allowed)");
  MGJOIN_INPUT_EXPECTS(spec.selectivity >= 0 && spec.selectivity <= 1,
                       "WorkloadSpec::selectivity " + number(spec.selectivity) + ": must be in [0, 1]");
  MGJOIN_INPUT_EXPECTS(spec.zipf >= 0 && spec.zipf <= 1,
                       "WorkloadSpec::zipf " + number(spec.zipf) + ": must be in [0, 1] (0 = uniform, 1 = Zipf)");
  MGJOIN_INPUT_EXPECTS(spec.hot_key >= 0 && spec.hot_key <= 1, "WorkloadSpec::hot_key " + number(spec.hot_key) + ": must be in [0, 1]");
  WorkloadShape shape;
  if (spec.workload == Workload::A) {
    shape.r_rows = scaled_rows(spec.scale, 1e8);
    shape.s_rows = scaled_rows(spec.scale, 1e9);
    shape.key_type = shape.payload_type = DType::UInt32;
    constexpr std::int64_t key_space = std::int64_t{1} << 32;
    MGJOIN_INPUT_EXPECTS(shape.r_rows <= key_space, "WorkloadSpec::scale " + number(spec.scale) +
                                                        ": workload A has at most 2^32 unique 32-bit R keys (scale <= 42.9)");
    MGJOIN_INPUT_EXPECTS(shape.r_rows < key_space || spec.selectivity == 1,
                         "WorkloadSpec::selectivity " + number(spec.selectivity) +
                             ": R uses every 32-bit key, so no S key can miss; use selectivity 1 or a smaller scale");
  } else {
    shape.r_rows = shape.s_rows = scaled_rows(spec.scale, 1e9);
    shape.key_type = shape.payload_type = DType::UInt64;
  }
  return shape;
}

void generate_workload_into(const WorkloadSpec& spec, RelationView r, RelationView s, const ProgressCallback& progress) {
  const WorkloadShape shape = workload_shape(spec);
  MGJOIN_EXPECTS(matches_shape(r, shape.r_rows, shape) && matches_shape(s, shape.s_rows, shape),
                 "generate_workload_into: columns do not match the workload's shape");
  if (spec.workload == Workload::A)
    generate_typed<std::uint32_t>(spec, shape, r, s, progress);
  else
    generate_typed<std::uint64_t>(spec, shape, r, s, progress);
}

GeneratedWorkload generate_workload(const WorkloadSpec& spec, MemoryKind memory, const ProgressCallback& progress) {
  const WorkloadShape shape = workload_shape(spec);
  const auto allocate = [&](std::int64_t rows) {
    return Relation{HostColumn::allocate(shape.key_type, rows, memory), HostColumn::allocate(shape.payload_type, rows, memory)};
  };
  GeneratedWorkload w{allocate(shape.r_rows), allocate(shape.s_rows)};
  generate_workload_into(spec, w.r.view(), w.s.view(), progress);
  return w;
}

}  // namespace mgjoin
