#include "promql/engine.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "promql/evaluator.h"
#include "promql/parser.h"
#include "promql/query_limiter.h"

namespace gpuscope::promql {

const char* error_type_name(QueryError::Kind kind) {
  switch (kind) {
    case QueryError::Kind::kBadData: return "bad_data";
    case QueryError::Kind::kExecution: return "execution";
    case QueryError::Kind::kTimeout: return "timeout";
    case QueryError::Kind::kCanceled: return "canceled";
    case QueryError::Kind::kStorage: return "internal";
    case QueryError::Kind::kUnsupported: return "bad_data";
    case QueryError::Kind::kTooManySamples: return "execution";
  }
  return "execution";
}

namespace {

// The end of delayed name removal: drop __name__ where an operation asked for it. Series that now
// share a label set are one series if their points never share a time (-a where `a` changed names),
// and an error otherwise, as in Prometheus.
void finish_names(EvalMatrix& m) {
  bool dropped = false;
  for (auto& s : m) {
    if (s.drop_name && s.labels.has(store::kMetricNameLabel)) {
      s.labels.remove(store::kMetricNameLabel);
      dropped = true;
    }
  }
  if (!dropped) return;
  std::unordered_map<store::Labels, std::size_t, store::LabelsHash> first;
  EvalMatrix merged;
  for (auto& s : m) {
    auto [it, inserted] = first.emplace(s.labels, merged.size());
    if (inserted) {
      merged.push_back(std::move(s));
      continue;
    }
    auto& into = merged[it->second].points;
    std::vector<Point> all;
    all.reserve(into.size() + s.points.size());
    std::merge(into.begin(), into.end(), s.points.begin(), s.points.end(), std::back_inserter(all),
               [](const Point& a, const Point& b) { return a.t_ms < b.t_ms; });
    for (std::size_t i = 1; i < all.size(); ++i) {
      if (all[i].t_ms == all[i - 1].t_ms) Evaluator::fail("vector cannot contain metrics with the same labelset");
    }
    into = std::move(all);
  }
  m = std::move(merged);
}

std::expected<ExprPtr, QueryError> parse_query(std::string_view query, const EngineOptions& options) {
  ParseOptions po;
  po.enable_experimental_functions = options.enable_experimental_functions;
  auto parsed = parse_expr(query, po);
  if (!parsed) {
    const bool unsupported = parsed.error().message.starts_with("unsupported");
    return std::unexpected(QueryError{unsupported ? QueryError::Kind::kUnsupported : QueryError::Kind::kBadData,
                                      parsed.error().to_string(query)});
  }
  return std::move(*parsed);
}

}  // namespace

std::expected<QueryResult, QueryError> Engine::instant(const store::Queryable& data, std::string_view query,
                                                       std::int64_t t_ms) const {
  auto expr = parse_query(query, options_);
  if (!expr) return std::unexpected(expr.error());
  return evaluate(data, **expr, t_ms, t_ms, 0, true);
}

std::expected<QueryResult, QueryError> Engine::range(const store::Queryable& data, std::string_view query,
                                                     std::int64_t start_ms, std::int64_t end_ms,
                                                     std::int64_t step_ms) const {
  auto expr = parse_query(query, options_);
  if (!expr) return std::unexpected(expr.error());
  return evaluate(data, **expr, start_ms, end_ms, step_ms, false);
}

std::expected<QueryResult, QueryError> Engine::evaluate(const store::Queryable& data, const Expr& expr,
                                                        std::int64_t start_ms, std::int64_t end_ms,
                                                        std::int64_t step_ms, bool instant) const {
  if (!instant) {
    if (step_ms <= 0) {
      return std::unexpected(QueryError{QueryError::Kind::kBadData,
                                        "zero or negative query resolution step widths are not accepted. Try a positive integer"});
    }
    if (end_ms < start_ms) return std::unexpected(QueryError{QueryError::Kind::kBadData, "end timestamp must not be before start time"});
    const ValueType t = expr.type();
    if (t != ValueType::kScalar && t != ValueType::kVector) {
      return std::unexpected(QueryError{
          QueryError::Kind::kBadData,
          fmt::format("invalid expression type \"{}\" for range query, must be Scalar or instant Vector", value_type_name(t))});
    }
  }
  // The timeout runs from here: the wait for a slot counts toward it, as in Prometheus.
  const model::Clock& clock = *options_.clock;
  const model::Clock::SteadyTime deadline = clock.steady() + options_.timeout;
  QueryLimiter* limiter = options_.limiter;
  std::optional<QueryLimiter::Slot> slot;
  if (limiter != nullptr) {
    auto got = limiter->acquire(clock, deadline);
    if (!got) {
      limiter->count_outcome(&got.error());
      return std::unexpected(std::move(got.error()));
    }
    slot.emplace(std::move(*got));
  }
  QueryBudget budget(options_, deadline, limiter != nullptr ? &limiter->canceled() : nullptr);
  auto result = evaluate_within(data, expr, start_ms, end_ms, step_ms, instant, budget);
  if (limiter != nullptr) limiter->count_outcome(result ? nullptr : &result.error());
  return result;
}

std::expected<QueryResult, QueryError> Engine::evaluate_within(const store::Queryable& data, const Expr& expr,
                                                               std::int64_t start_ms, std::int64_t end_ms,
                                                               std::int64_t step_ms, bool instant,
                                                               QueryBudget& budget) const {
  try {
    Evaluator ev(data, options_, budget, start_ms, end_ms, instant ? 1 : step_ms);
    QueryResult result;
    const ValueType type = expr.type();
    if (type == ValueType::kString) {
      const Expr* e = &expr;
      while (const auto* p = e->as<ParenExpr>()) e = p->expr.get();
      result.value = String{start_ms, e->as<StringLiteral>()->value};
      return result;
    }
    if (instant && type == ValueType::kMatrix) {
      EvalMatrix m = ev.eval_range_at(expr, start_ms);
      Matrix out;
      for (auto& s : m) out.push_back(Series{std::move(s.labels), std::move(s.points)});
      std::sort(out.begin(), out.end(), [](const Series& a, const Series& b) { return a.labels < b.labels; });
      result.value = std::move(out);
    } else {
      EvalMatrix m = ev.eval(expr);
      finish_names(m);
      if (instant && type == ValueType::kScalar) {
        const double v = m.empty() || m[0].points.empty() ? std::nan("") : m[0].points[0].value;
        result.value = Scalar{start_ms, v};
      } else if (instant) {
        Vector out;
        out.reserve(m.size());
        for (auto& s : m) {
          if (!s.points.empty()) out.push_back(InstantSample{std::move(s.labels), start_ms, s.points[0].value});
        }
        result.value = std::move(out);
      } else {
        Matrix out;
        out.reserve(m.size());
        for (auto& s : m) {
          if (!s.points.empty()) out.push_back(Series{std::move(s.labels), std::move(s.points)});
        }
        std::sort(out.begin(), out.end(), [](const Series& a, const Series& b) { return a.labels < b.labels; });
        result.value = std::move(out);
      }
    }
    result.warnings = std::move(ev.warnings);
    result.infos = std::move(ev.infos);
    return result;
  } catch (const EvalFailure& f) {
    return std::unexpected(f.error);
  }
}

}  // namespace gpuscope::promql
