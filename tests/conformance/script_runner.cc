#include "script_runner.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "promql/functions.h"
#include "promql/parser.h"
#include "result_comparison.h"
#include "store/series_set.h"

namespace gpuscope::conformance {
namespace {

using promql::Expr;
using promql::QueryError;

constexpr std::int64_t kRangeModeStepMs = 60'000;

// Functions whose result moves with the evaluation time even when every selector is pinned by `@`
// (Prometheus's AtModifierUnsafeFunctions): pinning cannot keep their results unchanged.
constexpr std::array<std::string_view, 11> kAtModifierUnsafeFunctions = {
    "days_in_month", "day_of_month", "day_of_week", "day_of_year", "hour", "minute",
    "month", "year", "predict_linear", "time", "timestamp"};

// One query's verdict; kSkipped carries the unsupported feature.
struct Verdict {
  CaseStatus status = CaseStatus::kPassed;
  std::string detail;
};
Verdict failed(std::string why) { return {CaseStatus::kFailed, std::move(why)}; }
Verdict skipped(std::string why) { return {CaseStatus::kSkipped, std::move(why)}; }

// Calls `visit` on every node, parents first; `visit` returns false to leave a node's children alone.
template <class Visit>
void walk(Expr& e, Visit&& visit) {
  if (!visit(e)) return;
  std::visit(
      [&](auto& node) {
        using T = std::decay_t<decltype(node)>;
        if constexpr (std::is_same_v<T, promql::MatrixSelector>) {
          walk(*node.vector_selector, visit);
        } else if constexpr (std::is_same_v<T, promql::SubqueryExpr> || std::is_same_v<T, promql::ParenExpr> ||
                             std::is_same_v<T, promql::UnaryExpr>) {
          walk(*node.expr, visit);
        } else if constexpr (std::is_same_v<T, promql::BinaryExpr>) {
          walk(*node.lhs, visit);
          walk(*node.rhs, visit);
        } else if constexpr (std::is_same_v<T, promql::AggregateExpr>) {
          if (node.param) walk(*node.param, visit);
          walk(*node.expr, visit);
        } else if constexpr (std::is_same_v<T, promql::Call>) {
          for (auto& arg : node.args) walk(*arg, visit);
        }
      },
      e.node);
}

// Pins every selector and subquery without `@` to t_ms, as promqltest's @-modifier variants do;
// false when the expression calls a function that pinning cannot make time-invariant.
bool pin_selectors_at(Expr& root, std::int64_t t_ms) {
  bool safe = true;
  walk(root, [&](Expr& e) {
    if (auto* vs = e.as<promql::VectorSelector>(); vs && vs->at.kind == promql::AtModifier::Kind::kNone) {
      vs->at = {promql::AtModifier::Kind::kTime, t_ms};
    }
    if (auto* sq = e.as<promql::SubqueryExpr>()) {
      if (sq->at.kind == promql::AtModifier::Kind::kNone) sq->at = {promql::AtModifier::Kind::kTime, t_ms};
      return false;  // what a pinned subquery evaluates is left as written
    }
    if (auto* call = e.as<promql::Call>(); call && call->func) {
      if (std::ranges::find(kAtModifierUnsafeFunctions, call->func->name) != kAtModifierUnsafeFunctions.end()) {
        safe = false;
      }
    }
    return true;
  });
  return safe;
}

// Functions whose value depends on the query's own range, so the range-mode check does not apply.
bool uses_query_context_functions(std::string_view expr) {
  static const RE2 kPattern(R"((start|end|range|step)\(\))");
  return RE2::PartialMatch(expr, kPattern);
}

class ScriptRun {
 public:
  ScriptRun(const promql::Engine& engine, const ScriptRunOptions& options) : engine_(engine), options_(options) {}

  ScriptReport run(const std::vector<ScriptCommand>& commands) {
    for (const auto& command : commands) {
      std::visit([&](const auto& c) { execute(c); }, command);
    }
    return std::move(report_);
  }

 private:
  void execute(const ClearCommand&) {
    data_.clear();
    unloadable_.clear();
    data_incomplete_.clear();
  }

  void execute(const UnreadableCommand& c) {
    report_.notices.push_back({c.line, fmt::format("{}: \"{}\"", c.reason, c.text)});
  }

  void execute(const LoadCommand& load) {
    if (!load.unreadable.empty()) {
      report_.notices.push_back({load.line, "load not fully readable, later evals skipped until clear: " + load.unreadable});
      if (data_incomplete_.empty()) data_incomplete_ = fmt::format("load at line {} unreadable", load.line);
    }
    for (const auto& u : load.unloadable) unloadable_.push_back(u);
    for (const auto& series : load.series) {
      for (const auto& sample : promql::expand_samples(series.points, 0, load.step_ms)) {
        if (!data_.add(series.labels, sample.t_ms, sample.value)) {
          report_.notices.push_back({load.line, fmt::format("out-of-order sample at t={} for {}", sample.t_ms,
                                                            series.labels.to_string())});
          if (data_incomplete_.empty()) data_incomplete_ = fmt::format("load at line {} not stored", load.line);
          break;
        }
      }
    }
  }

  void execute(const EvalCommand& eval) {
    if (options_.only_line && *options_.only_line != eval.line) return;
    Verdict verdict = judge(eval);
    report_.cases.push_back({eval.line, eval.expr, verdict.status, std::move(verdict.detail)});
  }

  Verdict judge(const EvalCommand& eval) {
    if (!eval.unreadable.empty()) return skipped(eval.unreadable);
    if (!data_incomplete_.empty()) return skipped("data incomplete: " + data_incomplete_);

    auto parsed = promql::parse_expr(eval.expr);
    if (!parsed) {
      std::string message = parsed.error().to_string(eval.expr);
      if (parsed.error().message.starts_with("unsupported")) return skipped(message);
      if (!eval.expects_failure()) return failed("parse error: " + message);
      auto ok = check_failure(eval, message);
      return ok ? Verdict{} : failed(ok.error());
    }
    if (auto reason = selects_unloadable(**parsed)) return skipped(*reason);

    if (eval.is_range) {
      auto result = engine_.range(data_, eval.expr, eval.start_ms, eval.end_ms, eval.step_ms);
      return judge_result(eval, result, "");
    }

    std::int64_t t = eval.end_ms;  // the evaluation time; `expect range vector` moves it to its end
    Verdict verdict = judge_instant(eval, engine_.instant(data_, eval.expr, t), t, **parsed, "");
    if (verdict.status != CaseStatus::kPassed || !options_.at_modifier_check) return verdict;

    // promqltest's @-modifier variants: with every selector pinned at t, the result must not depend on
    // when the query runs.
    auto pinned = promql::parse_expr(eval.expr);
    if (!pinned || !pin_selectors_at(**pinned, t)) return verdict;
    std::vector<std::int64_t> times = t == 0 ? std::vector<std::int64_t>{-1000, 0, 1000}
                                             : std::vector<std::int64_t>{-10 * t, 0, t / 5, t, 10 * t};
    for (std::int64_t at : times) {
      auto result = engine_.evaluate(data_, **pinned, at, at, 0, true);
      verdict = judge_instant(eval, result, at, **pinned, fmt::format("with selectors pinned @ {}, run at {}: ", t, at));
      if (verdict.status != CaseStatus::kPassed) return verdict;
    }
    return verdict;
  }

  // An instant query's result, then (as promqltest does) the same query as a range query over
  // [t-1m, t+1m] read at t.
  Verdict judge_instant(const EvalCommand& eval, const std::expected<promql::QueryResult, QueryError>& result,
                        std::int64_t t, const Expr& expr, const std::string& context) {
    Verdict verdict = judge_result(eval, result, context);
    if (verdict.status != CaseStatus::kPassed || !result || !options_.range_mode_check) return verdict;
    if (eval.exclude_from_range_check || uses_query_context_functions(eval.expr)) return verdict;

    auto range = engine_.evaluate(data_, expr, t - kRangeModeStepMs, t + kRangeModeStepMs, kRangeModeStepMs, false);
    if (!range) {
      if (range.error().kind == QueryError::Kind::kUnsupported) {
        return skipped(context + "range mode unsupported: " + range.error().message);
      }
      return failed(context + "range mode: error: " + range.error().message);
    }
    if (eval.ordered()) return verdict;  // range results are sorted by labels, never in query order
    const auto* matrix = std::get_if<promql::Matrix>(&range->value);
    if (!matrix) return failed(context + "range mode: result is not a matrix");
    if (auto sorted = check_sorted(*matrix); !sorted) return failed(context + "range mode: " + sorted.error());
    promql::Vector at_t;
    for (const auto& series : *matrix) {
      auto point = std::ranges::find(series.points, t, &promql::Point::t_ms);
      if (point != series.points.end()) at_t.push_back({series.labels, t, point->value});
    }
    std::expected<void, std::string> compared;
    if (std::holds_alternative<promql::Scalar>(result->value)) {
      if (at_t.empty()) return failed(context + "range mode: no point at the evaluation time");
      compared = compare_result(eval, promql::Scalar{t, at_t.front().value});
    } else {
      compared = compare_result(eval, at_t);
    }
    if (!compared) return failed(context + "range mode: " + compared.error());
    return verdict;
  }

  Verdict judge_result(const EvalCommand& eval, const std::expected<promql::QueryResult, QueryError>& result,
                       const std::string& context) {
    if (!result) {
      if (result.error().kind == QueryError::Kind::kUnsupported) return skipped(context + result.error().message);
      if (!eval.expects_failure()) return failed(context + "error: " + result.error().message);
      auto ok = check_failure(eval, result.error().message);
      return ok ? Verdict{} : failed(context + ok.error());
    }
    if (eval.expects_failure()) return failed(context + "expected an error, got " + describe(result->value));
    if (auto ok = check_annotations(eval, *result); !ok) return failed(context + ok.error());
    if (auto ok = compare_result(eval, result->value); !ok) return failed(context + ok.error());
    return {};
  }

  // Running a query over data the harness left out would fail for the wrong reason.
  std::optional<std::string> selects_unloadable(Expr& expr) const {
    std::optional<std::string> reason;
    if (unloadable_.empty()) return reason;
    walk(expr, [&](Expr& e) {
      const auto* vs = e.as<promql::VectorSelector>();
      if (!vs || reason) return !reason;
      for (const auto& u : unloadable_) {
        if (store::matches_all(u.labels, vs->matchers)) {
          reason = fmt::format("selects {} not loaded (line {}: {})", u.labels.to_string(), u.line, u.reason);
          break;
        }
      }
      return true;
    });
    return reason;
  }

  const promql::Engine& engine_;
  const ScriptRunOptions& options_;
  store::SeriesSet data_;
  std::vector<UnloadableSeries> unloadable_;
  std::string data_incomplete_;
  ScriptReport report_;
};

}  // namespace

ScriptReport run_script(const std::vector<ScriptCommand>& commands, const promql::Engine& engine,
                        const ScriptRunOptions& options) {
  return ScriptRun(engine, options).run(commands);
}

}  // namespace gpuscope::conformance
