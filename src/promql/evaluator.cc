#include "promql/evaluator.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "promql/functions.h"

namespace gpuscope::promql {

using store::Labels;

std::optional<QueryError> QueryBudget::interrupted() {
  countdown_ = kWorkPerCheck;
  if (canceled_ != nullptr && canceled_->load(std::memory_order_relaxed)) {
    return QueryError{QueryError::Kind::kCanceled, kCanceledMessage};
  }
  // A context deadline in Go is over once it is reached, not only once passed.
  if (clock_.steady() >= deadline_) return QueryError{QueryError::Kind::kTimeout, kTimeoutMessage};
  return std::nullopt;
}

void QueryBudget::check() {
  if (auto e = interrupted()) throw EvalFailure{std::move(*e)};
}

Evaluator::Evaluator(const store::Queryable& data, const EngineOptions& options, QueryBudget& budget,
                     std::int64_t start_ms, std::int64_t end_ms, std::int64_t interval_ms)
    : data_(data),
      options_(options),
      budget_(budget),
      start_(start_ms),
      end_(end_ms),
      interval_(interval_ms > 0 ? interval_ms : 1) {}

void Evaluator::fail(std::string message, QueryError::Kind kind) { throw EvalFailure{{kind, std::move(message)}}; }

std::int64_t Evaluator::reference_time(const AtModifier& at, std::int64_t offset_ms, std::int64_t step_t) const {
  switch (at.kind) {
    case AtModifier::Kind::kTime: return at.t_ms - offset_ms;
    case AtModifier::Kind::kStart: return start_ - offset_ms;
    case AtModifier::Kind::kEnd: return end_ - offset_ms;
    case AtModifier::Kind::kNone: break;
  }
  return step_t - offset_ms;
}

void Evaluator::select(const VectorSelector& vs, std::int64_t mint, std::int64_t maxt, const SeriesTaker& take) {
  // The store calls back into here; errors leave through `stopped`, never as exceptions through it.
  std::optional<QueryError> stopped;
  std::size_t counted = 0;  // samples of the series being read already counted as work
  store::Queryable::SeriesVisitor visitor;
  visitor.progress = [&](std::size_t decoded) {
    // A series is held whole while it is read: one too large stops before it is all in memory.
    if (!budget_.fits(decoded)) {
      stopped = QueryBudget::too_many_error();
      return false;
    }
    stopped = budget_.try_work(decoded - counted);
    counted = decoded;
    return !stopped;
  };
  visitor.each = [&](store::SeriesSamples&& series) {
    counted = 0;
    const std::size_t raw = series.samples.size();
    try {
      budget_.hold(raw);
      take(std::move(series));  // holds what it keeps
      budget_.set_held(budget_.held() - raw);
    } catch (EvalFailure& f) {
      stopped = std::move(f.error);
      return false;
    }
    return true;
  };
  auto r = data_.select_each(vs.matchers, mint, maxt, visitor);
  if (stopped) throw EvalFailure{std::move(*stopped)};
  if (!r) fail(r.error(), QueryError::Kind::kStorage);
}

EvalMatrix Evaluator::eval_vector_selector(const VectorSelector& vs, bool raw_timestamps) {
  const std::int64_t first_ref = reference_time(vs.at, vs.offset_ms, start_);
  const std::int64_t last_ref = reference_time(vs.at, vs.offset_ms, end_);
  const std::int64_t lookback = options_.lookback_delta_ms;
  EvalMatrix out;
  const std::size_t n = steps();
  select(vs, std::min(first_ref, last_ref) - lookback + 1, std::max(first_ref, last_ref), [&](store::SeriesSamples&& s) {
    EvalSeries es{std::move(s.labels), false, {}};
    es.points.reserve(std::min(n, s.samples.size() + 1));
    const auto& samples = s.samples;
    std::size_t cursor = 0;  // first sample after the reference time
    std::size_t first_step = 0;
    const bool moving = vs.at.kind == AtModifier::Kind::kNone;
    if (moving && !samples.empty() && samples.front().t_ms > first_ref) {
      // Steps before the first sample give nothing: a subquery of a million steps over a series that
      // began late skips them instead of walking them.
      first_step = static_cast<std::size_t>((samples.front().t_ms - first_ref + interval_ - 1) / interval_);
    }
    for (std::size_t i = first_step; i < n; ++i) {
      budget_.work(1);
      const std::int64_t t = start_ + static_cast<std::int64_t>(i) * interval_;
      const std::int64_t ref = reference_time(vs.at, vs.offset_ms, t);
      if (!moving) cursor = 0;
      while (cursor < samples.size() && samples[cursor].t_ms <= ref) ++cursor;
      if (cursor == 0) continue;
      const auto& last = samples[cursor - 1];
      // Past the last sample's lookback nothing more comes (the reference time only grows).
      if (moving && cursor == samples.size() && last.t_ms <= ref - lookback) break;
      if (last.t_ms <= ref - lookback || store::is_stale_marker(last.value)) continue;
      budget_.hold(1);
      es.points.push_back({t, raw_timestamps ? static_cast<double>(last.t_ms) / 1000.0 : last.value});
    }
    if (!es.points.empty()) out.push_back(std::move(es));
  });
  return out;
}

EvalMatrix Evaluator::range_eval(std::span<const EvalMatrix* const> args, const StepFunction& fn) {
  const std::size_t n = steps();
  std::vector<std::vector<std::size_t>> cursors(args.size());
  for (std::size_t a = 0; a < args.size(); ++a) cursors[a].assign(args[a]->size(), 0);
  std::vector<EvalVector> vectors(args.size());
  EvalMatrix out;
  std::unordered_map<Labels, std::size_t, store::LabelsHash> index;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t t = start_ + static_cast<std::int64_t>(i) * interval_;
    std::size_t work = 1;
    for (std::size_t a = 0; a < args.size(); ++a) {
      vectors[a].clear();
      const EvalMatrix& m = *args[a];
      work += m.size();
      for (std::size_t s = 0; s < m.size(); ++s) {
        auto& c = cursors[a][s];
        const auto& pts = m[s].points;
        while (c < pts.size() && pts[c].t_ms < t) ++c;
        if (c < pts.size() && pts[c].t_ms == t) vectors[a].push_back({m[s].labels, pts[c].value, m[s].drop_name, t});
      }
    }
    budget_.work(work);
    EvalVector result = fn(vectors, t);
    // Within one step, two results with one label set are an error, as in Prometheus; series that
    // will lose their name still count as distinct here (names are dropped at the end).
    if (result.size() > 1) {
      std::unordered_map<Labels, bool, store::LabelsHash> seen;
      for (const auto& r : result) {
        if (!seen.emplace(r.labels, true).second) fail("vector cannot contain metrics with the same labelset");
      }
    }
    budget_.hold(result.size());
    for (auto& r : result) {
      auto [it, inserted] = index.emplace(r.labels, out.size());
      if (inserted) out.push_back(EvalSeries{std::move(r.labels), r.drop_name, {}});
      auto& series = out[it->second];
      series.drop_name = series.drop_name || r.drop_name;
      series.points.push_back({t, r.value});
    }
  }
  return out;
}

namespace {

const Expr& unwrap_parens(const Expr& e) {
  const Expr* p = &e;
  while (const auto* paren = p->as<ParenExpr>()) p = paren->expr.get();
  return *p;
}

EvalMatrix scalar_series(QueryBudget& budget, std::size_t steps, std::int64_t start, std::int64_t interval, double v) {
  // Held (and refused) before it is made: a number in a subquery of a million steps is a million points.
  budget.hold(steps);
  budget.work(steps);
  EvalSeries s;
  s.points.reserve(steps);
  for (std::size_t i = 0; i < steps; ++i) s.points.push_back({start + static_cast<std::int64_t>(i) * interval, v});
  return {std::move(s)};
}

}  // namespace

EvalMatrix Evaluator::eval(const Expr& e) {
  // Each node is a check, as Prometheus checks its context at every eval: a deadline passed while a
  // selector was read ends the query before the next one is.
  budget_.check();
  const std::size_t before = budget_.held();
  EvalMatrix m = eval_node(e);
  // What the node's inputs held is freed with them; what it returns stays held by its parent.
  std::size_t points = 0;
  for (const auto& s : m) points += s.points.size();
  budget_.set_held(before + points);
  return m;
}

EvalMatrix Evaluator::eval_node(const Expr& e) {
  if (const auto* n = e.as<NumberLiteral>()) return scalar_series(budget_, steps(), start_, interval_, n->value);
  if (e.as<StringLiteral>() != nullptr) fail("string values are only allowed as function arguments", QueryError::Kind::kBadData);
  if (const auto* p = e.as<ParenExpr>()) return eval(*p->expr);
  if (const auto* vs = e.as<VectorSelector>()) return eval_vector_selector(*vs, false);
  if (const auto* u = e.as<UnaryExpr>()) {
    EvalMatrix m = eval(*u->expr);
    if (u->op == UnaryOp::kMinus) {
      for (auto& s : m) {
        for (auto& p : s.points) p.value = -p.value;
        if (u->expr->type() == ValueType::kVector) s.drop_name = true;
      }
    }
    return m;
  }
  if (const auto* b = e.as<BinaryExpr>()) return eval_binary(*b);
  if (const auto* a = e.as<AggregateExpr>()) return eval_aggregate(*a);
  if (const auto* c = e.as<Call>()) return eval_call(*c);
  if (e.as<MatrixSelector>() != nullptr || e.as<SubqueryExpr>() != nullptr) {
    fail("range vectors can only be evaluated by functions", QueryError::Kind::kBadData);
  }
  fail("unknown expression", QueryError::Kind::kUnsupported);
}

EvalMatrix Evaluator::eval_binary(const BinaryExpr& b) {
  const ValueType lt = b.lhs->type(), rt = b.rhs->type();
  EvalMatrix lhs = eval(*b.lhs);
  EvalMatrix rhs = eval(*b.rhs);
  if (lt == ValueType::kVector && rt == ValueType::kVector) return eval_vector_binary(*this, b, lhs, rhs);
  const bool lhs_scalar = lt == ValueType::kScalar, rhs_scalar = rt == ValueType::kScalar;
  if (lhs_scalar && rhs_scalar) {
    const EvalMatrix* args[] = {&lhs, &rhs};
    return range_eval(args, [&](std::span<const EvalVector> v, std::int64_t t) {
      EvalVector out;
      if (v[0].empty() || v[1].empty()) return out;
      // Parsing already rejected comparisons between scalars without bool.
      const auto r = apply_binary_op(b.op, v[0][0].value, v[1][0].value);
      out.push_back(EvalSample{{}, is_comparison(b.op) ? (r.keep ? 1.0 : 0.0) : r.value, false, t});
      return out;
    });
  }
  // A vector and a scalar, series by series: the labels stay, the scalar is looked up by step.
  const EvalMatrix& vec = lhs_scalar ? rhs : lhs;
  const EvalMatrix& sc = lhs_scalar ? lhs : rhs;
  budget_.hold(steps());  // the scalar by step, while the vector is walked
  std::vector<double> scalar_at(steps(), 0);
  std::vector<char> has(steps(), 0);
  if (!sc.empty()) {
    for (const auto& p : sc[0].points) {
      const auto i = static_cast<std::size_t>((p.t_ms - start_) / interval_);
      scalar_at[i] = p.value;
      has[i] = 1;
    }
  }
  EvalMatrix out;
  out.reserve(vec.size());
  for (const auto& series : vec) {
    EvalSeries o{series.labels, series.drop_name || !is_comparison(b.op) || b.return_bool, {}};
    o.points.reserve(series.points.size());
    budget_.work(series.points.size());
    budget_.hold(series.points.size());
    for (const auto& p : series.points) {
      const auto i = static_cast<std::size_t>((p.t_ms - start_) / interval_);
      if (has[i] == 0) continue;
      const double l = lhs_scalar ? scalar_at[i] : p.value, r = lhs_scalar ? p.value : scalar_at[i];
      const auto res = apply_binary_op(b.op, l, r);
      if (!is_comparison(b.op)) {
        o.points.push_back({p.t_ms, res.value});
      } else if (b.return_bool) {
        o.points.push_back({p.t_ms, res.keep ? 1.0 : 0.0});
      } else if (res.keep) {
        o.points.push_back({p.t_ms, p.value});  // a comparison filters; the vector's value stays, whichever side
      }
    }
    if (!o.points.empty()) out.push_back(std::move(o));
  }
  return out;
}

EvalMatrix Evaluator::eval_aggregate(const AggregateExpr& a) {
  EvalMatrix input = eval(*a.expr);
  if (a.param != nullptr && a.op != AggregateOp::kCountValues) {
    EvalMatrix param = eval(*a.param);
    return eval_aggregation(*this, a, input, &param);
  }
  return eval_aggregation(*this, a, input, nullptr);
}

EvalMatrix Evaluator::eval_call(const Call& call) {
  const std::string_view name = call.func->name;
  // Functions over a range vector: the matrix argument is walked window by window.
  for (std::size_t i = 0; i < call.args.size(); ++i) {
    if (call.args[i]->type() == ValueType::kMatrix) return eval_range_function(call, i);
  }
  if (name == "timestamp") {
    // timestamp(selector) is the raw sample's time, not the step's.
    const Expr& arg = unwrap_parens(*call.args[0]);
    if (const auto* vs = arg.as<VectorSelector>()) {
      EvalMatrix m = eval_vector_selector(*vs, true);
      for (auto& s : m) s.drop_name = true;
      return m;
    }
  }
  if (steps() > 1 && (name == "sort" || name == "sort_desc" || name == "sort_by_label" || name == "sort_by_label_desc")) {
    // A range query's series have no order, so sorting them does nothing: Prometheus warns.
    const std::string w = fmt::format("PromQL info: sort is ineffective for range queries since results are not "
                                      "sorted by value (function \"{}\")", name);
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  }
  const InstantFunction* fn = find_instant_function(name);
  if (fn == nullptr) fail(fmt::format("function \"{}\" is not supported by gpuscope", name), QueryError::Kind::kUnsupported);
  std::vector<EvalMatrix> values;
  values.reserve(call.args.size());
  std::vector<const EvalMatrix*> args;
  for (const auto& arg : call.args) {
    if (arg->type() == ValueType::kString) {
      values.emplace_back();  // string arguments are read from the AST by the function
    } else {
      values.push_back(eval(*arg));
    }
  }
  for (const auto& v : values) args.push_back(&v);
  // Functions without a vector argument (time(), vector(...), absent(...)) still return per step.
  return range_eval(args, [&](std::span<const EvalVector> v, std::int64_t t) { return (*fn)(v, call, t, *this); });
}

EvalMatrix Evaluator::eval_subquery_points(const SubqueryExpr& sq, std::int64_t& ref_min, std::int64_t& ref_max) {
  ref_min = reference_time(sq.at, sq.offset_ms, start_);
  ref_max = reference_time(sq.at, sq.offset_ms, end_);
  if (ref_min > ref_max) std::swap(ref_min, ref_max);
  const std::int64_t step = sq.step_ms > 0 ? sq.step_ms : options_.default_subquery_step_ms;
  // The inner query runs on the step grid (multiples of the step), from just after the earliest
  // window's start to the latest reference time, as Prometheus aligns subqueries.
  const std::int64_t lowest = ref_min - sq.range_ms;
  std::int64_t inner_start = lowest / step * step;  // Go's division truncates toward zero; so does C++'s
  if (inner_start <= lowest) inner_start += step;
  std::int64_t inner_end = ref_max;
  if (inner_start > inner_end) return {};
  inner_end = inner_start + (inner_end - inner_start) / step * step;
  // The inner evaluation shares this query's budget: its steps are checked, its points held.
  Evaluator inner(data_, options_, budget_, inner_start, inner_end, step);
  EvalMatrix m = inner.eval(*sq.expr);
  for (auto& w : inner.warnings) warnings.push_back(std::move(w));
  for (auto& w : inner.infos) infos.push_back(std::move(w));
  return m;
}

EvalMatrix Evaluator::eval_range_function(const Call& call, std::size_t matrix_arg) {
  const std::string_view name = call.func->name;
  const RangeFunction* fn = find_range_function(name);
  if (fn == nullptr) fail(fmt::format("function \"{}\" is not supported by gpuscope", name), QueryError::Kind::kUnsupported);

  // Scalar arguments (quantile_over_time's q, predict_linear's t, ...) are evaluated per step; a step
  // where one has no value gives no output.
  const std::size_t n = steps();
  std::vector<EvalMatrix> scalar_args;
  for (std::size_t i = 0; i < call.args.size(); ++i) {
    if (i != matrix_arg) scalar_args.push_back(eval(*call.args[i]));
  }
  // By step, held like points (a subquery may have millions of steps); empty without scalar arguments.
  std::vector<std::vector<double>> scalar_at(scalar_args.size());
  std::vector<char> step_ok;
  if (!scalar_args.empty()) {
    budget_.hold(n * (scalar_args.size() + 1));
    step_ok.assign(n, 1);
  }
  for (std::size_t k = 0; k < scalar_args.size(); ++k) {
    scalar_at[k].assign(n, 0);
    std::vector<char> has(n, 0);
    if (!scalar_args[k].empty()) {
      for (const auto& p : scalar_args[k][0].points) {
        const auto i = static_cast<std::size_t>((p.t_ms - start_) / interval_);
        scalar_at[k][i] = p.value;
        has[i] = 1;
      }
    }
    for (std::size_t i = 0; i < n; ++i) step_ok[i] = static_cast<char>(step_ok[i] != 0 && has[i] != 0);
  }

  const Expr& arg = unwrap_parens(*call.args[matrix_arg]);
  std::int64_t range_ms = 0, offset_ms = 0;
  AtModifier at;
  bool anchored = false, smoothed = false;
  const bool keep_name = range_function_keeps_name(name);
  const bool absent = name == "absent_over_time";
  const bool quantile_arg = name == "quantile_over_time";
  if (absent) budget_.hold(n);
  std::vector<char> present(absent ? n : 0, 0);
  std::vector<double> scalars(scalar_args.size());
  EvalMatrix out;
  // One input series (raw samples for a selector, inner steps for a subquery) over every step, as
  // Prometheus does: only one series' samples need be held at a time.
  const auto each_series = [&](Labels labels, bool drop_name, std::span<const Point> pts) {
    EvalSeries result{std::move(labels), drop_name || !keep_name, {}};
    std::size_t lo = 0, hi = 0;
    for (std::size_t i = 0; i < n; ++i) {
      budget_.work(1);
      if (!step_ok.empty() && step_ok[i] == 0) continue;
      const std::int64_t t = start_ + static_cast<std::int64_t>(i) * interval_;
      const std::int64_t ref = reference_time(at, offset_ms, t);
      const std::int64_t win_start = ref - range_ms;
      if (at.kind != AtModifier::Kind::kNone) lo = hi = 0;
      while (lo < pts.size() && pts[lo].t_ms <= win_start) ++lo;
      if (hi < lo) hi = lo;
      while (hi < pts.size() && pts[hi].t_ms <= ref) ++hi;
      std::size_t from = lo, to = hi;
      if (anchored || smoothed) {
        // The last sample at or before the window start (within the lookback delta) anchors it.
        if (from > 0 && pts[from - 1].t_ms > win_start - options_.lookback_delta_ms) --from;
        if (smoothed && to < pts.size() && pts[to].t_ms < ref + options_.lookback_delta_ms) ++to;
      }
      if (from >= to) continue;
      if (absent) {
        present[i] = 1;
        continue;
      }
      // A function's cost is its window's: each window is work, so long windows are checked often.
      budget_.work(to - from);
      for (std::size_t k = 0; k < scalars.size(); ++k) scalars[k] = scalar_at[k][i];
      if (quantile_arg && !scalars.empty()) {
        const double q = scalars[0];
        if (std::isnan(q) || q < 0 || q > 1) warn_quantile(*this, q);
      }
      RangeWindow w{pts.subspan(from, to - from), win_start, ref, range_ms, t, anchored, smoothed};
      if (auto v = (*fn)(w, scalars)) {
        budget_.hold(1);
        result.points.push_back({t, *v});
      }
    }
    if (!result.points.empty()) out.push_back(std::move(result));
  };

  if (const auto* ms = arg.as<MatrixSelector>()) {
    const auto& vs = *ms->vector_selector->as<VectorSelector>();
    range_ms = ms->range_ms;
    offset_ms = vs.offset_ms;
    at = vs.at;
    anchored = ms->anchored;
    smoothed = ms->smoothed;
    std::int64_t lo = reference_time(at, offset_ms, start_), hi = reference_time(at, offset_ms, end_);
    if (lo > hi) std::swap(lo, hi);
    // Anchored and smoothed windows also read the sample before the window (and smoothed the one
    // after), up to the lookback delta.
    const std::int64_t extra = (anchored || smoothed) ? options_.lookback_delta_ms : 0;
    // With steps further apart than the range (rate(x[5m]) at a 1h step), most samples are in no
    // window: only those in one are kept, as Prometheus only ever loads the windows.
    const bool sparse = at.kind == AtModifier::Kind::kNone && !anchored && !smoothed && interval_ > range_ms;
    const std::int64_t first_ref = start_ - offset_ms;
    const auto in_a_window = [&](std::int64_t ts) {
      // The first step whose reference time is at or after the sample: the only window that may hold it.
      const std::int64_t i = ts <= first_ref ? 0 : (ts - first_ref + interval_ - 1) / interval_;
      return static_cast<std::size_t>(i) < n && first_ref + i * interval_ - range_ms < ts;
    };
    std::vector<Point> points;
    select(vs, lo - range_ms - extra + 1, hi + (smoothed ? extra : 0), [&](store::SeriesSamples&& s) {
      budget_.work(s.samples.size());
      points.clear();
      for (const auto& smp : s.samples) {
        if (store::is_stale_marker(smp.value) || (sparse && !in_a_window(smp.t_ms))) continue;
        points.push_back({smp.t_ms, smp.value});
      }
      // The copy is held beside the series' samples while the series is evaluated.
      budget_.hold(points.size());
      each_series(std::move(s.labels), false, points);
      budget_.set_held(budget_.held() - points.size());
    });
  } else if (const auto* sq = arg.as<SubqueryExpr>()) {
    range_ms = sq->range_ms;
    offset_ms = sq->offset_ms;
    at = sq->at;
    std::int64_t lo = 0, hi = 0;
    EvalMatrix m = eval_subquery_points(*sq, lo, hi);
    for (auto& s : m) {
      each_series(std::move(s.labels), s.drop_name, s.points);
      // Done with: its points are freed now, not with the whole subquery.
      budget_.set_held(budget_.held() - s.points.size());
      std::vector<Point>().swap(s.points);
    }
  } else {
    fail("range function argument must be a range vector selector or a subquery", QueryError::Kind::kBadData);
  }

  if (absent) {
    EvalSeries absent_series{absent_function_labels(call), false, {}};
    for (std::size_t i = 0; i < n; ++i) {
      if ((step_ok.empty() || step_ok[i] != 0) && present[i] == 0) absent_series.points.push_back({start_ + static_cast<std::int64_t>(i) * interval_, 1});
    }
    budget_.hold(absent_series.points.size());
    if (!absent_series.points.empty()) out.push_back(std::move(absent_series));
  }
  return out;
}

EvalMatrix Evaluator::eval_range_at(const Expr& e, std::int64_t t_ms) {
  const Expr& arg = unwrap_parens(e);
  EvalMatrix out;
  if (const auto* ms = arg.as<MatrixSelector>()) {
    const auto& vs = *ms->vector_selector->as<VectorSelector>();
    const std::int64_t ref = reference_time(vs.at, vs.offset_ms, t_ms);
    select(vs, ref - ms->range_ms + 1, ref, [&](store::SeriesSamples&& s) {
      EvalSeries es{std::move(s.labels), false, {}};
      for (const auto& smp : s.samples) {
        if (!store::is_stale_marker(smp.value)) es.points.push_back({smp.t_ms, smp.value});
      }
      budget_.hold(es.points.size());
      if (!es.points.empty()) out.push_back(std::move(es));
    });
  } else if (const auto* sq = arg.as<SubqueryExpr>()) {
    std::int64_t lo = 0, hi = 0;
    EvalMatrix m = eval_subquery_points(*sq, lo, hi);
    for (auto& s : m) {
      std::erase_if(s.points, [&](const Point& p) { return p.t_ms <= hi - sq->range_ms || p.t_ms > hi; });
      if (!s.points.empty()) out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace gpuscope::promql
