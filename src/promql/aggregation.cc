#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
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

double aggregate_value(AggregateOp op, std::span<const double> values) {
  switch (op) {
    case AggregateOp::kSum: {
      double sum = 0, c = 0;
      for (const double v : values) kahan_add(v, sum, c);
      return std::isinf(sum) ? sum : sum + c;
    }
    case AggregateOp::kAvg: return kahan_mean(values.size(), [&](std::size_t i) { return values[i]; });
    case AggregateOp::kCount: return static_cast<double>(values.size());
    case AggregateOp::kGroup: return 1;
    case AggregateOp::kMin:
    case AggregateOp::kMax: {
      double v = values[0];
      for (const double x : values) {
        if (std::isnan(v) || (op == AggregateOp::kMax ? x > v : x < v)) v = x;
      }
      return v;
    }
    case AggregateOp::kStddev:
    case AggregateOp::kStdvar: {
      double count = 0, mean = 0, cmean = 0, aux = 0, caux = 0;
      for (const double x : values) {
        if (std::isnan(x) || std::isinf(x)) return std::nan("");
        count += 1;
        const double delta = x - (mean + cmean);
        kahan_add(delta / count, mean, cmean);
        kahan_add(delta * (x - (mean + cmean)), aux, caux);
      }
      const double variance = (aux + caux) / count;
      return op == AggregateOp::kStddev ? std::sqrt(variance) : variance;
    }
    default: break;
  }
  return 0;
}

}  // namespace

// Series by series: each input series' group is found once per query; a step only gathers values
// into their groups' buffers.
EvalMatrix eval_aggregation(Evaluator& ev, const AggregateExpr& a, const EvalMatrix& input, const EvalMatrix* param) {
  std::string count_values_label;
  if (a.op == AggregateOp::kCountValues) {
    count_values_label = a.param->as<StringLiteral>()->value;
    if (!store::is_valid_label_name(count_values_label)) {
      Evaluator::fail(fmt::format("invalid label name \"{}\"", count_values_label));
    }
  }
  if (a.op == AggregateOp::kLimitRatio) Evaluator::fail("limit_ratio is not supported by gpuscope", QueryError::Kind::kUnsupported);

  struct Group {
    Labels labels;
    bool drop_name = false;  // a member's name is to be dropped: so is the group's (when it keeps one)
    std::size_t slot = 0;
  };
  std::unordered_map<Labels, std::size_t, store::LabelsHash> index;
  std::vector<Group> groups;
  std::vector<std::size_t> group_of(input.size());
  for (std::size_t s = 0; s < input.size(); ++s) {
    Labels key = grouping_key(input[s].labels, a);
    auto [it, inserted] = index.emplace(std::move(key), groups.size());
    if (inserted) groups.push_back({it->first, false, 0});
    groups[it->second].drop_name = groups[it->second].drop_name || input[s].drop_name;
    group_of[s] = it->second;
  }
  OutputSeries out(ev.budget());
  const bool by_series = a.op == AggregateOp::kTopk || a.op == AggregateOp::kBottomk || a.op == AggregateOp::kLimitk;
  std::vector<std::size_t> series_slot;
  if (by_series) {
    // topk and friends return input series as they are.
    series_slot.resize(input.size());
    for (std::size_t s = 0; s < input.size(); ++s) series_slot[s] = out.slot(input[s].labels, input[s].drop_name);
  } else if (a.op != AggregateOp::kCountValues) {
    for (auto& g : groups) g.slot = out.slot(g.labels, g.drop_name);
  }

  StepCursor in(input);
  std::optional<StepCursor> pc;
  if (param != nullptr) pc.emplace(*param);
  // Per group, this step's members (series index) and values; buffers reused across steps.
  std::vector<std::vector<std::size_t>> members(groups.size());
  std::vector<std::vector<double>> values(groups.size());
  std::unordered_map<Labels, std::size_t, store::LabelsHash> value_slots;  // count_values
  for (std::size_t step = 0; step < ev.steps(); ++step) {
    ev.budget().work(1 + input.size());
    const std::int64_t t = ev.start() + static_cast<std::int64_t>(step) * ev.interval();
    in.advance(t);
    double p = 0;
    if (pc) {
      pc->advance(t);
      const Point* pp = param->empty() ? nullptr : pc->at(0);
      if (pp == nullptr) continue;
      p = pp->value;
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
      members[g].clear();
      values[g].clear();
    }
    for (std::size_t s = 0; s < input.size(); ++s) {
      if (const Point* pt = in.at(s)) {
        members[group_of[s]].push_back(s);
        values[group_of[s]].push_back(pt->value);
      }
    }
    switch (a.op) {
      case AggregateOp::kTopk:
      case AggregateOp::kBottomk:
      case AggregateOp::kLimitk: {
        if (std::isnan(p)) Evaluator::fail("Parameter value is NaN");
        if (p >= 9.2e18) Evaluator::fail(fmt::format("Scalar value {} overflows int64", p));
        const auto k = static_cast<std::int64_t>(p);
        if (k < 1) break;
        for (std::size_t g = 0; g < groups.size(); ++g) {
          std::vector<std::size_t> order(members[g].size());
          for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
          if (a.op != AggregateOp::kLimitk) {
            const bool top = a.op == AggregateOp::kTopk;
            std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
              return ranks_higher(values[g][x], values[g][y], top);
            });
          }
          if (static_cast<std::int64_t>(order.size()) > k) order.resize(static_cast<std::size_t>(k));
          for (const std::size_t i : order) out.add(series_slot[members[g][i]], t, values[g][i]);
        }
        break;
      }
      case AggregateOp::kQuantile:
        if (std::isnan(p) || p < 0 || p > 1) warn_quantile(ev, p);
        for (std::size_t g = 0; g < groups.size(); ++g) {
          if (!values[g].empty()) out.add(groups[g].slot, t, quantile_of(p, values[g]));
        }
        break;
      case AggregateOp::kCountValues: {
        std::unordered_map<std::size_t, double> counts;
        std::vector<std::size_t> order;
        for (std::size_t g = 0; g < groups.size(); ++g) {
          for (const double v : values[g]) {
            Labels l = groups[g].labels;
            l.set(count_values_label, format_float_shortest(v));
            auto [it, inserted] = value_slots.emplace(l, 0);
            if (inserted) it->second = out.slot(l, false);
            if (counts.emplace(it->second, 0).second) order.push_back(it->second);
            counts[it->second] += 1;
          }
        }
        for (const std::size_t slot : order) out.add(slot, t, counts[slot]);
        break;
      }
      default:
        for (std::size_t g = 0; g < groups.size(); ++g) {
          if (!values[g].empty()) out.add(groups[g].slot, t, aggregate_value(a.op, values[g]));
        }
    }
  }
  return out.take();
}

}  // namespace gpuscope::promql
