#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <numbers>
#include <unordered_map>

#include <fmt/format.h>

#include "promql/evaluator.h"
#include "promql/functions.h"

namespace gpuscope::promql {

using store::Labels;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string_view string_arg(const Call& call, std::size_t i) {
  const Expr* e = call.args[i].get();
  while (const auto* p = e->as<ParenExpr>()) e = p->expr.get();
  const auto* s = e->as<StringLiteral>();
  return s != nullptr ? std::string_view(s->value) : std::string_view();
}

InstantFunction simple(double (*f)(double)) {
  return [f](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
    EvalVector out;
    out.reserve(v[0].size());
    for (const auto& s : v[0]) out.push_back(EvalSample{s.labels, f(s.value), true, t});
    return out;
  };
}

EvalVector clamp(const EvalVector& in, double lo, double hi, std::int64_t t) {
  EvalVector out;
  if (hi < lo) return out;
  for (const auto& s : in) out.push_back(EvalSample{s.labels, std::max(lo, std::min(hi, s.value)), true, t});
  return out;
}

}  // namespace

Labels absent_function_labels(const Call& call) {
  const Expr* e = call.args.empty() ? nullptr : call.args[0].get();
  while (e != nullptr && e->as<ParenExpr>() != nullptr) e = e->as<ParenExpr>()->expr.get();
  if (e != nullptr) {
    if (const auto* ms = e->as<MatrixSelector>()) e = ms->vector_selector.get();
  }
  const auto* vs = e != nullptr ? e->as<VectorSelector>() : nullptr;
  if (vs == nullptr) return {};
  Labels out;
  std::unordered_map<std::string, int> seen;
  for (const auto& m : vs->matchers) {
    if (m.name() == store::kMetricNameLabel) continue;
    ++seen[m.name()];
  }
  for (const auto& m : vs->matchers) {
    if (m.name() == store::kMetricNameLabel || m.op() != store::LabelMatcher::Op::kEqual) continue;
    if (seen[m.name()] == 1) out.set(m.name(), m.value());
  }
  return out;
}

namespace {

// Go's regexp.Expand: $1, ${1}, $name, ${name}; $$ is a dollar; an unknown name expands to "".
std::string expand_template(std::string_view tmpl, const re2::RE2& re, std::span<const re2::StringPiece> groups) {
  std::string out;
  const auto& names = re.NamedCapturingGroups();
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$' || i + 1 >= tmpl.size()) {
      out += tmpl[i];
      continue;
    }
    std::size_t j = i + 1;
    std::string name;
    if (tmpl[j] == '$') {
      out += '$';
      i = j;
      continue;
    }
    if (tmpl[j] == '{') {
      auto close = tmpl.find('}', j);
      if (close == std::string_view::npos) {
        out += tmpl[i];
        continue;
      }
      name = std::string(tmpl.substr(j + 1, close - j - 1));
      i = close;
    } else {
      while (j < tmpl.size() && (std::isalnum(static_cast<unsigned char>(tmpl[j])) != 0 || tmpl[j] == '_')) ++j;
      if (j == i + 1) {
        out += tmpl[i];
        continue;
      }
      name = std::string(tmpl.substr(i + 1, j - i - 1));
      i = j - 1;
    }
    int index = -1;
    if (!name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      index = name.size() < 9 ? std::stoi(name) : -1;
    } else if (auto it = names.find(name); it != names.end()) {
      index = it->second;
    }
    if (index >= 0 && static_cast<std::size_t>(index) < groups.size() && groups[index].data() != nullptr) {
      out.append(groups[index].data(), groups[index].size());
    }
  }
  return out;
}

EvalVector label_replace(std::span<const EvalVector> v, const Call& call, std::int64_t t, Evaluator&) {
  const std::string dst(string_arg(call, 1)), repl(string_arg(call, 2)), src(string_arg(call, 3));
  const std::string regex(string_arg(call, 4));
  re2::RE2::Options opts;
  opts.set_log_errors(false);
  opts.set_dot_nl(true);
  re2::RE2 re("^(?:" + regex + ")$", opts);
  if (!re.ok()) Evaluator::fail(fmt::format("invalid regular expression in label_replace(): {}", regex));
  if (!store::is_valid_label_name(dst)) Evaluator::fail(fmt::format("invalid destination label name in label_replace(): {}", dst));
  EvalVector out;
  std::vector<re2::StringPiece> groups(static_cast<std::size_t>(re.NumberOfCapturingGroups()) + 1);
  for (const auto& s : v[0]) {
    const std::string_view value = s.labels.get(src);
    EvalSample r{s.labels, s.value, s.drop_name, t};
    if (re.Match(re2::StringPiece(value.data(), value.size()), 0, value.size(), re2::RE2::UNANCHORED, groups.data(),
                 static_cast<int>(groups.size()))) {
      r.labels.set(dst, expand_template(repl, re, groups));
      if (dst == store::kMetricNameLabel) r.drop_name = false;
    }
    out.push_back(std::move(r));
  }
  return out;
}

EvalVector label_join(std::span<const EvalVector> v, const Call& call, std::int64_t t, Evaluator&) {
  const std::string dst(string_arg(call, 1)), sep(string_arg(call, 2));
  if (!store::is_valid_label_name(dst)) Evaluator::fail(fmt::format("invalid destination label name in label_join(): {}", dst));
  EvalVector out;
  for (const auto& s : v[0]) {
    std::string joined;
    for (std::size_t i = 3; i < call.args.size(); ++i) {
      if (i > 3) joined += sep;
      joined += s.labels.get(string_arg(call, i));
    }
    EvalSample r{s.labels, s.value, s.drop_name, t};
    r.labels.set(dst, joined);
    if (dst == store::kMetricNameLabel) r.drop_name = false;
    out.push_back(std::move(r));
  }
  return out;
}

// Date functions read each sample's value as Unix seconds (UTC); with no argument, the step time.
InstantFunction date_function(int (*part)(const std::tm&, int days_in_month)) {
  return [part](std::span<const EvalVector> v, const Call& call, std::int64_t t, Evaluator&) {
    EvalVector in_default;
    const EvalVector* in = &in_default;
    if (call.args.empty()) {
      in_default.push_back(EvalSample{{}, static_cast<double>(t) / 1000.0, false, t});
    } else {
      in = &v[0];
    }
    EvalVector out;
    for (const auto& s : *in) {
      if (std::isnan(s.value) || std::isinf(s.value)) {
        out.push_back(EvalSample{s.labels, s.value, true, t});
        continue;
      }
      const auto secs = static_cast<std::time_t>(std::floor(s.value));
      std::tm tm{};
      gmtime_r(&secs, &tm);
      static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
      const int year = tm.tm_year + 1900;
      const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
      const int dim = kDays[tm.tm_mon] + (tm.tm_mon == 1 && leap ? 1 : 0);
      out.push_back(EvalSample{s.labels, static_cast<double>(part(tm, dim)), true, t});
    }
    return out;
  };
}

EvalVector sort_function(std::span<const EvalVector> v, bool descending, std::int64_t t) {
  EvalVector out(v[0].begin(), v[0].end());
  std::stable_sort(out.begin(), out.end(), [&](const EvalSample& a, const EvalSample& b) {
    // NaN sorts last either way.
    if (std::isnan(a.value)) return false;
    if (std::isnan(b.value)) return true;
    return descending ? a.value > b.value : a.value < b.value;
  });
  for (auto& s : out) s.t_ms = t;
  return out;
}

const std::unordered_map<std::string_view, InstantFunction>& instant_functions() {
  static const std::unordered_map<std::string_view, InstantFunction> table = [] {
    std::unordered_map<std::string_view, InstantFunction> m;
    m["abs"] = simple([](double x) { return std::abs(x); });
    m["ceil"] = simple([](double x) { return std::ceil(x); });
    m["floor"] = simple([](double x) { return std::floor(x); });
    m["exp"] = simple([](double x) { return std::exp(x); });
    m["sqrt"] = simple([](double x) { return std::sqrt(x); });
    m["ln"] = simple([](double x) { return std::log(x); });
    m["log2"] = simple([](double x) { return std::log2(x); });
    m["log10"] = simple([](double x) { return std::log10(x); });
    m["sin"] = simple([](double x) { return std::sin(x); });
    m["cos"] = simple([](double x) { return std::cos(x); });
    m["tan"] = simple([](double x) { return std::tan(x); });
    m["asin"] = simple([](double x) { return std::asin(x); });
    m["acos"] = simple([](double x) { return std::acos(x); });
    m["atan"] = simple([](double x) { return std::atan(x); });
    m["sinh"] = simple([](double x) { return std::sinh(x); });
    m["cosh"] = simple([](double x) { return std::cosh(x); });
    m["tanh"] = simple([](double x) { return std::tanh(x); });
    m["asinh"] = simple([](double x) { return std::asinh(x); });
    m["acosh"] = simple([](double x) { return std::acosh(x); });
    m["atanh"] = simple([](double x) { return std::atanh(x); });
    m["rad"] = simple([](double x) { return x * std::numbers::pi / 180; });
    m["deg"] = simple([](double x) { return x * 180 / std::numbers::pi; });
    m["sgn"] = simple([](double x) { return x < 0 ? -1.0 : x > 0 ? 1.0 : x; });
    m["round"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      double to_nearest = 1;
      if (v.size() > 1) {
        if (v[1].empty()) return EvalVector{};
        to_nearest = v[1][0].value;
      }
      const double inverse = 1.0 / to_nearest;
      EvalVector out;
      for (const auto& s : v[0]) out.push_back(EvalSample{s.labels, std::floor(s.value * inverse + 0.5) / inverse, true, t});
      return out;
    };
    m["clamp"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      if (v[1].empty() || v[2].empty()) return EvalVector{};
      return clamp(v[0], v[1][0].value, v[2][0].value, t);
    };
    m["clamp_min"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      if (v[1].empty()) return EvalVector{};
      return clamp(v[0], v[1][0].value, std::numeric_limits<double>::infinity(), t);
    };
    m["clamp_max"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      if (v[1].empty()) return EvalVector{};
      return clamp(v[0], -std::numeric_limits<double>::infinity(), v[1][0].value, t);
    };
    m["scalar"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      return EvalVector{EvalSample{{}, v[0].size() == 1 ? v[0][0].value : kNaN, false, t}};
    };
    m["vector"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      if (v[0].empty()) return EvalVector{};
      return EvalVector{EvalSample{{}, v[0][0].value, false, t}};
    };
    m["time"] = [](std::span<const EvalVector>, const Call&, std::int64_t t, Evaluator&) {
      return EvalVector{EvalSample{{}, static_cast<double>(t) / 1000.0, false, t}};
    };
    m["pi"] = [](std::span<const EvalVector>, const Call&, std::int64_t t, Evaluator&) {
      return EvalVector{EvalSample{{}, std::numbers::pi, false, t}};
    };
    m["timestamp"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      EvalVector out;
      for (const auto& s : v[0]) out.push_back(EvalSample{s.labels, static_cast<double>(s.t_ms) / 1000.0, true, t});
      return out;
    };
    m["absent"] = [](std::span<const EvalVector> v, const Call& call, std::int64_t t, Evaluator&) {
      if (!v[0].empty()) return EvalVector{};
      return EvalVector{EvalSample{absent_function_labels(call), 1, false, t}};
    };
    m["sort"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      return sort_function(v, false, t);
    };
    m["sort_desc"] = [](std::span<const EvalVector> v, const Call&, std::int64_t t, Evaluator&) {
      return sort_function(v, true, t);
    };
    m["label_replace"] = label_replace;
    m["label_join"] = label_join;
    m["day_of_month"] = date_function([](const std::tm& tm, int) { return tm.tm_mday; });
    m["day_of_week"] = date_function([](const std::tm& tm, int) { return tm.tm_wday; });
    m["day_of_year"] = date_function([](const std::tm& tm, int) { return tm.tm_yday + 1; });
    m["days_in_month"] = date_function([](const std::tm&, int dim) { return dim; });
    m["hour"] = date_function([](const std::tm& tm, int) { return tm.tm_hour; });
    m["minute"] = date_function([](const std::tm& tm, int) { return tm.tm_min; });
    m["month"] = date_function([](const std::tm& tm, int) { return tm.tm_mon + 1; });
    m["year"] = date_function([](const std::tm& tm, int) { return tm.tm_year + 1900; });
    return m;
  }();
  return table;
}

// ---- functions over a range window ----

std::optional<double> extrapolated_rate(const RangeWindow& w, bool is_counter, bool is_rate) {
  const auto& f = w.points;
  if (w.anchored || w.smoothed) {
    // Prometheus 3's anchored/smoothed windows: the value at the window's edges (the sample just
    // before the start, or interpolated), no extrapolation.
    std::size_t first = 0;
    while (first + 1 < f.size() && f[first + 1].t_ms <= w.range_start_ms) ++first;
    std::size_t last = f.size() - 1;
    if (w.smoothed) {
      std::size_t l = 0;
      while (l < f.size() - 1 && f[l].t_ms < w.range_end_ms) ++l;
      last = l;
    }
    if (f[last].t_ms <= w.range_start_ms) return std::nullopt;
    auto interpolate = [&](const Point& p1, const Point& p2, std::int64_t t) {
      double y1 = p1.value;
      const double y2 = p2.value;
      if (is_counter && y2 < y1) y1 = 0;
      return y1 + (y2 - y1) * static_cast<double>(t - p1.t_ms) / static_cast<double>(p2.t_ms - p1.t_ms);
    };
    const double left = (w.smoothed && f[first].t_ms < w.range_start_ms && first + 1 < f.size())
                            ? interpolate(f[first], f[first + 1], w.range_start_ms)
                            : f[first].value;
    const double right = (w.smoothed && last > 0 && f[last].t_ms > w.range_end_ms)
                             ? interpolate(f[last - 1], f[last], w.range_end_ms)
                             : f[last].value;
    double result = right - left;
    if (is_counter) {
      std::size_t a = first, b = last;
      if (f[a].t_ms <= w.range_start_ms) ++a;
      if (f[b].t_ms >= w.range_end_ms && b > 0) --b;
      double prev = left, correction = 0;
      for (std::size_t i = a; i <= b && i < f.size() && a <= b; ++i) {
        if (f[i].value < prev) correction += prev;
        prev = f[i].value;
      }
      if (right < prev) correction += prev;
      result += correction;
    }
    if (is_rate) result /= static_cast<double>(w.range_ms) / 1000.0;
    return result;
  }
  if (f.size() < 2) return std::nullopt;
  double result = f.back().value - f.front().value;
  if (is_counter) {
    for (std::size_t i = 1; i < f.size(); ++i) {
      if (f[i].value < f[i - 1].value) result += f[i - 1].value;
    }
  }
  const double duration_to_start0 = static_cast<double>(f.front().t_ms - w.range_start_ms) / 1000.0;
  double duration_to_start = duration_to_start0;
  double duration_to_end = static_cast<double>(w.range_end_ms - f.back().t_ms) / 1000.0;
  const double sampled = static_cast<double>(f.back().t_ms - f.front().t_ms) / 1000.0;
  const double average = sampled / static_cast<double>(f.size() - 1);
  const double threshold = average * 1.1;
  if (duration_to_start >= threshold) duration_to_start = average / 2;
  if (is_counter) {
    double to_zero = duration_to_start;
    if (result > 0 && f.front().value >= 0) to_zero = sampled * (f.front().value / result);
    if (to_zero < duration_to_start) duration_to_start = to_zero;
  }
  if (duration_to_end >= threshold) duration_to_end = average / 2;
  double factor = (sampled + duration_to_start + duration_to_end) / sampled;
  if (is_rate) factor /= static_cast<double>(w.range_ms) / 1000.0;
  return result * factor;
}

std::optional<double> instant_value(const RangeWindow& w, bool is_rate) {
  const auto& f = w.points;
  if (f.size() < 2) return std::nullopt;
  const Point& a = f[f.size() - 2];
  const Point& b = f.back();
  const std::int64_t interval = b.t_ms - a.t_ms;
  if (interval == 0) return std::nullopt;
  double result = b.value;
  if (!is_rate || !(b.value < a.value)) result = b.value - a.value;
  if (is_rate) result /= static_cast<double>(interval) / 1000.0;
  return result;
}

std::pair<double, double> linear_regression(std::span<const Point> f, std::int64_t intercept_time) {
  double n = 0, sx = 0, cx = 0, sy = 0, cy = 0, sxy = 0, cxy = 0, sx2 = 0, cx2 = 0;
  const double init = f[0].value;
  bool const_y = true;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (const_y && i > 0 && f[i].value != init) const_y = false;
    n += 1;
    const double x = static_cast<double>(f[i].t_ms - intercept_time) / 1e3;
    kahan_add(x, sx, cx);
    kahan_add(f[i].value, sy, cy);
    kahan_add(x * f[i].value, sxy, cxy);
    kahan_add(x * x, sx2, cx2);
  }
  if (const_y) {
    if (std::isinf(init)) return {kNaN, kNaN};
    return {0, init};
  }
  sx += cx;
  sy += cy;
  sxy += cxy;
  sx2 += cx2;
  const double cov = sxy - sx * sy / n;
  const double var = sx2 - sx * sx / n;
  const double slope = cov / var;
  return {slope, sy / n - slope * sx / n};
}

std::optional<double> variance_over_time(const RangeWindow& w) {
  double count = 0, mean = 0, cmean = 0, aux = 0, caux = 0;
  for (const auto& p : w.points) {
    count += 1;
    const double delta = p.value - (mean + cmean);
    kahan_add(delta / count, mean, cmean);
    kahan_add(delta * (p.value - (mean + cmean)), aux, caux);
  }
  return (aux + caux) / count;
}

std::optional<double> compare_over_time(std::span<const Point> f, bool max, bool timestamp) {
  double v = f[0].value;
  if (!timestamp) {
    // The common case, a tight loop: a window of an hour at 1 s is 3600 samples per step.
    if (max) {
      for (const auto& p : f) v = (p.value > v || std::isnan(v)) ? p.value : v;
    } else {
      for (const auto& p : f) v = (p.value < v || std::isnan(v)) ? p.value : v;
    }
    return v;
  }
  std::int64_t at = f[0].t_ms;
  for (const auto& p : f) {
    if ((max ? p.value >= v : p.value <= v) || std::isnan(v)) {
      v = p.value;
      at = p.t_ms;
    }
  }
  return static_cast<double>(at) / 1000.0;
}

// Plain (non-anchored) windows only; the anchored/smoothed modifiers are parse errors elsewhere.
std::span<const Point> plain(const RangeWindow& w) {
  if (!w.anchored && !w.smoothed) return w.points;
  auto f = w.points;
  std::size_t a = 0, b = f.size();
  while (a < b && f[a].t_ms <= w.range_start_ms) ++a;
  while (b > a && f[b - 1].t_ms > w.range_end_ms) --b;
  return f.subspan(a, b - a);
}

const std::unordered_map<std::string_view, RangeFunction>& range_functions() {
  static const std::unordered_map<std::string_view, RangeFunction> table = [] {
    std::unordered_map<std::string_view, RangeFunction> m;
    m["rate"] = [](const RangeWindow& w, std::span<const double>) { return extrapolated_rate(w, true, true); };
    m["increase"] = [](const RangeWindow& w, std::span<const double>) { return extrapolated_rate(w, true, false); };
    m["delta"] = [](const RangeWindow& w, std::span<const double>) { return extrapolated_rate(w, false, false); };
    m["irate"] = [](const RangeWindow& w, std::span<const double>) { return instant_value(w, true); };
    m["idelta"] = [](const RangeWindow& w, std::span<const double>) { return instant_value(w, false); };
    m["deriv"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.size() < 2) return std::nullopt;
      return linear_regression(f, f[0].t_ms).first;
    };
    m["predict_linear"] = [](const RangeWindow& w, std::span<const double> s) -> std::optional<double> {
      auto f = plain(w);
      if (f.size() < 2) return std::nullopt;
      auto [slope, intercept] = linear_regression(f, w.t_ms);
      return slope * s[0] + intercept;
    };
    m["changes"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = w.points;
      double changes = 0;
      for (std::size_t i = 1; i < f.size(); ++i) {
        const double a = f[i - 1].value, b = f[i].value;
        if (a != b && !(std::isnan(a) && std::isnan(b))) changes += 1;
      }
      return changes;
    };
    m["resets"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = w.points;
      double resets = 0;
      for (std::size_t i = 1; i < f.size(); ++i) {
        if (f[i].value < f[i - 1].value) resets += 1;
      }
      return resets;
    };
    m["avg_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      return kahan_mean(f.size(), [&](std::size_t i) { return f[i].value; });
    };
    m["sum_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      double sum = 0, c = 0;
      for (const auto& p : f) kahan_add(p.value, sum, c);
      return std::isinf(sum) ? sum : sum + c;
    };
    m["count_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      return static_cast<double>(f.size());
    };
    m["present_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      if (plain(w).empty()) return std::nullopt;
      return 1.0;
    };
    m["last_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      return f.back().value;
    };
    m["first_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      return f.front().value;
    };
    m["ts_of_last_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      return static_cast<double>(f.back().t_ms) / 1000.0;
    };
    m["ts_of_first_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      return static_cast<double>(f.front().t_ms) / 1000.0;
    };
    auto cmp = [](bool max, bool ts) {
      return [max, ts](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
        auto f = plain(w);
        if (f.empty()) return std::nullopt;
        return compare_over_time(f, max, ts);
      };
    };
    m["max_over_time"] = cmp(true, false);
    m["min_over_time"] = cmp(false, false);
    m["ts_of_max_over_time"] = cmp(true, true);
    m["ts_of_min_over_time"] = cmp(false, true);
    m["stddev_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      RangeWindow p = w;
      p.points = plain(w);
      if (p.points.empty()) return std::nullopt;
      return std::sqrt(*variance_over_time(p));
    };
    m["stdvar_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      RangeWindow p = w;
      p.points = plain(w);
      if (p.points.empty()) return std::nullopt;
      return variance_over_time(p);
    };
    m["quantile_over_time"] = [](const RangeWindow& w, std::span<const double> s) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      std::vector<double> values;
      values.reserve(f.size());
      for (const auto& p : f) values.push_back(p.value);
      return quantile_of(s[0], std::move(values));
    };
    m["mad_over_time"] = [](const RangeWindow& w, std::span<const double>) -> std::optional<double> {
      auto f = plain(w);
      if (f.empty()) return std::nullopt;
      std::vector<double> values;
      for (const auto& p : f) values.push_back(p.value);
      const double median = quantile_of(0.5, values);
      for (auto& v : values) v = std::abs(v - median);
      return quantile_of(0.5, std::move(values));
    };
    m["absent_over_time"] = [](const RangeWindow&, std::span<const double>) -> std::optional<double> {
      return std::nullopt;  // handled by the evaluator: it needs to know that no series had samples
    };
    m["double_exponential_smoothing"] = [](const RangeWindow& w, std::span<const double> s) -> std::optional<double> {
      auto f = plain(w);
      const double sf = s[0], tf = s[1];
      if (sf <= 0 || sf >= 1) Evaluator::fail(fmt::format("invalid smoothing factor. Expected: 0 < sf < 1, got: {:f}", sf));
      if (tf <= 0 || tf >= 1) Evaluator::fail(fmt::format("invalid trend factor. Expected: 0 < tf < 1, got: {:f}", tf));
      if (f.size() < 2) return std::nullopt;
      double s0 = 0, s1 = f[0].value, b = f[1].value - f[0].value;
      for (std::size_t i = 1; i < f.size(); ++i) {
        const double x = sf * f[i].value;
        if (i - 1 != 0) b = tf * (s1 - s0) + (1 - tf) * b;
        const double y = (1 - sf) * (s1 + b);
        s0 = s1;
        s1 = x + y;
      }
      return s1;
    };
    return m;
  }();
  return table;
}

}  // namespace

const InstantFunction* find_instant_function(std::string_view name) {
  const auto& t = instant_functions();
  auto it = t.find(name);
  return it != t.end() ? &it->second : nullptr;
}

const RangeFunction* find_range_function(std::string_view name) {
  const auto& t = range_functions();
  auto it = t.find(name);
  return it != t.end() ? &it->second : nullptr;
}

bool range_function_keeps_name(std::string_view name) { return name == "last_over_time" || name == "first_over_time"; }

}  // namespace gpuscope::promql
