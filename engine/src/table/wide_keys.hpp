#pragma once
// Keys over 8 bytes (a composite of integer, float and bool columns wider than one word), by hash and
// verify: the sort key join() runs on is a 64-bit hash of the encoded components (equal tuples give equal
// hashes), so the join's pairs are candidates; each candidate pair is then verified by comparing the two
// rows' components, and pairs that differ (hash collisions) are dropped before the join kind's rows are
// made, counted or gathered. Pure host code, run on all OpenMP threads.
#include "engine/src/table/table_keys.hpp"

#include <mgjoin/types.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace mgjoin::table {

/// Which hash hash_key computes: Strong (a 64-bit mix of every component) or, for tests, Weak: only the
/// low 3 bits of the first component, so that tuples collide in masses (MGJOIN_TEST_KEY_HASH=weak).
enum class KeyHash : std::uint8_t { Strong, Weak };

/// MGJOIN_TEST_KEY_HASH: "weak" is KeyHash::Weak; unset or empty, Strong. @throw InputError for another value.
KeyHash key_hash_from_env();
/// The same from the variable's text (nullopt: unset).
KeyHash parse_key_hash(std::optional<std::string_view> text);

/// The hash of every row's key (`key` paired, KeyColumns::hashed), as a uint64 column (pinned): the
/// encoded components (KeyComponent) mixed in key order, so that rows of both sides whose tuples are
/// equal by value get equal hashes.
HostColumn hash_key(const KeyColumns& key, std::int64_t rows, KeyHash hash);

enum class Side : std::uint8_t { Left, Right };

/// The key components of both sides, read at any row: what verification compares. Each component
/// compares through a function of its own, so that a component whose values are not one word (a
/// string) can bring its own comparison (and its own hash in hash_key).
class KeyRows {
 public:
  /// `left` and `right` paired (pair_keys); their columns must outlive this.
  KeyRows(const KeyColumns& left, const KeyColumns& right);

  /// Whether left row `l` and right row `r` have equal keys (by value, as the packed keys compare).
  bool equal(std::int64_t l, std::int64_t r) const;
  /// Three-way comparison of row `a` and row `b` of one side, component by component in key order.
  int compare(Side side, std::int64_t a, std::int64_t b) const;

  /// One component: its two columns, and how row a of one side compares with row b of the other.
  struct Component {
    KeyComponent kind;
    const char* data[2] = {nullptr, nullptr};  ///< Side::Left, Side::Right
    std::uint64_t (*encoded[2])(const char*, std::int64_t, const KeyComponent&) = {nullptr, nullptr};
    int (*compare)(const Component&, Side, std::int64_t, Side, std::int64_t) = nullptr;
  };

 private:
  std::vector<Component> components_;
};

/// Keeps the candidate pairs (`pair_left[i]`, `pair_right[i]`: uint32 or uint64 row ids, join()'s
/// materialized pairs) whose rows' keys are equal, in their order, and truncates both columns to them.
/// Returns the number of pairs dropped (hash collisions).
std::int64_t keep_equal_pairs(const KeyRows& rows, HostColumn& pair_left, HostColumn& pair_right);

/// The right side of a semi or anti join reduced to one row per distinct key tuple: `hashes` (uint64)
/// and `ids` (the rows' ids, uint32 or uint64) sorted by hash together, then, among rows of one hash,
/// only the first of each tuple kept (both columns truncated).
void keep_distinct_rows(const KeyRows& rows, Side side, HostColumn& hashes, HostColumn& ids);

}  // namespace mgjoin::table
