// The PromQL evaluator: instant and range queries over a store::Queryable with Prometheus 3 semantics
// (left-open range windows, lookback delta, staleness markers, metric-name dropping).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/clock.h"
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
  // kUnsupported: valid PromQL that gpuscope does not evaluate (yet); kTooManySamples: an execution
  // error, told apart so the agent can count it.
  enum class Kind { kBadData, kExecution, kTimeout, kCanceled, kStorage, kUnsupported, kTooManySamples };
  Kind kind = Kind::kExecution;
  std::string message;
};
const char* error_type_name(QueryError::Kind kind);  // "bad_data", "execution", ...

struct QueryResult {
  Value value;
  std::vector<std::string> warnings;
  std::vector<std::string> infos;
};

class QueryLimiter;
class QueryBudget;

// --query.max-samples' default. Prometheus's 50M suits a server; a sample held by a query costs 16
// bytes (time and value), so 1M keeps a query's samples to 16 MiB (about 32 MiB while a vector grows)
// next to an agent of ~16 MiB. It is a day of one metric for 8 GPUs read every second (691,200) with
// room to spare; longer windows over every GPU need a larger --query.max-samples.
inline constexpr std::size_t kDefaultMaxSamples = 1'000'000;
// What --query.max-samples accepts: below a thousand not even 20 minutes of one GPU's readings at 1 s
// fit (a typo, not a limit); above a billion one query could take 16 GB, more than a node can spare.
inline constexpr long long kMinMaxSamples = 1000;
inline constexpr long long kMaxMaxSamples = 1'000'000'000;
// The default --query-timeout, as Prometheus's --query.timeout.
inline constexpr std::chrono::milliseconds kDefaultQueryTimeout = std::chrono::minutes(2);

struct EngineOptions {
  std::int64_t lookback_delta_ms = 5 * 60 * 1000;
  std::int64_t default_subquery_step_ms = 60 * 1000;  // Prometheus: the global evaluation interval
  // Samples a query may hold in memory at once, as Prometheus counts them (samples read from the store
  // plus points of intermediate results and subqueries), as --query.max-samples.
  std::size_t max_samples = kDefaultMaxSamples;
  // From the call into the engine: waiting for a limiter slot counts, as in Prometheus.
  std::chrono::milliseconds timeout = kDefaultQueryTimeout;
  bool enable_experimental_functions = true;
  // The deadline's clock: the system's, or a VirtualClock in tests.
  const model::Clock* clock = &model::system_clock();
  // Shared by every query of the agent (concurrency slots, cancel_all); null: no bound (one-off queries).
  QueryLimiter* limiter = nullptr;
};

// Prometheus's error texts (promql/engine.go): the "in ..." part names where the query was.
inline constexpr const char* kTooManySamplesMessage =
    "query processing would load too many samples into memory in query execution";
inline constexpr const char* kTimeoutMessage = "query timed out in expression evaluation";
inline constexpr const char* kCanceledMessage = "query was canceled in expression evaluation";

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
  std::expected<QueryResult, QueryError> evaluate_within(const store::Queryable& data, const Expr& expr,
                                                         std::int64_t start_ms, std::int64_t end_ms,
                                                         std::int64_t step_ms, bool instant, QueryBudget& budget) const;

  EngineOptions options_;
};

}  // namespace gpuscope::promql
