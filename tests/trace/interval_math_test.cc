#include "trace/interval_math.h"

#include <gtest/gtest.h>

namespace gpuscope::trace {
namespace {

TEST(IntervalMath, MergesOverlappingAndTouchingIntervalsInAnyOrder) {
  auto merged = merge_intervals({{50, 60}, {0, 10}, {5, 20}, {20, 30}, {40, 40}});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].start, 0);
  EXPECT_EQ(merged[0].end, 30);
  EXPECT_EQ(merged[1].start, 50);
  EXPECT_EQ(total_length(merged), 40);
}

TEST(IntervalMath, IntersectionOfTwoDisjointLists) {
  const std::vector<Interval> a{{0, 10}, {20, 30}};
  const std::vector<Interval> b{{5, 25}, {28, 40}};
  EXPECT_EQ(intersection_length(a, b), 5 + 5 + 2);
  EXPECT_EQ(intersection_length(a, {}), 0);
}

}  // namespace
}  // namespace gpuscope::trace
