// When a join's result columns are pinned and when they go through the staging (exec::pin_result_columns):
// the rule that keeps a one-join process on several GPUs from registering its output with every context.
#include "engine/src/exec/output_columns.hpp"
#include "alloc/host_memory.hpp"

#include <gtest/gtest.h>

namespace mgjoin::exec {
namespace {

TEST(ResultColumnMemory, PinnedWhereTheRegistrationIsRepaid) {
  for (const int gpus : {1, 2, 3, 4, 8}) {
    // A block kept for reuse serves the columns: nothing new to register.
    EXPECT_TRUE(pin_result_columns(gpus, false, true)) << gpus;
    // A later join of the process reuses what this one pins (a library user, mgjoin bench).
    EXPECT_TRUE(pin_result_columns(gpus, true, false)) << gpus;
  }
  // One join, nothing kept: pinned while few contexts make registering cheap, staged from three GPUs.
  EXPECT_TRUE(pin_result_columns(1, false, false));
  EXPECT_TRUE(pin_result_columns(2, false, false));
  EXPECT_FALSE(pin_result_columns(3, false, false));
  EXPECT_FALSE(pin_result_columns(4, false, false));
  EXPECT_FALSE(pin_result_columns(8, false, false));
}

TEST(ResultColumnMemory, ProcessesExpectLaterJoinsUnlessToldOtherwise) {
  EXPECT_TRUE(alloc::later_joins_expected());
  alloc::expect_later_joins(false);
  EXPECT_FALSE(alloc::later_joins_expected());
  alloc::expect_later_joins(true);
  EXPECT_TRUE(alloc::later_joins_expected());
}

}  // namespace
}  // namespace mgjoin::exec
