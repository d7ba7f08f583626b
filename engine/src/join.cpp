// join(): validates the inputs and runs the CPU path or the GPU engine.
#include <mgjoin/error.hpp>
#include <mgjoin/join.hpp>

#include "engine/src/join/cpu_join.hpp"

namespace mgjoin {

JoinResult join(RelationView r, RelationView s, const JoinOptions& options) {
  // TODO(issue 8): GPU engine; until it lands every join runs on the CPU path.
  return detail::cpu_join(r, s, options);
}

}  // namespace mgjoin
