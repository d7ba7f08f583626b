// The ground layer's small rules: byte sizes written by people, and cancellation points.
#include <mgjoin/error.hpp>

#include "core/byte_size.hpp"
#include "core/cancel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

namespace mgjoin::test {
namespace {

using detail::parse_byte_size;

TEST(ByteSize, PlainCountsAndBinarySuffixes) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("512M"), 512ull * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("512m"), 512ull * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("8G"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("8GB"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("8GiB"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("1.5T"), 3ull << 39);
  EXPECT_EQ(parse_byte_size("2K"), 2048u);
}

TEST(ByteSize, RefusesWhatIsNotASize) {
  for (const char* bad : {"", "G", "-1", "-5G", "8X", "8GG", "8 G", "nan", "inf", "abc", "16E", "0x10", "1e30"})
    EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
  EXPECT_EQ(parse_byte_size("16777216T"), std::nullopt);  // 2^64 bytes
  EXPECT_EQ(parse_byte_size("16777215T"), 16777215ull << 40);
}

TEST(Cancel, NoScopeOrNullFlagNeverCancels) {
  EXPECT_FALSE(detail::cancel_requested());
  EXPECT_NO_THROW(detail::throw_if_cancelled());
  const detail::CancelScope scope(nullptr);
  EXPECT_NO_THROW(detail::throw_if_cancelled());
}

TEST(Cancel, SetFlagThrowsCancelledWithinItsScopeOnly) {
  std::atomic<bool> flag{false};
  {
    const detail::CancelScope scope(&flag);
    EXPECT_NO_THROW(detail::throw_if_cancelled());
    flag = true;
    EXPECT_THROW(detail::throw_if_cancelled(), Cancelled);
  }
  EXPECT_NO_THROW(detail::throw_if_cancelled());  // the scope ended
}

TEST(Cancel, ScopesNestAndBelongToTheirThread) {
  std::atomic<bool> outer{true}, inner{false};
  const detail::CancelScope a(&outer);
  {
    const detail::CancelScope b(&inner);
    EXPECT_NO_THROW(detail::throw_if_cancelled());
    bool other_thread_cancelled = true;
    std::thread([&] { other_thread_cancelled = detail::cancel_requested(); }).join();
    EXPECT_FALSE(other_thread_cancelled);
  }
  EXPECT_THROW(detail::throw_if_cancelled(), Cancelled);
}

}  // namespace
}  // namespace mgjoin::test
