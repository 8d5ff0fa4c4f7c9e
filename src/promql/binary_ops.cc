#include <cmath>
#include <unordered_map>

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

}  // namespace

namespace {

// Each series' matching key as a small integer, computed once per query rather than per step.
std::vector<std::size_t> key_ids(const EvalMatrix& m, const VectorMatching& matching,
                                 std::unordered_map<Labels, std::size_t, store::LabelsHash>& ids,
                                 std::vector<Labels>& keys) {
  std::vector<std::size_t> out;
  out.reserve(m.size());
  for (const auto& s : m) {
    auto key = match_labels(s.labels, matching);
    auto [it, inserted] = ids.emplace(key, keys.size());
    if (inserted) keys.push_back(std::move(key));
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

// Series by series rather than sample by sample: labels, matching keys and output series are worked
// out once per query, so a step only compares small integers (a 24 h range at 15 s is 5761 steps).
EvalMatrix eval_vector_binary(Evaluator& ev, const BinaryExpr& b, const EvalMatrix& lhs, const EvalMatrix& rhs) {
  const VectorMatching m = b.matching.value_or(VectorMatching{
      is_set_operator(b.op) ? Cardinality::kManyToMany : Cardinality::kOneToOne, {}, false, {}});
  std::unordered_map<Labels, std::size_t, store::LabelsHash> ids;
  std::vector<Labels> keys;
  const auto lkeys = key_ids(lhs, m, ids, keys);
  const auto rkeys = key_ids(rhs, m, ids, keys);
  StepCursor lc(lhs), rc(rhs);
  OutputSeries out(ev.budget());
  const std::size_t steps = ev.steps();

  if (is_set_operator(b.op)) {
    // Set operators keep the input series as they are.
    std::vector<std::size_t> lslot(lhs.size()), rslot(rhs.size());
    for (std::size_t i = 0; i < lhs.size(); ++i) lslot[i] = out.slot(lhs[i].labels, lhs[i].drop_name);
    if (b.op == BinaryOp::kOr) {
      for (std::size_t j = 0; j < rhs.size(); ++j) rslot[j] = out.slot(rhs[j].labels, rhs[j].drop_name);
    }
    std::vector<char> seen(keys.size(), 0);
    for (std::size_t step = 0; step < steps; ++step) {
      ev.budget().work(1 + lhs.size() + rhs.size());
      const std::int64_t t = ev.start() + static_cast<std::int64_t>(step) * ev.interval();
      lc.advance(t);
      rc.advance(t);
      std::fill(seen.begin(), seen.end(), 0);
      const bool or_op = b.op == BinaryOp::kOr;
      // and/unless look the left side up among the right side's keys; or, the right among the left's.
      const EvalMatrix& probe_side = or_op ? lhs : rhs;
      const StepCursor& probe = or_op ? lc : rc;
      const auto& probe_keys = or_op ? lkeys : rkeys;
      for (std::size_t k = 0; k < probe_side.size(); ++k) {
        if (probe.at(k) != nullptr) seen[probe_keys[k]] = 1;
      }
      for (std::size_t i = 0; i < lhs.size(); ++i) {
        const Point* p = lc.at(i);
        if (p == nullptr) continue;
        const bool keep = or_op || (b.op == BinaryOp::kAnd ? seen[lkeys[i]] != 0 : seen[lkeys[i]] == 0);
        if (keep) out.add(lslot[i], t, p->value);
      }
      if (or_op) {
        for (std::size_t j = 0; j < rhs.size(); ++j) {
          const Point* p = rc.at(j);
          if (p != nullptr && seen[rkeys[j]] == 0) out.add(rslot[j], t, p->value);
        }
      }
    }
    return out.take();
  }

  const bool one_to_many = m.card == Cardinality::kOneToMany;
  const EvalMatrix& many = one_to_many ? rhs : lhs;
  const EvalMatrix& one = one_to_many ? lhs : rhs;
  const auto& many_keys = one_to_many ? rkeys : lkeys;
  const auto& one_keys = one_to_many ? lkeys : rkeys;
  const StepCursor& many_c = one_to_many ? rc : lc;
  const StepCursor& one_c = one_to_many ? lc : rc;
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  // The output series of a (many, one) pair, made the first time the pair matches.
  std::unordered_map<std::uint64_t, std::size_t> pair_slot;
  std::vector<std::size_t> one_at(keys.size(), kNone);
  std::vector<std::size_t> matched_at(keys.size(), kNone);  // one-to-one: the step a key last matched
  std::vector<std::size_t> slot_step;                          // many-to-one: the step a slot last got a value
  for (std::size_t step = 0; step < steps; ++step) {
    ev.budget().work(1 + lhs.size() + rhs.size());
    const std::int64_t t = ev.start() + static_cast<std::int64_t>(step) * ev.interval();
    lc.advance(t);
    rc.advance(t);
    std::fill(one_at.begin(), one_at.end(), kNone);
    for (std::size_t k = 0; k < one.size(); ++k) {
      if (one_c.at(k) == nullptr) continue;
      auto& o = one_at[one_keys[k]];
      if (o != kNone) {
        Evaluator::fail(fmt::format(
            "found duplicate series for the match group {} on the {} hand-side of the operation: [{}, {}];"
            "many-to-many matching not allowed: matching labels must be unique on one side",
            series_text(keys[one_keys[k]]), one_to_many ? "left" : "right", series_text(one[o].labels),
            series_text(one[k].labels)));
      }
      o = k;
    }
    for (std::size_t i = 0; i < many.size(); ++i) {
      const Point* p = many_c.at(i);
      if (p == nullptr) continue;
      const std::size_t key = many_keys[i];
      const std::size_t o = one_at[key];
      if (o == kNone) continue;
      const Point* q = one_c.at(o);
      const double l = one_to_many ? q->value : p->value;
      const double r = one_to_many ? p->value : q->value;
      auto [it, fresh] = pair_slot.try_emplace((static_cast<std::uint64_t>(i) << 32) | o, 0);
      if (fresh) {
        it->second = out.slot(result_labels(many[i].labels, one[o].labels, m),
                              many[i].drop_name || !is_comparison(b.op) || b.return_bool);
      }
      const std::size_t slot = it->second;
      // Ambiguous matches are errors even when the comparison would filter them out, so a query's
      // validity does not depend on the data's values.
      if (m.card == Cardinality::kOneToOne) {
        if (matched_at[key] == step) {
          Evaluator::fail("multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)");
        }
        matched_at[key] = step;
      } else {
        if (slot_step.size() <= slot) slot_step.resize(slot + 1, kNone);
        if (slot_step[slot] == step) Evaluator::fail("multiple matches for labels: grouping labels must ensure unique matches");
        slot_step[slot] = step;
      }
      auto res = apply_binary_op(b.op, l, r);
      if (b.return_bool) {
        out.add(slot, t, res.keep ? 1.0 : 0.0);
      } else if (res.keep) {
        out.add(slot, t, res.value);
      }
    }
  }
  return out.take();
}

}  // namespace gpuscope::promql
