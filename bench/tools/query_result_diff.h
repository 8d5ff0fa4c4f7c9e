// QueryResultDiff: whether two Prometheus-API query_range responses (gpuscope's and Prometheus's for
// the same expression) hold the same series and the same points, values within a relative tolerance.
#pragma once

#include <cstddef>
#include <expected>
#include <string>
#include <string_view>

namespace gpuscope::bench {

struct QueryResultDiff {
  std::size_t series_left = 0, series_right = 0;
  std::size_t points = 0;      // compared (present on both sides)
  std::size_t mismatches = 0;  // series on one side only, point sets that differ, values out of tolerance
  std::string first_mismatch;  // a readable example, empty when none
  bool same() const { return mismatches == 0; }
};

// Values a and b agree when both are NaN, or |a - b| <= rel * max(|a|, |b|), or |a - b| <= abs (for
// results near zero, e.g. deriv of a flat series, where summation order leaves noise of ~1e-15).
// An error: a body that is not a successful matrix response.
std::expected<QueryResultDiff, std::string> diff_query_results(std::string_view left_json, std::string_view right_json,
                                                               double rel, double abs);

}  // namespace gpuscope::bench
