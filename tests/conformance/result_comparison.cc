#include "result_comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace gpuscope::conformance {
namespace {

using promql::SeriesPoint;

constexpr std::size_t kDescribedSeries = 4;
constexpr std::size_t kDescribedPoints = 6;

std::string labels_text(const store::Labels& labels) {
  std::string text = labels.to_string();
  return text.empty() ? "{}" : text;
}

// The value an expected point stands for: `stale` is a NaN to promqltest, `_` a zero it never reads.
double expected_value(const SeriesPoint& p) {
  switch (p.kind) {
    case SeriesPoint::Kind::kValue: return p.value;
    case SeriesPoint::Kind::kStale: return store::stale_marker();
    case SeriesPoint::Kind::kMissing: return 0;
  }
  return 0;
}

std::string points_text(const std::vector<promql::Point>& points) {
  std::string out;
  for (std::size_t i = 0; i < points.size() && i < kDescribedPoints; ++i) {
    out += fmt::format("{}{}@{}", i == 0 ? "" : " ", points[i].value, points[i].t_ms);
  }
  if (points.size() > kDescribedPoints) out += fmt::format(" ... ({} points)", points.size());
  return out;
}

const ExpectedSeries* find_expected(const EvalCommand& eval, const store::Labels& labels) {
  auto it = std::ranges::find(eval.expected_series, labels, &ExpectedSeries::labels);
  return it == eval.expected_series.end() ? nullptr : &*it;
}

std::expected<void, std::string> fail(std::string why) { return std::unexpected(std::move(why)); }

std::expected<void, std::string> compare_matrix(const EvalCommand& eval, const promql::Matrix& matrix) {
  if (eval.ordered()) return fail("expected ordered result, but query returned a matrix");
  if (eval.expected_scalar) return fail(fmt::format("expected scalar {}, got matrix {}", *eval.expected_scalar, describe(matrix)));
  if (auto sorted = check_sorted(matrix); !sorted) return sorted;
  bool has_grid = eval.is_range || eval.expect_range_vector;
  std::set<const ExpectedSeries*> seen;
  for (const auto& series : matrix) {
    const ExpectedSeries* expected = find_expected(eval, series.labels);
    if (!expected) {
      return fail(fmt::format("unexpected series {} with {}", labels_text(series.labels), points_text(series.points)));
    }
    seen.insert(expected);
    std::vector<promql::Point> want;
    for (std::size_t i = 0; i < expected->points.size(); ++i) {
      std::int64_t t = eval.start_ms + static_cast<std::int64_t>(i) * eval.step_ms;
      if (!has_grid || t > eval.end_ms) {
        return fail(fmt::format("expected {} points for {}, but the query range cannot hold that many",
                                expected->points.size(), labels_text(series.labels)));
      }
      if (expected->points[i].kind != SeriesPoint::Kind::kMissing) want.push_back({t, expected_value(expected->points[i])});
    }
    if (want.size() != series.points.size()) {
      return fail(fmt::format("{}: expected {} points ({}), got {} ({})", labels_text(series.labels), want.size(),
                              points_text(want), series.points.size(), points_text(series.points)));
    }
    for (std::size_t i = 0; i < want.size(); ++i) {
      const auto& got = series.points[i];
      if (got.t_ms != want[i].t_ms || !almost_equal(want[i].value, got.value)) {
        return fail(fmt::format("{}: point {} expected {} at t={}, got {} at t={}", labels_text(series.labels), i,
                                want[i].value, want[i].t_ms, got.value, got.t_ms));
      }
    }
  }
  for (const auto& expected : eval.expected_series) {
    if (!seen.contains(&expected)) {
      return fail(fmt::format("expected series {} missing; got {}", labels_text(expected.labels), describe(matrix)));
    }
  }
  return {};
}

std::expected<void, std::string> compare_vector(const EvalCommand& eval, const promql::Vector& vector) {
  if (eval.expected_scalar) return fail(fmt::format("expected scalar {}, got vector {}", *eval.expected_scalar, describe(vector)));
  std::set<const ExpectedSeries*> seen;
  for (std::size_t pos = 0; pos < vector.size(); ++pos) {
    const auto& sample = vector[pos];
    const ExpectedSeries* expected = find_expected(eval, sample.labels);
    if (!expected) {
      return fail(fmt::format("unexpected series {} {} (expected {} series)", labels_text(sample.labels), sample.value,
                              eval.expected_series.size()));
    }
    if (eval.ordered() && expected->position != static_cast<int>(pos) + 1) {
      return fail(fmt::format("expected {} at position {}, got it at {}", labels_text(sample.labels), expected->position,
                              pos + 1));
    }
    if (expected->points.empty()) return fail(fmt::format("expected line for {} has no value", labels_text(sample.labels)));
    double want = expected_value(expected->points.front());
    if (!almost_equal(want, sample.value)) {
      return fail(fmt::format("{}: expected {}, got {}", labels_text(sample.labels), want, sample.value));
    }
    seen.insert(expected);
  }
  for (const auto& expected : eval.expected_series) {
    if (!seen.contains(&expected)) {
      return fail(fmt::format("expected series {} missing; got {}", labels_text(expected.labels), describe(vector)));
    }
  }
  return {};
}

std::expected<void, std::string> check_annotations_of(std::string_view what, const EvalCommand& eval,
                                                      Expectation::Kind kind, const std::vector<std::string>& actual) {
  std::vector<const MessageMatch*> wanted;
  for (const auto& e : eval.expectations) {
    if (e.kind == kind) wanted.push_back(&e.match);
  }
  if (wanted.empty()) return {};
  if (actual.empty()) return fail(fmt::format("expected {} annotations, got none", what));
  for (const MessageMatch* w : wanted) {
    if (std::ranges::none_of(actual, [&](const std::string& a) { return message_matches(*w, a); })) {
      return fail(fmt::format("expected {} annotation matching \"{}\", got [{}]", what, w->text, fmt::join(actual, "; ")));
    }
  }
  for (const auto& a : actual) {
    if (std::ranges::none_of(wanted, [&](const MessageMatch* w) { return message_matches(*w, a); })) {
      return fail(fmt::format("unexpected {} annotation \"{}\"", what, a));
    }
  }
  return {};
}

}  // namespace

bool almost_equal(double a, double b, double epsilon) {
  if (std::isnan(a) && std::isnan(b)) return true;
  if (a == b) return true;
  const double min_normal = std::numeric_limits<double>::min();
  double abs_sum = std::abs(a) + std::abs(b);
  double diff = std::abs(a - b);
  if (a == 0 || b == 0 || abs_sum < min_normal) return diff < epsilon * min_normal;
  return diff / std::min(abs_sum, std::numeric_limits<double>::max()) < epsilon;
}

bool message_matches(const MessageMatch& match, std::string_view message) {
  switch (match.kind) {
    case MessageMatch::Kind::kAny: return true;
    case MessageMatch::Kind::kExact: return match.text == message;
    case MessageMatch::Kind::kRegex: return RE2::PartialMatch(message, RE2(match.text));  // Go's MatchString searches
  }
  return false;
}

std::expected<void, std::string> compare_result(const EvalCommand& eval, const promql::Value& value) {
  if (const auto* matrix = std::get_if<promql::Matrix>(&value)) return compare_matrix(eval, *matrix);
  if (const auto* vector = std::get_if<promql::Vector>(&value)) return compare_vector(eval, *vector);
  if (const auto* scalar = std::get_if<promql::Scalar>(&value)) {
    if (!eval.expected_scalar) return fail(fmt::format("expected a vector or matrix, got scalar {}", scalar->value));
    if (!almost_equal(*eval.expected_scalar, scalar->value)) {
      return fail(fmt::format("expected scalar {}, got {}", *eval.expected_scalar, scalar->value));
    }
    return {};
  }
  const auto& string = std::get<promql::String>(value);
  if (string.value != eval.expected_string) {
    return fail(fmt::format("expected string \"{}\", got \"{}\"", eval.expected_string, string.value));
  }
  return {};
}

std::expected<void, std::string> check_annotations(const EvalCommand& eval, const promql::QueryResult& result) {
  using Kind = Expectation::Kind;
  if (eval.legacy_warn && result.warnings.empty()) return fail("expected warnings (eval_warn), got none");
  if (eval.legacy_info && result.infos.empty()) return fail("expected info annotations (eval_info), got none");
  if (auto ok = check_annotations_of("warn", eval, Kind::kWarn, result.warnings); !ok) return ok;
  if (auto ok = check_annotations_of("info", eval, Kind::kInfo, result.infos); !ok) return ok;
  if (eval.expects(Kind::kNoWarn) && !result.warnings.empty()) {
    return fail(fmt::format("unexpected warnings [{}]", fmt::join(result.warnings, "; ")));
  }
  if (eval.expects(Kind::kNoInfo) && !result.infos.empty()) {
    return fail(fmt::format("unexpected info annotations [{}]", fmt::join(result.infos, "; ")));
  }
  return {};
}

std::expected<void, std::string> check_failure(const EvalCommand& eval, std::string_view error) {
  for (const auto& e : eval.expectations) {
    if (e.kind == Expectation::Kind::kFail && !message_matches(e.match, error)) {
      return fail(fmt::format("expected error {}\"{}\", got \"{}\"",
                              e.match.kind == MessageMatch::Kind::kRegex ? "matching " : "", e.match.text, error));
    }
  }
  return {};
}

std::expected<void, std::string> check_sorted(const promql::Matrix& matrix) {
  for (std::size_t i = 1; i < matrix.size(); ++i) {
    if (matrix[i].labels < matrix[i - 1].labels) {
      return fail(fmt::format("matrix not sorted by labels: {} comes after {}", labels_text(matrix[i].labels),
                              labels_text(matrix[i - 1].labels)));
    }
  }
  return {};
}

std::string describe(const promql::Value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, promql::Scalar>) {
          return fmt::format("scalar {}", v.value);
        } else if constexpr (std::is_same_v<T, promql::String>) {
          return fmt::format("string \"{}\"", v.value);
        } else {
          if (v.empty()) return "nothing";
          std::string out;
          for (std::size_t i = 0; i < v.size() && i < kDescribedSeries; ++i) {
            if (i > 0) out += ", ";
            if constexpr (std::is_same_v<T, promql::Vector>) {
              out += fmt::format("{} {}", labels_text(v[i].labels), v[i].value);
            } else {
              out += fmt::format("{} [{}]", labels_text(v[i].labels), points_text(v[i].points));
            }
          }
          if (v.size() > kDescribedSeries) out += fmt::format(", ... ({} series)", v.size());
          return out;
        }
      },
      value);
}

}  // namespace gpuscope::conformance
