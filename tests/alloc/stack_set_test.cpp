// StackSet: one owned stack per GPU, handed to the phases as a span of pointers.
#include "alloc/stack_set.hpp"

#include <gtest/gtest.h>

#include "alloc/stack_allocator.hpp"

namespace mgjoin::alloc {
namespace {

TEST(StackSet, AddsStacksInOrderAndViewsThemAsPointers) {
  StackSet<HostStackAllocator> set;
  EXPECT_TRUE(set.empty());
  HostStackAllocator& first = set.add(std::size_t{1} << 12);
  set.add(std::size_t{1} << 13);
  ASSERT_EQ(set.size(), 2u);
  const auto view = set.view();
  ASSERT_EQ(view.size(), 2u);
  EXPECT_EQ(view[0], &first);
  EXPECT_EQ(&set[1], view[1]);
  EXPECT_EQ(view[0]->capacity(), std::size_t{1} << 12);
  EXPECT_EQ(view[1]->capacity(), std::size_t{1} << 13);
}

TEST(StackSet, KeepsEarlierStacksInPlaceWhenGrowing) {
  // Phases hold pointers into the set: adding a stack must not move the ones already there.
  StackSet<HostStackAllocator> set;
  HostStackAllocator* first = &set.add(std::size_t{1} << 12);
  void* block = first->allocate(64);
  for (int i = 0; i < 32; ++i) set.add(std::size_t{1} << 12);
  EXPECT_EQ(set.view()[0], first);
  EXPECT_GT(first->used(), 0u);
  first->deallocate(block);
  EXPECT_EQ(first->used(), 0u);
}

TEST(StackSet, ClearFreesEveryStack) {
  StackSet<HostStackAllocator> set;
  set.add(std::size_t{1} << 12);
  set.clear();
  EXPECT_TRUE(set.empty());
  EXPECT_TRUE(set.view().empty());
}

}  // namespace
}  // namespace mgjoin::alloc
