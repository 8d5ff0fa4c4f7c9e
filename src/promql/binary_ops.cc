#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "promql/evaluator.h"

namespace gpuscope::promql {

using store::Labels;

BinaryResult apply_binary_op(BinaryOp op, double l, double r) {
  switch (op) {
    case BinaryOp::kAdd: return {l + r, true};
    case BinaryOp::kSub: return {l - r, true};
    case BinaryOp::kMul: return {l * r, true};
    case BinaryOp::kDiv: return {l / r, true};
    case BinaryOp::kMod: return {std::fmod(l, r), true};
    case BinaryOp::kPow: return {std::pow(l, r), true};
    case BinaryOp::kAtan2: return {std::atan2(l, r), true};
    case BinaryOp::kEql: return {l, l == r};
    case BinaryOp::kNeq: return {l, l != r};
    case BinaryOp::kGtr: return {l, l > r};
    case BinaryOp::kLss: return {l, l < r};
    case BinaryOp::kGte: return {l, l >= r};
    case BinaryOp::kLte: return {l, l <= r};
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kUnless: break;
  }
  return {0, false};
}

namespace {

// The labels two samples are matched on: on(...) keeps only the listed labels; ignoring(...) (and
// no modifier) drops the listed labels and the metric name.
Labels match_labels(const Labels& l, const VectorMatching& m) {
  if (m.on) return l.keep_only(m.matching_labels);
  std::vector<std::string> drop = m.matching_labels;
  drop.emplace_back(store::kMetricNameLabel);
  return l.without(drop);
}

std::string series_text(const Labels& l) {
  // Prometheus prints label sets in this error as {__name__="x", a="b"}.
  std::string out = "{";
  bool first = true;
  for (const auto& lb : l) {
    if (!first) out += ", ";
    first = false;
    out += fmt::format("{}=\"{}\"", lb.name, lb.value);
  }
  return out + "}";
}

Labels result_labels(const Labels& lhs, const Labels& rhs, const VectorMatching& m) {
  Labels out = lhs;
  if (m.card == Cardinality::kOneToOne) {
    if (m.on) {
      out = out.keep_only(m.matching_labels);
    } else {
      for (const auto& name : m.matching_labels) out.remove(name);
    }
  }
  if (m.card == Cardinality::kManyToOne || m.card == Cardinality::kOneToMany) {
    for (const auto& name : m.include) out.set(name, rhs.get(name));
  }
  return out;
}

EvalVector set_operation(const BinaryExpr& b, const VectorMatching& m, const EvalVector& lhs, const EvalVector& rhs) {
  EvalVector out;
  switch (b.op) {
    case BinaryOp::kAnd: {
      std::unordered_set<Labels, store::LabelsHash> right;
      for (const auto& s : rhs) right.insert(match_labels(s.labels, m));
      for (const auto& s : lhs) {
        if (right.contains(match_labels(s.labels, m))) out.push_back(s);
      }
      break;
    }
    case BinaryOp::kOr: {
      std::unordered_set<Labels, store::LabelsHash> left;
      for (const auto& s : lhs) {
        left.insert(match_labels(s.labels, m));
        out.push_back(s);
      }
      for (const auto& s : rhs) {
        if (!left.contains(match_labels(s.labels, m))) out.push_back(s);
      }
      break;
    }
    case BinaryOp::kUnless: {
      std::unordered_set<Labels, store::LabelsHash> right;
      for (const auto& s : rhs) right.insert(match_labels(s.labels, m));
      for (const auto& s : lhs) {
        if (!right.contains(match_labels(s.labels, m))) out.push_back(s);
      }
      break;
    }
    default: break;
  }
  return out;
}

}  // namespace

EvalMatrix eval_vector_binary(Evaluator& ev, const BinaryExpr& b, const EvalMatrix& lhs_m, const EvalMatrix& rhs_m) {
  const VectorMatching m = b.matching.value_or(VectorMatching{
      is_set_operator(b.op) ? Cardinality::kManyToMany : Cardinality::kOneToOne, {}, false, {}});
  const EvalMatrix* args[] = {&lhs_m, &rhs_m};
  return ev.range_eval(args, [&](std::span<const EvalVector> v, std::int64_t t) {
    if (is_set_operator(b.op)) return set_operation(b, m, v[0], v[1]);
    const bool one_to_many = m.card == Cardinality::kOneToMany;
    const EvalVector& many = one_to_many ? v[1] : v[0];
    const EvalVector& one = one_to_many ? v[0] : v[1];
    EvalVector out;
    // The "one" side, by matching labels; a duplicate there makes the match ambiguous.
    std::unordered_map<Labels, const EvalSample*, store::LabelsHash> ones;
    for (const auto& s : one) {
      auto key = match_labels(s.labels, m);
      auto [it, inserted] = ones.emplace(key, &s);
      if (!inserted) {
        Evaluator::fail(fmt::format(
            "found duplicate series for the match group {} on the {} hand-side of the operation: [{}, {}];"
            "many-to-many matching not allowed: matching labels must be unique on one side",
            series_text(key), one_to_many ? "left" : "right", series_text(it->second->labels), series_text(s.labels)));
      }
    }
    std::unordered_map<Labels, std::unordered_set<Labels, store::LabelsHash>, store::LabelsHash> matched;
    for (const auto& s : many) {
      auto key = match_labels(s.labels, m);
      auto it = ones.find(key);
      if (it == ones.end()) continue;
      const EvalSample& o = *it->second;
      const double l = one_to_many ? o.value : s.value;
      const double r = one_to_many ? s.value : o.value;
      auto res = apply_binary_op(b.op, l, r);
      Labels labels = result_labels(s.labels, o.labels, m);
      // Ambiguous matches are errors even when the comparison would filter them out, so a query's
      // validity does not depend on the data's values.
      auto [mit, first_match] = matched.try_emplace(key);
      if (m.card == Cardinality::kOneToOne) {
        if (!first_match) {
          Evaluator::fail("multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)");
        }
      } else if (!mit->second.insert(labels).second) {
        Evaluator::fail("multiple matches for labels: grouping labels must ensure unique matches");
      }
      double value = res.value;
      if (b.return_bool) {
        value = res.keep ? 1.0 : 0.0;
      } else if (!res.keep) {
        continue;
      }
      const bool drop = !is_comparison(b.op) || b.return_bool;
      out.push_back(EvalSample{std::move(labels), value, drop || s.drop_name, t});
    }
    return out;
  });
}

}  // namespace gpuscope::promql
