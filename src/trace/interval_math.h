// Interval arithmetic on [start, end) nanosecond ranges: union, total length, intersection, gaps. The
// GPU busy/idle, overlap and data-loading figures are all built from these.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuscope::trace {

struct Interval {
  std::int64_t start = 0;
  std::int64_t end = 0;
};

// Sorts and merges overlapping or touching intervals into a disjoint, ordered list.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);

std::int64_t total_length(const std::vector<Interval>& disjoint);

// Length of the intersection of two disjoint, ordered lists.
std::int64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace gpuscope::trace
