// Parallel CPU sort of (key, payload) rows with __gnu_parallel::sort, keys and payloads moved together
// by host_merge's zip iterator (paper Section 3.2.2: no gather into a pair array and back).
#include "engine/src/join/cpu_sort.hpp"

#include "core/dispatch.hpp"
#include "host_merge/zip_iterator.hpp"

#include <mgjoin/error.hpp>

#include <parallel/algorithm>

#include <cstdint>

namespace mgjoin::detail {
namespace {

/// Sorts keys and payloads in lockstep through host_merge's zero-copy zip iterator (no pair array).
template <class Key, class Word>
void sort_with_payload(Key* keys, Word* payload, std::int64_t n) {
  const auto first = host_merge::make_zip(keys, payload);
  __gnu_parallel::sort(first, first + n, host_merge::KeyLess{});
}

}  // namespace

void sort_relation_cpu(RelationView relation) {
  const std::int64_t n = relation.size();
  if (relation.payload)
    MGJOIN_EXPECTS(relation.payload->size == n, "payload column length differs from its key column's");
  dispatch_key_type(relation.key.type, [&](auto k) {
    using Key = decltype(k);
    Key* keys = relation.key.as<Key>();
    if (n < 2) return;
    if (!relation.payload) {
      __gnu_parallel::sort(keys, keys + n);
    } else if (dtype_size(relation.payload->type) == 4) {
      sort_with_payload(keys, relation.payload->as<std::uint32_t>(), n);
    } else {
      sort_with_payload(keys, relation.payload->as<std::uint64_t>(), n);
    }
  });
}

}  // namespace mgjoin::detail
