#pragma once
// Relations for the suites' inputs: owning copies (joins sort their inputs in place) and relations of
// given keys whose payloads name their rows.
#include <mgjoin/join.hpp>
#include <mgjoin/types.hpp>

#include "common/reference_join.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace mgjoin::test {

inline HostColumn copy_of(const HostColumn& c) {
  HostColumn out = HostColumn::allocate(c.type(), c.size(), c.memory_kind());
  if (c.bytes() > 0) std::memcpy(out.data(), c.data(), c.bytes());
  return out;
}

inline Relation copy_of(const Relation& rel) {
  Relation out{copy_of(rel.key), std::nullopt};
  if (rel.payload) out.payload = copy_of(*rel.payload);
  return out;
}

/// A relation with the given keys; payload i = i + offset (so that every output row names its rows),
/// of `payload_bytes` (0: key only).
template <class Key>
Relation relation_of(const std::vector<Key>& keys, int payload_bytes, std::uint64_t offset) {
  const auto n = static_cast<std::int64_t>(keys.size());
  Relation rel{HostColumn::allocate(dtype_of<Key>(), n), std::nullopt};
  if (n) std::memcpy(rel.key.data(), keys.data(), keys.size() * sizeof(Key));
  if (payload_bytes) {
    rel.payload = HostColumn::allocate(payload_bytes == 4 ? DType::UInt32 : DType::UInt64, n);
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint64_t v = static_cast<std::uint64_t>(i) + offset;
      std::memcpy(static_cast<char*>(rel.payload->data()) + i * payload_bytes, &v, payload_bytes);
    }
  }
  return rel;
}

}  // namespace mgjoin::test
