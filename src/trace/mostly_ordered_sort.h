// sort_mostly_ordered: a stable sort for arrays that are largely in order already, as a trace's events
// are. Kineto writes each thread's and stream's events in time order, so a merged array is a few long
// ordered runs (the real trace's 9450 launches are 4 runs) with some local disorder (a copy written
// after the kernels around it). Ordered stretches are found as they are, short ones are made 32 long by
// insertion, and neighbouring runs are merged until one is left: linear work on such input, where
// std::sort did n log n and on the real trace fell back to heap sort. Random input costs about what a
// merge sort does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gpuscope::trace {

template <typename It, typename Less>
void sort_mostly_ordered(It first, It last, Less less) {
  constexpr std::ptrdiff_t kMinRun = 32;
  const std::ptrdiff_t n = last - first;
  std::vector<std::ptrdiff_t> bounds{0};  // run i is [bounds[i], bounds[i + 1])
  for (std::ptrdiff_t begin = 0; begin < n;) {
    std::ptrdiff_t end = begin + 1;
    while (end < n && !less(first[end], first[end - 1])) ++end;
    if (end - begin < kMinRun) {
      const std::ptrdiff_t until = std::min(n, begin + kMinRun);
      for (; end < until; ++end) {  // insert first[end] into the ordered [begin, end)
        const It place = std::upper_bound(first + begin, first + end, first[end], less);
        std::rotate(place, first + end, first + end + 1);
      }
    }
    bounds.push_back(end);
    begin = end;
  }
  while (bounds.size() > 2) {
    std::vector<std::ptrdiff_t> merged{0};
    std::size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      std::inplace_merge(first + bounds[k], first + bounds[k + 1], first + bounds[k + 2], less);
      merged.push_back(bounds[k + 2]);
    }
    if (k + 1 < bounds.size()) merged.push_back(bounds[k + 1]);  // an odd run out waits for the next round
    bounds = std::move(merged);
  }
}

}  // namespace gpuscope::trace
