#include "trace/interval_math.h"

#include <algorithm>

#include "trace/mostly_ordered_sort.h"

namespace gpuscope::trace {

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  sort_mostly_ordered(intervals.begin(), intervals.end(),
                      [](const Interval& x, const Interval& y) { return x.start < y.start; });
  std::vector<Interval> merged;
  for (const Interval& i : intervals) {
    if (i.end <= i.start) continue;
    if (!merged.empty() && i.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, i.end);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

std::int64_t total_length(const std::vector<Interval>& disjoint) {
  std::int64_t sum = 0;
  for (const Interval& i : disjoint) sum += i.end - i.start;
  return sum;
}

std::int64_t intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t sum = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].start, b[j].start);
    const std::int64_t hi = std::min(a[i].end, b[j].end);
    if (hi > lo) sum += hi - lo;
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return sum;
}

}  // namespace gpuscope::trace
