// The PromQL evaluator: instant and range queries over a store::Queryable with Prometheus 3 semantics
// (left-open range windows, lookback delta, staleness markers, metric-name dropping).
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "promql/ast.h"
#include "store/labels.h"
#include "store/queryable.h"

namespace gpuscope::promql {

struct Point {
  std::int64_t t_ms;
  double value;
};

struct Scalar {
  std::int64_t t_ms;
  double value;
};
struct String {
  std::int64_t t_ms;
  std::string value;
};
struct InstantSample {
  store::Labels labels;
  std::int64_t t_ms;
  double value;
};
using Vector = std::vector<InstantSample>;
struct Series {
  store::Labels labels;
  std::vector<Point> points;
};
using Matrix = std::vector<Series>;

using Value = std::variant<Scalar, String, Vector, Matrix>;

struct QueryError {
  // Prometheus's API errorType values: bad_data (parse/type errors), execution, timeout, canceled;
  // kUnsupported: valid PromQL that gpuscope does not evaluate (yet).
  enum class Kind { kBadData, kExecution, kTimeout, kCanceled, kStorage, kUnsupported };
  Kind kind = Kind::kExecution;
  std::string message;
};
const char* error_type_name(QueryError::Kind kind);  // "bad_data", "execution", ...

struct QueryResult {
  Value value;
  std::vector<std::string> warnings;
  std::vector<std::string> infos;
};

struct EngineOptions {
  std::int64_t lookback_delta_ms = 5 * 60 * 1000;
  std::int64_t default_subquery_step_ms = 60 * 1000;  // Prometheus: the global evaluation interval
  std::size_t max_samples = 50'000'000;               // samples loaded at once, as --query.max-samples
  std::chrono::milliseconds timeout{std::chrono::minutes(2)};
  bool enable_experimental_functions = true;
};

class Engine {
 public:
  explicit Engine(EngineOptions options = {}) : options_(options) {}

  std::expected<QueryResult, QueryError> instant(const store::Queryable& data, std::string_view query,
                                                 std::int64_t t_ms) const;
  // Always a matrix (a scalar expression gives one series with no labels), as Prometheus's range API.
  std::expected<QueryResult, QueryError> range(const store::Queryable& data, std::string_view query,
                                               std::int64_t start_ms, std::int64_t end_ms,
                                               std::int64_t step_ms) const;
  // Same, for an already parsed expression.
  std::expected<QueryResult, QueryError> evaluate(const store::Queryable& data, const Expr& expr,
                                                  std::int64_t start_ms, std::int64_t end_ms, std::int64_t step_ms,
                                                  bool instant) const;

  const EngineOptions& options() const { return options_; }

 private:
  EngineOptions options_;
};

}  // namespace gpuscope::promql
