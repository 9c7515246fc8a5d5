// Interval covers as the report sums them: merging, and the overlap of two covers that gives a
// rank's busy time (compute or communication) without building their union.
#include "sim/intervals.h"

#include <gtest/gtest.h>

#include <random>

namespace cs::sim {
namespace {

TEST(Intervals, MergeJoinsOverlapsAndDropsEmpty) {
  // [5,8) and [7,10) overlap -> [5,10); [10,12) touches it -> [5,12); [20,20) is empty.
  const auto m = merge_intervals({{10, 12}, {5, 8}, {20, 20}, {7, 10}, {30, 31}});
  EXPECT_EQ(m, (std::vector<Interval>{{5, 12}, {30, 31}}));
  EXPECT_EQ(covered_length(m), 8);
}

TEST(Intervals, OverlapOfTwoCoversByHand) {
  // compute [0,10) [20,30); comm [5,25): both cover [5,10) and [20,25) = 10, so the union
  // [0,30) = 20 + 20 - 10 = 30.
  const std::vector<Interval> compute{{0, 10}, {20, 30}}, comm{{5, 25}};
  EXPECT_EQ(overlap_length(compute, comm), 10);
  EXPECT_EQ(overlap_length(comm, compute), 10);
  EXPECT_EQ(overlap_length(compute, {}), 0);
}

// Merged in steps as it grows, the cover is the one merging everything at once gives: 20,000
// intervals (past the first merge at 4,096, and several doublings after it), half of them
// back-to-back kernels that merge into runs, half scattered.
TEST(Intervals, CoverBuilderGivesTheSameCoverAsOneMerge) {
  std::mt19937 rng(11);
  std::vector<Interval> all;
  CoverBuilder cover;
  int64_t t = 0;
  for (int i = 0; i < 20000; ++i) {
    Interval iv;
    if (i % 2 == 0) {  // the next kernel, after a gap now and then
      t += rng() % 8 == 0 ? 50 : 0;
      iv = {t, t + 10};
      t += 10;
    } else {
      const int64_t s = rng() % 300000;
      iv = {s, s + static_cast<int64_t>(rng() % 40)};
    }
    all.push_back(iv);
    cover.add(iv.first, iv.second);
  }
  EXPECT_EQ(cover.take(), merge_intervals(all));
}

// The identity the report relies on, against the union built by merging, on random covers.
TEST(Intervals, UnionIsSumLessOverlap) {
  std::mt19937 rng(3);
  for (int round = 0; round < 200; ++round) {
    std::vector<Interval> a, b;
    for (int i = 0; i < 30; ++i) {
      const int64_t s = rng() % 1000;
      (rng() % 2 ? a : b).emplace_back(s, s + rng() % 60);
    }
    a = merge_intervals(a);
    b = merge_intervals(b);
    std::vector<Interval> both = a;
    both.insert(both.end(), b.begin(), b.end());
    EXPECT_EQ(covered_length(merge_intervals(both)),
              covered_length(a) + covered_length(b) - overlap_length(a, b));
  }
}

}  // namespace
}  // namespace cs::sim
