// Judging one query's outcome against an eval command's expectations, by promqltest's rules:
// relative tolerance 1e-6, NaN equals NaN, exact label sets, order only when `ordered`.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "promql/engine.h"
#include "promql_script.h"

namespace gpuscope::conformance {

inline constexpr double kRelativeTolerance = 1e-6;

// Prometheus's util/almost.Equal: NaN equals NaN; near zero (or subnormal) an absolute bound of
// epsilon times the smallest normal double; otherwise the difference relative to |a|+|b|.
bool almost_equal(double a, double b, double epsilon = kRelativeTolerance);

bool message_matches(const MessageMatch& match, std::string_view message);

// Each check returns a one-line reason on mismatch.
std::expected<void, std::string> compare_result(const EvalCommand& eval, const promql::Value& value);
std::expected<void, std::string> check_annotations(const EvalCommand& eval, const promql::QueryResult& result);
// For a query that failed with `error` while the eval expects failure.
std::expected<void, std::string> check_failure(const EvalCommand& eval, std::string_view error);
// Range results must come sorted by labels, as Prometheus's API returns them.
std::expected<void, std::string> check_sorted(const promql::Matrix& matrix);

// A short rendering of a result for failure messages ("{a="b"} 1, {a="c"} 2, ... (7 series)").
std::string describe(const promql::Value& value);

}  // namespace gpuscope::conformance
