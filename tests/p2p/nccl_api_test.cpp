// NCCL is loaded when first used (p2p/nccl_api.hpp): a missing library is a clear error, the real one
// resolves every function. Each test runs in its own process (ctest), so each loads afresh.
#include "p2p/nccl_api.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace mgjoin::p2p {
namespace {

/// nccl()'s error with MGJOIN_NCCL_LIBRARY=library ("" where it loaded).
std::string load_error(const char* library) {
  ::setenv(kNcclLibraryEnv, library, 1);
  try {
    (void)nccl();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(NcclApi, AMissingLibraryIsAClearErrorNamingIt) {
  const std::string what = load_error("/nonexistent/libnccl.so.2");
  EXPECT_NE(what.find("NCCL (/nonexistent/libnccl.so.2) is needed for the NCCL exchange and was not found: "),
            std::string::npos)
      << what;
  EXPECT_NE(what.find(kNcclLibraryEnv), std::string::npos) << what;
  EXPECT_EQ(load_error("/nonexistent/libnccl.so.2"), what) << "a failed load is tried again, and fails again";
}

TEST(NcclApi, ALibraryWithoutNcclIsRefusedNamingTheMissingFunction) {
  const std::string what = load_error("libc.so.6");
  EXPECT_NE(what.find("it has no ncclGetErrorString"), std::string::npos) << what;
}

#ifdef MGJOIN_TEST_NCCL_LIBRARY
TEST(NcclApi, TheToolkitsLibraryResolvesEveryFunction) {
  ASSERT_EQ(load_error(MGJOIN_TEST_NCCL_LIBRARY), "");
  EXPECT_STREQ(nccl().get_error_string(ncclSuccess), "no error");
  EXPECT_EQ(&nccl(), &nccl()) << "loaded once";
}
#endif

}  // namespace
}  // namespace mgjoin::p2p
