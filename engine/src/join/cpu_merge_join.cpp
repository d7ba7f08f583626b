// Sequential merge join of a partition pair (paper Section 3.3; the CPU twin of the join kernel).
#include "engine/src/join/cpu_merge_join.hpp"

#include "core/dispatch.hpp"

namespace mgjoin::detail {
namespace {

/// Merge join of one pair; calls emit(range) per key on both sides.
template <class Key, class Emit>
void merge_join_pair(const Key* r, const Key* s, const PairRange& p, Emit&& emit) {
  std::uint64_t i = p.r_begin, j = p.s_begin;
  while (i < p.r_end && j < p.s_end) {
    if (r[i] < s[j]) {
      ++i;
    } else if (s[j] < r[i]) {
      ++j;
    } else {
      const Key key = r[i];
      std::uint64_t ie = i + 1, je = j + 1;
      while (ie < p.r_end && r[ie] == key) ++ie;
      while (je < p.s_end && s[je] == key) ++je;
      emit(MatchRange{i, ie, j, je});
      i = ie;
      j = je;
    }
  }
}

}  // namespace

void append_matching_ranges(ColumnView r_sorted_keys, ColumnView s_sorted_keys, const PairRange& pair,
                            std::vector<MatchRange>& out) {
  dispatch_key_type(r_sorted_keys.type, [&](auto k) {
    using Key = decltype(k);
    merge_join_pair(r_sorted_keys.as<Key>(), s_sorted_keys.as<Key>(), pair,
                    [&](const MatchRange& m) { out.push_back(m); });
  });
}

std::uint64_t count_matching_ranges(ColumnView r_sorted_keys, ColumnView s_sorted_keys, const PairRange& pair) {
  std::uint64_t n = 0;
  dispatch_key_type(r_sorted_keys.type, [&](auto k) {
    using Key = decltype(k);
    merge_join_pair(r_sorted_keys.as<Key>(), s_sorted_keys.as<Key>(), pair, [&](const MatchRange&) { ++n; });
  });
  return n;
}

MatchRange* write_matching_ranges(ColumnView r_sorted_keys, ColumnView s_sorted_keys, const PairRange& pair,
                                  MatchRange* out) {
  dispatch_key_type(r_sorted_keys.type, [&](auto k) {
    using Key = decltype(k);
    merge_join_pair(r_sorted_keys.as<Key>(), s_sorted_keys.as<Key>(), pair, [&](const MatchRange& m) { *out++ = m; });
  });
  return out;
}

}  // namespace mgjoin::detail
