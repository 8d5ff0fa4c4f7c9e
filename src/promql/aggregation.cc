#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "promql/evaluator.h"

namespace gpuscope::promql {

using store::Labels;

double quantile_of(double q, std::vector<double> values) {
  if (values.empty() || std::isnan(q)) return std::nan("");
  if (q < 0) return -std::numeric_limits<double>::infinity();
  if (q > 1) return std::numeric_limits<double>::infinity();
  // NaNs sort first, as Prometheus's vectorByValueHeap orders them.
  std::sort(values.begin(), values.end(), [](double a, double b) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
    return a < b;
  });
  const double n = static_cast<double>(values.size());
  const double rank = q * (n - 1);
  const double lower = std::max(0.0, std::floor(rank));
  const double upper = std::min(n - 1, lower + 1);
  const double weight = rank - std::floor(rank);
  return values[static_cast<std::size_t>(lower)] * (1 - weight) + values[static_cast<std::size_t>(upper)] * weight;
}

void warn_quantile(Evaluator& ev, double q) {
  auto text = fmt::format("PromQL warning: quantile value should be between 0 and 1, got {}", format_float_shortest(q));
  for (const auto& w : ev.warnings) {
    if (w == text) return;
  }
  ev.warnings.push_back(std::move(text));
}

std::string format_float_shortest(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

namespace {

struct Group {
  Labels labels;
  std::vector<const EvalSample*> samples;
  bool drop_name = false;  // a member's name is to be dropped: so is the group's (when it keeps one)
};

Labels grouping_key(const Labels& l, const AggregateExpr& a) {
  if (a.without) {
    std::vector<std::string> drop = a.grouping;
    drop.emplace_back(store::kMetricNameLabel);
    return l.without(drop);
  }
  return l.keep_only(a.grouping);
}

// topk/bottomk order: NaN loses to every number in both.
bool ranks_higher(double a, double b, bool top) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return top ? a > b : a < b;
}

double aggregate_value(AggregateOp op, const std::vector<const EvalSample*>& samples) {
  switch (op) {
    case AggregateOp::kSum: {
      double sum = 0, c = 0;
      for (const auto* s : samples) kahan_add(s->value, sum, c);
      return std::isinf(sum) ? sum : sum + c;
    }
    case AggregateOp::kAvg: {
      // Direct mean with Kahan summation while the sum stays finite, then an incremental mean, as
      // Prometheus does to avoid overflow without losing precision on ordinary inputs.
      double sum = samples[0]->value, c = 0, mean = 0;
      bool incremental = false;
      for (std::size_t i = 1; i < samples.size(); ++i) {
        const double count = static_cast<double>(i + 1);
        const double v = samples[i]->value;
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
      const double n = static_cast<double>(samples.size());
      return incremental ? mean + c : sum / n + c / n;
    }
    case AggregateOp::kCount: return static_cast<double>(samples.size());
    case AggregateOp::kGroup: return 1;
    case AggregateOp::kMin:
    case AggregateOp::kMax: {
      double v = samples[0]->value;
      for (const auto* s : samples) {
        if (std::isnan(v) || (op == AggregateOp::kMax ? s->value > v : s->value < v)) v = s->value;
      }
      return v;
    }
    case AggregateOp::kStddev:
    case AggregateOp::kStdvar: {
      double count = 0, mean = 0, cmean = 0, aux = 0, caux = 0;
      for (const auto* s : samples) {
        if (std::isnan(s->value) || std::isinf(s->value)) return std::nan("");
        count += 1;
        const double delta = s->value - (mean + cmean);
        kahan_add(delta / count, mean, cmean);
        kahan_add(delta * (s->value - (mean + cmean)), aux, caux);
      }
      const double variance = (aux + caux) / count;
      return op == AggregateOp::kStddev ? std::sqrt(variance) : variance;
    }
    default: break;
  }
  return 0;
}

}  // namespace

EvalMatrix eval_aggregation(Evaluator& ev, const AggregateExpr& a, const EvalMatrix& input, const EvalMatrix* param) {
  std::vector<const EvalMatrix*> args{&input};
  if (param != nullptr) args.push_back(param);
  std::string count_values_label;
  if (a.op == AggregateOp::kCountValues) {
    count_values_label = a.param->as<StringLiteral>()->value;
    if (!store::is_valid_label_name(count_values_label)) {
      Evaluator::fail(fmt::format("invalid label name \"{}\"", count_values_label));
    }
  }
  return ev.range_eval(args, [&](std::span<const EvalVector> v, std::int64_t t) {
    EvalVector out;
    const EvalVector& in = v[0];
    double p = 0;
    if (param != nullptr) {
      if (v.size() < 2 || v[1].empty()) return out;
      p = v[1][0].value;
    }
    // Groups in order of first appearance.
    std::unordered_map<Labels, std::size_t, store::LabelsHash> index;
    std::vector<Group> groups;
    for (const auto& s : in) {
      Labels key = grouping_key(s.labels, a);
      auto [it, inserted] = index.emplace(key, groups.size());
      if (inserted) groups.push_back({std::move(key), {}});
      groups[it->second].samples.push_back(&s);
      groups[it->second].drop_name = groups[it->second].drop_name || s.drop_name;
    }
    switch (a.op) {
      case AggregateOp::kTopk:
      case AggregateOp::kBottomk:
      case AggregateOp::kLimitk: {
        if (std::isnan(p)) Evaluator::fail("Parameter value is NaN");
        if (p >= 9.2e18) Evaluator::fail(fmt::format("Scalar value {} overflows int64", p));
        const auto k = static_cast<std::int64_t>(p);
        if (k < 1) return out;
        for (auto& g : groups) {
          auto samples = g.samples;
          if (a.op != AggregateOp::kLimitk) {
            const bool top = a.op == AggregateOp::kTopk;
            std::stable_sort(samples.begin(), samples.end(), [&](const EvalSample* x, const EvalSample* y) {
              return ranks_higher(x->value, y->value, top);
            });
          }
          if (static_cast<std::int64_t>(samples.size()) > k) samples.resize(static_cast<std::size_t>(k));
          for (const auto* s : samples) out.push_back(EvalSample{s->labels, s->value, s->drop_name, t});
        }
        return out;
      }
      case AggregateOp::kLimitRatio:
        Evaluator::fail("limit_ratio is not supported by gpuscope", QueryError::Kind::kUnsupported);
      case AggregateOp::kQuantile:
        for (auto& g : groups) {
          std::vector<double> values;
          for (const auto* s : g.samples) values.push_back(s->value);
          out.push_back(EvalSample{g.labels, quantile_of(p, std::move(values)), g.drop_name, t});
        }
        if (std::isnan(p) || p < 0 || p > 1) warn_quantile(ev, p);
        return out;
      case AggregateOp::kCountValues: {
        std::unordered_map<Labels, std::size_t, store::LabelsHash> counts_index;
        for (const auto& g : groups) {
          for (const auto* s : g.samples) {
            Labels l = g.labels;
            l.set(count_values_label, format_float_shortest(s->value));
            auto [it, inserted] = counts_index.emplace(l, out.size());
            if (inserted) out.push_back(EvalSample{std::move(l), 0, false, t});
            out[it->second].value += 1;
          }
        }
        return out;
      }
      default:
        for (auto& g : groups) out.push_back(EvalSample{g.labels, aggregate_value(a.op, g.samples), g.drop_name, t});
        return out;
    }
  });
}

}  // namespace gpuscope::promql
