// Prometheus's expanding series notation (`metric{a="b"} 0+10x5 _ stale -1x2`), in which PromQL test
// scripts (`load`) and `promtool test rules` input_series write a series and its samples.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "store/labels.h"
#include "store/queryable.h"

namespace gpuscope::promql {

// One position of the expanded sequence; position i stands for time start + i * step.
struct SeriesPoint {
  enum class Kind { kValue, kMissing, kStale };
  Kind kind = Kind::kValue;
  double value = 0;  // meaningful for kValue only

  bool operator==(const SeriesPoint&) const = default;
};

struct SeriesDescription {
  store::Labels labels;  // the metric name, if any, as __name__
  std::vector<SeriesPoint> points;
};

// Parses one line: labels (`name{l="v", ...}`, `{__name__="x", l="v"}`, `name`, `{}`), then the
// whitespace-separated items `v`, `vxN` (N+1 copies), `a+bxN` / `a-bxN` (N+1 values, stepping by b),
// `_`, `_xN` (N missing), `stale`; values may be signed, `Inf` or `NaN`. Errors name the column.
// Native histogram items (`{{...}}`) are refused with a message that starts with "unsupported", so a
// caller can tell "gpuscope does not do this" from "the line is malformed".
std::expected<SeriesDescription, std::string> parse_series_description(std::string_view line);

// Parses just the label part (`name{l="v"}`, `{__name__="x"}`); nothing may follow it.
std::expected<store::Labels, std::string> parse_series_labels(std::string_view text);

// A label value's literal alone: `"a\"b"`, `'x'` or `raw` in backquotes, with Go's escapes.
std::expected<std::string, std::string> unquote_string_literal(std::string_view quoted);

// The samples the points stand for: missing points are left out, stale points become
// store::stale_marker().
std::vector<store::Sample> expand_samples(const std::vector<SeriesPoint>& points, std::int64_t start_ms,
                                          std::int64_t step_ms);

}  // namespace gpuscope::promql
