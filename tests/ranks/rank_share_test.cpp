// Which GPUs each rank of a node takes (dist/collectives.hpp, rank_gpu_share): a rank's first GPU is its
// NCCL device whatever number of GPUs a join asks for, or the join cannot run on the ranks' GPUs whole
// (on 4 GPUs, 2 ranks asked for one GPU each took GPUs 0 and 1 while rank 1's NCCL device was GPU 2).
#include "dist/collectives.hpp"

#include <mgjoin/error.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mgjoin::dist::detail {
namespace {

using Ids = std::vector<int>;

TEST(RankGpuShare, ByDefaultEachRankTakesItsBlock) {
  EXPECT_EQ(rank_gpu_share(4, {0, 2}, 0, "t"), (Ids{0, 1}));
  EXPECT_EQ(rank_gpu_share(4, {1, 2}, 0, "t"), (Ids{2, 3}));
  EXPECT_EQ(rank_gpu_share(4, {3, 4}, -1, "t"), (Ids{3}));
  // 5 GPUs over 2 ranks: blocks of 2, the fifth unused.
  EXPECT_EQ(rank_gpu_share(5, {1, 2}, 0, "t"), (Ids{2, 3}));
}

TEST(RankGpuShare, AJoinAskingForFewerGpusStartsAtTheRanksNcclDevice) {
  EXPECT_EQ(rank_gpu_share(4, {0, 2}, 1, "t"), (Ids{0}));
  EXPECT_EQ(rank_gpu_share(4, {1, 2}, 1, "t"), (Ids{2}));
  EXPECT_EQ(rank_gpu_share(8, {1, 2}, 3, "t"), (Ids{4, 5, 6}));
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_EQ(rank_gpu_share(7, {rank, 3}, 1, "t").front(), rank_gpu_share(7, {rank, 3}, 0, "t").front());
}

TEST(RankGpuShare, MoreThanTheNodeHasIsRefusedNamingTheCaller) {
  try {
    rank_gpu_share(4, {0, 2}, 3, "JoinOptions::gpus");
    FAIL() << "2 ranks x 3 GPUs on 4 GPUs: no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "JoinOptions::gpus: 2 ranks on this node with 3 GPU(s) each need 6 GPUs; it has 4");
  }
  try {
    rank_gpu_share(0, {0, 2}, 0, "RankExchange::Nccl");
    FAIL() << "no GPUs: no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "RankExchange::Nccl: 2 ranks on this node need a GPU each; it has 0");
  }
  EXPECT_THROW(rank_gpu_share(3, {0, 4}, 0, "t"), InputError);
}

}  // namespace
}  // namespace mgjoin::dist::detail
