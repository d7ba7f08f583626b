#pragma once
// The CPU path (`--gpus 0`): parallel sort of both relations, merge join, parallel materialization.
#include <mgjoin/join.hpp>

namespace mgjoin::detail {

/// Joins on the CPU with all OpenMP threads; sorts r and s in place. Honours options.output.
/// @throw InputError when the output has 2^64 or more tuples (counted before anything is output).
JoinResult cpu_join(RelationView r, RelationView s, const JoinOptions& options);

}  // namespace mgjoin::detail
