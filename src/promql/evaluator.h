// The evaluator behind Engine: walks an AST over every step of a query at once, as Prometheus's
// engine does, so a selector is read from the store once per query, not once per step.
#pragma once

#include <atomic>
#include <cmath>
#include <limits>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/clock.h"
#include "promql/ast.h"
#include "promql/engine.h"
#include "store/labels.h"
#include "store/queryable.h"

namespace gpuscope::promql {

// One series of an intermediate result. drop_name defers removing __name__ to the end of the
// query (Prometheus 3's delayed name removal), so label_replace can still read it.
struct EvalSeries {
  store::Labels labels;
  bool drop_name = false;
  std::vector<Point> points;  // at step times, ascending
};
using EvalMatrix = std::vector<EvalSeries>;

struct EvalSample {
  store::Labels labels;
  double value = 0;
  bool drop_name = false;
  std::int64_t t_ms = 0;  // the step time, or the raw sample's time for a plain selector
};
using EvalVector = std::vector<EvalSample>;

// Thrown inside the evaluator only; Engine turns it into a QueryError (never crosses the module).
struct EvalFailure {
  QueryError error;
};

// One query's limits and how much of them it uses, shared by its evaluators (a subquery's too): the
// deadline and the limiter's cancel, checked every kWorkPerCheck units of work, and the samples held.
class QueryBudget {
 public:
  // A unit of work is a step, a sample or a point handled: a few ns (a selector's step) to about a µs
  // (a regex in label_replace). The clock and the cancel flag are read every 1024 units, so a query
  // ends microseconds to ~1 ms after its deadline or a cancel, while the clock's ~25 ns costs the
  // cheapest loop under 2%.
  static constexpr std::size_t kWorkPerCheck = 1024;

  QueryBudget(const EngineOptions& options, model::Clock::SteadyTime deadline, const std::atomic<bool>* canceled)
      : clock_(*options.clock), deadline_(deadline), canceled_(canceled), max_samples_(options.max_samples) {}

  void work(std::size_t units) {
    if (units >= countdown_) {
      check();
    } else {
      countdown_ -= units;
    }
  }
  // work() without throwing, for callbacks the store makes: the error that ends the query, if any.
  std::optional<QueryError> try_work(std::size_t units) {
    if (units < countdown_) {
      countdown_ -= units;
      return std::nullopt;
    }
    return interrupted();
  }
  // Reads the clock and the cancel flag now; throws EvalFailure when the query is to end.
  void check();
  std::optional<QueryError> interrupted();

  // Samples held at once, as Prometheus's --query.max-samples counts them.
  void hold(std::size_t n) {
    held_ += n;
    if (held_ > max_samples_) too_many();
  }
  bool fits(std::size_t more) const { return held_ + more <= max_samples_; }
  std::size_t held() const { return held_; }
  void set_held(std::size_t n) { held_ = n; }
  [[noreturn]] static void too_many() { throw EvalFailure{too_many_error()}; }
  static QueryError too_many_error() { return {QueryError::Kind::kTooManySamples, kTooManySamplesMessage}; }

 private:
  const model::Clock& clock_;
  const model::Clock::SteadyTime deadline_;
  const std::atomic<bool>* canceled_;
  const std::size_t max_samples_;
  std::size_t countdown_ = kWorkPerCheck;
  std::size_t held_ = 0;
};

class Evaluator {
 public:
  Evaluator(const store::Queryable& data, const EngineOptions& options, QueryBudget& budget, std::int64_t start_ms,
            std::int64_t end_ms, std::int64_t interval_ms);

  // Every node's value over all steps: a vector- or scalar-typed node as a matrix of step points
  // (a scalar is one series with no labels).
  EvalMatrix eval(const Expr& e);
  // A range-vector node at one instant (instant queries returning a range vector).
  EvalMatrix eval_range_at(const Expr& e, std::int64_t t_ms);

  std::vector<std::string> warnings;
  std::vector<std::string> infos;

  std::int64_t start() const { return start_; }
  std::int64_t end() const { return end_; }
  std::int64_t interval() const { return interval_; }
  std::size_t steps() const { return static_cast<std::size_t>((end_ - start_) / interval_) + 1; }

  // Calls fn at every step with each argument's samples at that step; collects outputs by labels.
  using StepFunction = std::function<EvalVector(std::span<const EvalVector> args, std::int64_t t_ms)>;
  EvalMatrix range_eval(std::span<const EvalMatrix* const> args, const StepFunction& fn);

  [[noreturn]] static void fail(std::string message, QueryError::Kind kind = QueryError::Kind::kExecution);

  QueryBudget& budget() { return budget_; }

 private:
  EvalMatrix eval_node(const Expr& e);
  EvalMatrix eval_vector_selector(const VectorSelector& vs, bool raw_timestamps);
  EvalMatrix eval_call(const Call& call);
  EvalMatrix eval_range_function(const Call& call, std::size_t matrix_arg);
  EvalMatrix eval_aggregate(const AggregateExpr& a);
  EvalMatrix eval_binary(const BinaryExpr& b);
  EvalMatrix eval_subquery_points(const SubqueryExpr& sq, std::int64_t& ref_min, std::int64_t& ref_max);

  // Reads the selector's series one at a time: `take` gets each, its samples held meanwhile, and
  // holds what it keeps of it.
  using SeriesTaker = std::function<void(store::SeriesSamples&& series)>;
  void select(const VectorSelector& vs, std::int64_t mint, std::int64_t maxt, const SeriesTaker& take);
  std::int64_t reference_time(const AtModifier& at, std::int64_t offset_ms, std::int64_t step_t) const;

  const store::Queryable& data_;
  const EngineOptions& options_;
  QueryBudget& budget_;
  std::int64_t start_, end_, interval_;
};

// Output series, interned by labels: every (input series, step) lands in one of them.
class OutputSeries {
 public:
  explicit OutputSeries(QueryBudget& budget) : budget_(budget) {}
  std::size_t slot(const store::Labels& labels, bool drop_name) {
    auto [it, inserted] = index_.emplace(labels, series_.size());
    if (inserted) series_.push_back(EvalSeries{labels, drop_name, {}});
    series_[it->second].drop_name = series_[it->second].drop_name || drop_name;
    return it->second;
  }
  void add(std::size_t slot, std::int64_t t, double v) {
    auto& pts = series_[slot].points;
    // Two inputs giving one output label set at one step: Prometheus's duplicate-labelset error.
    if (!pts.empty() && pts.back().t_ms == t) Evaluator::fail("vector cannot contain metrics with the same labelset");
    if (pts.empty()) order_.push_back(slot);
    budget_.hold(1);
    pts.push_back({t, v});
  }
  // In the order series first got a value: an instant query's result keeps the order it was made in
  // (topk's ranking, sort()).
  EvalMatrix take() {
    EvalMatrix out;
    out.reserve(order_.size());
    for (const std::size_t slot : order_) out.push_back(std::move(series_[slot]));
    return out;
  }

 private:
  QueryBudget& budget_;
  std::unordered_map<store::Labels, std::size_t, store::LabelsHash> index_;
  std::vector<EvalSeries> series_;
  std::vector<std::size_t> order_;
};

// Walks a matrix step by step: at() gives the series' value at the current step, if it has one.
class StepCursor {
 public:
  explicit StepCursor(const EvalMatrix& m) : m_(m), pos_(m.size(), 0) {}
  void advance(std::int64_t t) {
    t_ = t;
    for (std::size_t s = 0; s < m_.size(); ++s) {
      const auto& pts = m_[s].points;
      while (pos_[s] < pts.size() && pts[pos_[s]].t_ms < t) ++pos_[s];
    }
  }
  const Point* at(std::size_t s) const {
    const auto& pts = m_[s].points;
    return pos_[s] < pts.size() && pts[pos_[s]].t_ms == t_ ? &pts[pos_[s]] : nullptr;
  }

 private:
  const EvalMatrix& m_;
  std::vector<std::size_t> pos_;
  std::int64_t t_ = 0;
};

// Implemented in function_calls.cc / aggregation.cc / binary_ops.cc.
using InstantFunction = std::function<EvalVector(std::span<const EvalVector> args, const Call& call,
                                                 std::int64_t t_ms, Evaluator& ev)>;
const InstantFunction* find_instant_function(std::string_view name);

// A range function over one series' window: the window's samples (staleness markers removed), the
// window bounds, and the step's scalar arguments. nullopt: no output for this series at this step.
struct RangeWindow {
  std::span<const Point> points;
  std::int64_t range_start_ms;  // exclusive
  std::int64_t range_end_ms;    // inclusive
  std::int64_t range_ms;
  std::int64_t t_ms;            // the step time
  bool anchored = false;
  bool smoothed = false;
};
using RangeFunction = std::function<std::optional<double>(const RangeWindow& w, std::span<const double> scalars)>;
const RangeFunction* find_range_function(std::string_view name);
// Labels for absent()/absent_over_time(): the selector's equality matchers, except labels matched
// more than once.
store::Labels absent_function_labels(const Call& call);
// Whether a range function keeps the metric name (last_over_time, first_over_time).
bool range_function_keeps_name(std::string_view name);

// Prometheus's quantile over a set of values (linear interpolation between closest ranks).
double quantile_of(double q, std::vector<double> values);
// Kahan-Babuska summation step, as Prometheus's kahansum.Inc.
inline void kahan_add(double inc, double& sum, double& c);

inline void kahan_add(double inc, double& sum, double& c) {
  const double t = sum + inc;
  if (t == std::numeric_limits<double>::infinity() || t == -std::numeric_limits<double>::infinity()) {
    c = 0;
  } else if (std::abs(sum) >= std::abs(inc)) {
    c += (sum - t) + inc;
  } else {
    c += (inc - t) + sum;
  }
  sum = t;
}

struct BinaryResult {
  double value;
  bool keep;  // comparisons: whether the comparison holds (value is then the left operand)
};
BinaryResult apply_binary_op(BinaryOp op, double lhs, double rhs);

// The mean of n >= 1 values as Prometheus takes it (avg, avg_over_time): a direct mean with Kahan
// summation while the sum stays finite, then an incremental mean, so large inputs cannot overflow
// and ordinary ones keep their precision. value(i) is the i-th value.
template <class Value>
double kahan_mean(std::size_t n, Value value) {
  double sum = value(0), c = 0, mean = 0;
  bool incremental = false;
  for (std::size_t i = 1; i < n; ++i) {
    const double count = static_cast<double>(i + 1);
    const double v = value(i);
    if (!incremental) {
      double ns = sum, nc = c;
      kahan_add(v, ns, nc);
      if (!std::isinf(ns)) {
        sum = ns;
        c = nc;
        continue;
      }
      incremental = true;
      mean = sum / (count - 1);
      c /= (count - 1);
    }
    const double q = (count - 1) / count;
    mean *= q;
    c *= q;
    kahan_add(v / count, mean, c);
  }
  const double total = static_cast<double>(n);
  return incremental ? mean + c : sum / total + c / total;
}

EvalMatrix eval_aggregation(Evaluator& ev, const AggregateExpr& a, const EvalMatrix& input, const EvalMatrix* param);
EvalMatrix eval_vector_binary(Evaluator& ev, const BinaryExpr& b, const EvalMatrix& lhs, const EvalMatrix& rhs);

// Adds Prometheus's warning for a quantile outside [0, 1] (once per query).
void warn_quantile(Evaluator& ev, double q);

// Go's strconv.FormatFloat(f, 'f', -1, 64): shortest text that reads back to the same double.
std::string format_float_shortest(double v);

}  // namespace gpuscope::promql
