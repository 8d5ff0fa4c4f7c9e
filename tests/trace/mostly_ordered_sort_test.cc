// sort_mostly_ordered against std::stable_sort on every shape of input it meets or might: the trace
// shapes it is built for (a few long runs, local disorder) and the ones it must merely survive (random,
// reversed, all equal), at every size around its 32-element runs. Equal keys carry their input position,
// so the comparison checks stability too.
#include "trace/mostly_ordered_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace gpuscope::trace {
namespace {

struct Item {
  int key;
  int position;
  bool operator==(const Item&) const = default;
};

std::vector<Item> shaped(int shape, int n, std::mt19937& random) {
  std::vector<Item> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    int key = 0;
    switch (shape) {
      case 0: key = static_cast<int>(random() % 1000); break;           // random, many equal keys
      case 1: key = i; break;                                            // ordered
      case 2: key = n - i; break;                                        // reversed
      case 3: key = 7; break;                                            // all equal
      case 4: key = (i % (n / 4 + 1)) * 10; break;                       // four interleaved threads' runs
      case 5: key = i * 10 + static_cast<int>(random() % 25) - 12; break;  // nearly ordered
      default: key = i < n / 2 ? i * 2 : (i - n / 2) * 2 + 1; break;     // two runs to zip
    }
    v[static_cast<std::size_t>(i)] = Item{key, i};
  }
  return v;
}

TEST(SortMostlyOrdered, SameAsStableSortOnEveryShapeAndSize) {
  std::mt19937 random(5);
  auto less = [](const Item& a, const Item& b) { return a.key < b.key; };
  for (int shape = 0; shape < 7; ++shape) {
    for (int n : {0, 1, 2, 31, 32, 33, 63, 64, 65, 100, 257, 1000, 5000}) {
      std::vector<Item> got = shaped(shape, n, random);
      std::vector<Item> expected = got;
      std::stable_sort(expected.begin(), expected.end(), less);
      sort_mostly_ordered(got.begin(), got.end(), less);
      ASSERT_EQ(got, expected) << "shape " << shape << ", " << n << " items";
    }
  }
}

}  // namespace
}  // namespace gpuscope::trace
