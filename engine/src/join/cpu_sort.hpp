#pragma once
// Parallel CPU sort of a relation by key, payloads moving with their keys (the CPU path, `--gpus 0`).
#include <mgjoin/types.hpp>

namespace mgjoin::detail {

/// Sorts `relation` in place by key (ascending in the key type's own order) with libstdc++ parallel
/// mode on all OpenMP threads. Not stable: rows with equal keys end in unspecified order.
void sort_relation_cpu(RelationView relation);

}  // namespace mgjoin::detail
