#include "engine/src/plan/join_request.hpp"

#include <mgjoin/error.hpp>

#include <cstdlib>
#include <string>

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
  if (const char* stage = std::getenv("MGJOIN_STAGE_INPUTS")) {
    const std::string v = stage;
    MGJOIN_INPUT_EXPECTS(v == "0" || v == "1" || v == "off" || v == "on",
                         "MGJOIN_STAGE_INPUTS=" + v + ": expected 1 or on (the default), 0 or off");
    r.stage_inputs = v == "1" || v == "on";
  }
  return r;
}

}  // namespace mgjoin::detail
