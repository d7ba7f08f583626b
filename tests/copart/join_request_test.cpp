// The environment's knobs a join reads where it starts (plan/join_request.hpp): MGJOIN_STAGE_INPUTS.
#include "engine/src/plan/join_request.hpp"

#include "common/env.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <string>

namespace mgjoin::detail {
namespace {

using test::ScopedEnv;

TEST(JoinRequest, PageableInputsAreStagedUnlessTurnedOff) {
  {
    const ScopedEnv unset("MGJOIN_STAGE_INPUTS", nullptr);
    EXPECT_TRUE(unpack_join(JoinSettings{}).stage_inputs);
  }
  for (const char* off : {"0", "off"}) {
    const ScopedEnv env("MGJOIN_STAGE_INPUTS", off);
    EXPECT_FALSE(unpack_join(JoinSettings{}).stage_inputs) << off;
  }
  for (const char* on : {"1", "on"}) {
    const ScopedEnv env("MGJOIN_STAGE_INPUTS", on);
    EXPECT_TRUE(unpack_join(JoinSettings{}).stage_inputs) << on;
  }
}

TEST(JoinRequest, AnUnknownStagingValueIsRefusedNamingTheVariable) {
  const ScopedEnv env("MGJOIN_STAGE_INPUTS", "yes");
  try {
    (void)unpack_join(JoinSettings{});
    FAIL() << "MGJOIN_STAGE_INPUTS=yes was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("MGJOIN_STAGE_INPUTS=yes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mgjoin::detail
