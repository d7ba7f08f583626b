#include "engine/src/plan/join_request.hpp"

#include <cstdlib>

namespace mgjoin::detail {

JoinRequest unpack_join(const JoinSettings& options) {
  JoinRequest r;
  r.strategy = options.strategy;
  r.output = options.output;
  r.payloads = options.payloads;
  r.exchange = options.exchange;
  r.sort = options.sort;
  r.keep_inputs = options.keep_inputs;
  if (const char* resident = std::getenv("MGJOIN_BUCKET_RESIDENT")) r.bucket_resident = resident;
  if (const char* passes = std::getenv("MGJOIN_COPART_PASSES")) r.passes = passes;
  return r;
}

}  // namespace mgjoin::detail
