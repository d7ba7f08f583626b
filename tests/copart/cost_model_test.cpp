// The planner's cost model (engine/src/plan/cost_model.hpp): rates from a tuning file's measurements or
// defaults, the prediction of each flow's transfers, and the paper flow predicted slower than the
// co-partitioned flows on a measured machine's rates.
#include "engine/src/plan/cost_model.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace mgjoin::detail {
namespace {

/// What `mgjoin tune` measured on the H100 machine (one GPU), with the host rates of this test's choosing.
topology::MeasuredBandwidths h100() {
  topology::MeasuredBandwidths m;
  m.h2d_alone = {55.0};
  m.d2h_alone = {54.0};
  m.h2d_all = 55.0;
  m.d2h_all = 54.0;
  m.both_ways_all = 100.0;
  m.host_memcpy = 20.0;
  m.cpu_merge = 10.0;
  m.cpu_gather = 3.0;
  return m;
}

TEST(CostModel, RatesComeFromTheTuningFileScaledToTheGpusUsed) {
  topology::MeasuredBandwidths four = h100();
  four.h2d_alone = {55, 55, 55, 55};
  four.h2d_all = 200;
  four.d2h_all = 160;
  four.both_ways_all = 320;
  const Rates two = rates_for(&four, 2);
  EXPECT_DOUBLE_EQ(two.h2d, 100);
  EXPECT_DOUBLE_EQ(two.d2h, 80);
  EXPECT_DOUBLE_EQ(two.both_ways, 160);
  EXPECT_DOUBLE_EQ(two.cpu_merge, 10);
  EXPECT_DOUBLE_EQ(two.cpu_gather, 3);  // a host rate: not scaled by the GPUs used
  EXPECT_EQ(two.source, "tuning file");
}

TEST(CostModel, DefaultsWhereNothingWasMeasuredAndSaysSo) {
  const Rates none = rates_for(nullptr, 2);
  EXPECT_DOUBLE_EQ(none.h2d, 2 * kDefaultPcieGbps);
  EXPECT_DOUBLE_EQ(none.both_ways, 2 * kDefaultBothWaysGbps);
  EXPECT_DOUBLE_EQ(none.cpu_merge, kDefaultCpuMergeGbps);
  EXPECT_DOUBLE_EQ(none.cpu_gather, kDefaultCpuGatherGbps);
  EXPECT_EQ(none.source, "default rates: no tuning file");
  topology::MeasuredBandwidths old = h100();  // a file written before the host rates were measured
  old.host_memcpy = old.cpu_merge = old.cpu_gather = 0;
  old.both_ways_all = 0;
  const Rates r = rates_for(&old, 1);
  EXPECT_DOUBLE_EQ(r.h2d, 55);
  EXPECT_DOUBLE_EQ(r.both_ways, kBothWaysShare * (55 + 54));  // from the measured one-way rates
  EXPECT_EQ(r.source, "tuning file, default PCIe and host rates");
  EXPECT_DOUBLE_EQ(r.cpu_gather, kDefaultCpuGatherGbps);
  // A file of PCIe and merge rates but no gather rate (written before `mgjoin tune` measured it).
  topology::MeasuredBandwidths no_gather = h100();
  no_gather.cpu_gather = 0;
  const Rates g = rates_for(&no_gather, 1);
  EXPECT_DOUBLE_EQ(g.cpu_gather, kDefaultCpuGatherGbps);
  EXPECT_DOUBLE_EQ(g.cpu_merge, 10);
  EXPECT_EQ(g.source, "tuning file, default host rates");
}

TEST(CostModel, TransfersOverlapBothWaysThenAddUp) {
  const Rates r = rates_for(nullptr, 1);  // 25 GB/s each way, 40 both ways
  // In core: the input once.
  EXPECT_DOUBLE_EQ(predict_seconds(copart_traffic(50'000'000'000, 0), r), 2.0);
  // Bucketed: 50 GB in while 50 GB go out (100 GB at 40 GB/s both ways: 2.5 s), then 50 GB in again.
  EXPECT_DOUBLE_EQ(predict_seconds(copart_traffic(50'000'000'000, 50'000'000'000), r), 2.5 + 2.0);
  // A merge adds its bytes at the CPU's rate, a host copy at the copy rate.
  EXPECT_DOUBLE_EQ(predict_seconds({0, 0, 0, 10'000'000'000, 0}, r), 2.0);
  EXPECT_DOUBLE_EQ(predict_seconds({0, 0, 0, 0, 10'000'000'000}, r), 1.0);
}

TEST(CostModel, ThePaperFlowMovesWholeTuplesAndMergesWhatTookSeveralChunksets) {
  std::vector<std::uint64_t> rk(1000), rp(1000), sk(3000);
  const RelationView r{{rk.data(), 1000, DType::UInt64}, MutableColumnView{rp.data(), 1000, DType::UInt64}};
  const RelationView s{{sk.data(), 3000, DType::UInt64}, std::nullopt};
  sort::SortPlan plan;
  plan.k_r = 1;
  plan.k_s = 3;
  const FlowTraffic t = paper_traffic(r, s, plan);
  EXPECT_EQ(t.in, 16'000u + 24'000u);
  EXPECT_EQ(t.out, t.in);
  EXPECT_EQ(t.again, 8'000u + 24'000u);  // keys for the join
  EXPECT_EQ(t.merged, 24'000u);          // S only
  EXPECT_EQ(t.copied, 24'000u);          // merged into buffers, copied back
  EXPECT_EQ(moved_bytes(r, false), 8'000u);
  EXPECT_EQ(moved_bytes(r, true), 16'000u);
  // On the H100's rates the bucketed flow of B scale 1 (16 GB of keys) beats the paper flow that sorts
  // 32 GB of tuples in three chunksets per relation.
  const topology::MeasuredBandwidths measured = h100();
  const Rates h = rates_for(&measured, 1);
  const double bucketed = predict_seconds(copart_traffic(16'000'000'000, 16'000'000'000), h);
  const double paper = predict_seconds({32'000'000'000, 32'000'000'000, 16'000'000'000, 32'000'000'000, 32'000'000'000}, h);
  EXPECT_LT(bucketed, paper);
  EXPECT_NEAR(bucketed, 0.32 + 0.291, 0.01);  // 32 GB both ways at 100 GB/s, then 16 GB at 55 GB/s
}

// The seed 2069041053 case of BucketedPlanner.AMemoryLimitHoldingNeitherRelationBuckets (2 GPUs, 104 MiB)
// printed "0.004 s, the paper flow 0.004 s" and chose the paper flow: equal predictions, or ones apart by
// float noise, keep the co-partitioned flow; the paper flow needs a lead of 10 %, and of 2 ms at least.
TEST(CostModel, ThePaperFlowIsChosenOnlyWhenFasterByTheMargin) {
  EXPECT_FALSE(paper_predicted_faster(0.004, 0.004));
  EXPECT_FALSE(paper_predicted_faster(0.0041, 0.0039));         // float noise
  EXPECT_FALSE(paper_predicted_faster(0.0045, 0.0030));         // 1.5 ms: within the 2 ms floor
  EXPECT_TRUE(paper_predicted_faster(0.0060, 0.0030));          // 3 ms ahead
  EXPECT_FALSE(paper_predicted_faster(1.000, 0.905));           // 9.5 %: within the 10 % share
  EXPECT_TRUE(paper_predicted_faster(1.000, 0.895));            // 10.5 %
  EXPECT_FALSE(paper_predicted_faster(0.5, 0.7));               // slower
  // The same predictions always give the same choice, whichever flow was computed first.
  for (double c = 0.001; c < 10; c *= 1.37) EXPECT_FALSE(paper_predicted_faster(c, c)) << c;
}

}  // namespace
}  // namespace mgjoin::detail
