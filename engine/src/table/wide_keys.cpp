#include "engine/src/table/wide_keys.hpp"

#include "core/dispatch.hpp"
#include "engine/src/join/cpu_sort.hpp"
#include "engine/src/table/key_encoding.hpp"

#include <mgjoin/error.hpp>

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace mgjoin::table {
namespace {

/// splitmix64's finalizer: a bijection of 64-bit words whose every output bit depends on every input bit.
constexpr std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kSeed = 0x9e3779b97f4a7c15ull;

/// f(ids) with a row-id column's data: 4-byte words (uint32) or 8-byte ones, as join() keys are.
template <class F>
decltype(auto) with_ids(HostColumn& ids, F&& f) {
  return dispatch_key_width(static_cast<int>(dtype_size(ids.type())), [&](auto word) { return f(ids.as<decltype(word)>()); });
}

int compare_words(const KeyRows::Component& c, Side sa, std::int64_t a, Side sb, std::int64_t b) {
  const auto ia = static_cast<int>(sa), ib = static_cast<int>(sb);
  const std::uint64_t x = c.encoded[ia](c.data[ia], a, c.kind), y = c.encoded[ib](c.data[ib], b, c.kind);
  return x < y ? -1 : (x > y ? 1 : 0);
}

/// Keeps the pairs i of l[0, n), r[0, n) where keep(l[i], r[i]): each block of pairs compacted in place on
/// its thread, then the blocks moved down in order (each block's destination ends before its start).
template <class L, class R, class Keep>
std::int64_t compact_pairs(L* l, R* r, std::int64_t n, Keep keep) {
  const std::int64_t blocks = std::min<std::int64_t>(std::int64_t{omp_get_max_threads()} * 4, n);
  std::vector<std::int64_t> kept(static_cast<std::size_t>(blocks), 0);
  const auto lo_of = [&](std::int64_t b) { return n * b / blocks; };
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    std::int64_t at = lo_of(b);
    for (std::int64_t i = lo_of(b); i < lo_of(b + 1); ++i)
      if (keep(static_cast<std::int64_t>(l[i]), static_cast<std::int64_t>(r[i]))) {
        l[at] = l[i];
        r[at] = r[i];
        ++at;
      }
    kept[static_cast<std::size_t>(b)] = at - lo_of(b);
  }
  std::int64_t total = 0;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t lo = lo_of(b), k = kept[static_cast<std::size_t>(b)];
    if (total != lo && k > 0) {
      std::memmove(l + total, l + lo, static_cast<std::size_t>(k) * sizeof(L));
      std::memmove(r + total, r + lo, static_cast<std::size_t>(k) * sizeof(R));
    }
    total += k;
  }
  return total;
}

}  // namespace

KeyHash parse_key_hash(std::optional<std::string_view> text) {
  if (!text || text->empty()) return KeyHash::Strong;
  MGJOIN_INPUT_EXPECTS(*text == "weak", "MGJOIN_TEST_KEY_HASH '" + std::string(*text) +
                                            "': expected weak (a test hook: keys over 8 bytes hashed so that they collide)");
  return KeyHash::Weak;
}

KeyHash key_hash_from_env() {
  const char* env = std::getenv("MGJOIN_TEST_KEY_HASH");
  return parse_key_hash(env ? std::optional<std::string_view>(env) : std::nullopt);
}

HostColumn hash_key(const KeyColumns& key, std::int64_t rows, KeyHash hash) {
  MGJOIN_EXPECTS(key.components.size() == key.columns.size(), "hash_key of a key not paired with the other side's");
  HostColumn hashes = HostColumn::allocate(DType::UInt64, rows, MemoryKind::Pinned);
  std::uint64_t* out = hashes.as<std::uint64_t>();
  if (hash == KeyHash::Weak) {
    for_each_encoded(key, rows, [&](std::size_t i, std::int64_t r, std::uint64_t bits) {
      if (i == 0) out[r] = bits & 7;
    });
    return hashes;
  }
  for_each_encoded(key, rows, [&](std::size_t i, std::int64_t r, std::uint64_t bits) {
    out[r] = mix((i == 0 ? kSeed : out[r]) ^ bits);
  });
  return hashes;
}

KeyRows::KeyRows(const KeyColumns& left, const KeyColumns& right) {
  MGJOIN_EXPECTS(left.components.size() == left.columns.size() && right.columns.size() == left.columns.size(),
                 "KeyRows of keys not paired");
  for (std::size_t i = 0; i < left.columns.size(); ++i) {
    Component c;
    c.kind = left.components[i];
    const ColumnView* columns[2] = {&left.columns[i], &right.columns[i]};
    for (int side = 0; side < 2; ++side) {
      c.data[side] = static_cast<const char*>(columns[side]->data);
      c.encoded[side] = dispatch_value_type(columns[side]->type, [](auto type) { return &encoded_at<decltype(type)>; });
    }
    c.compare = compare_words;  // every kind today is one word; a string component would bring its own
    components_.push_back(c);
  }
}

bool KeyRows::equal(std::int64_t l, std::int64_t r) const {
  return std::all_of(components_.begin(), components_.end(),
                     [&](const Component& c) { return c.compare(c, Side::Left, l, Side::Right, r) == 0; });
}

int KeyRows::compare(Side side, std::int64_t a, std::int64_t b) const {
  for (const Component& c : components_)
    if (const int order = c.compare(c, side, a, side, b)) return order;
  return 0;
}

std::int64_t keep_equal_pairs(const KeyRows& rows, HostColumn& pair_left, HostColumn& pair_right) {
  const std::int64_t n = pair_left.size();
  MGJOIN_EXPECTS(pair_right.size() == n, "keep_equal_pairs: as many left as right row ids");
  const std::int64_t kept = with_ids(pair_left, [&](auto* l) {
    return with_ids(pair_right, [&](auto* r) {
      return compact_pairs(l, r, n, [&](std::int64_t a, std::int64_t b) { return rows.equal(a, b); });
    });
  });
  pair_left.truncate(kept);
  pair_right.truncate(kept);
  return n - kept;
}

void keep_distinct_rows(const KeyRows& rows, Side side, HostColumn& hashes, HostColumn& ids) {
  detail::sort_relation_cpu(RelationView{hashes.view(), ids.view()});
  const std::int64_t n = hashes.size();
  std::uint64_t* h = hashes.as<std::uint64_t>();
  // Runs of one hash of more than one row: sorted by tuple, each tuple's first row kept.
  std::vector<std::int64_t> runs;
  for (std::int64_t i = 1; i <= n; ++i)
    if (i == n || h[i] != h[i - 1]) runs.push_back(i);
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(n), 1);
  with_ids(ids, [&](auto* id) {
    const auto run_count = static_cast<std::int64_t>(runs.size());
#pragma omp parallel for schedule(dynamic, 64)
    for (std::int64_t k = 0; k < run_count; ++k) {
      const std::int64_t lo = k == 0 ? 0 : runs[static_cast<std::size_t>(k) - 1], hi = runs[static_cast<std::size_t>(k)];
      if (hi - lo < 2) continue;
      std::sort(id + lo, id + hi, [&](auto a, auto b) {
        return rows.compare(side, static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)) < 0;
      });
      for (std::int64_t i = lo + 1; i < hi; ++i)
        if (rows.compare(side, static_cast<std::int64_t>(id[i - 1]), static_cast<std::int64_t>(id[i])) == 0)
          keep[static_cast<std::size_t>(i)] = 0;
    }
    std::int64_t at = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (keep[static_cast<std::size_t>(i)]) {
        h[at] = h[i];
        id[at] = id[i];
        ++at;
      }
    hashes.truncate(at);
    ids.truncate(at);
  });
}

}  // namespace mgjoin::table
