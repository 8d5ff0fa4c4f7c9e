#include "rules/rule_group.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "store/queryable.h"

namespace gpuscope::rules {

const char* rule_health_name(RuleHealth health) {
  switch (health) {
    case RuleHealth::kUnknown: return "unknown";
    case RuleHealth::kOk: return "ok";
    case RuleHealth::kError: return "err";
  }
  return "unknown";
}

const RuleDefinition& RuleGroup::Rule::definition() const {
  return std::visit([](const auto& r) -> const RuleDefinition& { return r.definition(); }, rule);
}

RuleGroup::RuleGroup(RuleGroupDefinition definition, std::int64_t default_interval_ms)
    : definition_(std::move(definition)),
      interval_ms_(definition_.interval_ms > 0 ? definition_.interval_ms : default_interval_ms) {
  for (RuleDefinition& r : definition_.rules) {
    RuleDefinition copy = r;
    // Group labels apply to every rule; a rule's own label of the same name wins (Prometheus 3).
    for (const store::Label& l : definition_.labels) {
      const bool overridden = std::any_of(copy.labels.begin(), copy.labels.end(),
                                          [&](const TemplatedField& f) { return f.name == l.name; });
      if (overridden) continue;
      copy.labels.push_back({l.name, l.value, nullptr});  // literal, not a template
    }
    std::sort(copy.labels.begin(), copy.labels.end(),
              [](const TemplatedField& a, const TemplatedField& b) { return a.name < b.name; });
    if (copy.kind == RuleDefinition::Kind::kAlert) {
      rules_.push_back(Rule{AlertingRule(std::move(copy)), {}, {}});
    } else {
      rules_.push_back(Rule{RecordingRule(std::move(copy)), {}, {}});
    }
  }
}

std::size_t RuleGroup::evaluate(const EvaluationContext& ctx, SampleAppender& out, std::int64_t t_ms) {
  const auto group_start = std::chrono::steady_clock::now();
  const std::int64_t query_t = t_ms - definition_.query_offset_ms;
  std::size_t failed = 0;
  for (Rule& r : rules_) {
    const auto start = std::chrono::steady_clock::now();
    auto samples = std::visit(
        [&](auto& rule) { return rule.evaluate(ctx, query_t, definition_.limit); }, r.rule);
    r.status.last_evaluation_ms = t_ms;
    if (!samples) {
      r.status.health = RuleHealth::kError;
      r.status.last_error = std::move(samples.error());
      ++failed;
    } else {
      r.status.health = RuleHealth::kOk;
      r.status.last_error.clear();
      std::vector<store::Labels> written;
      written.reserve(samples->size());
      for (RuleSample& s : *samples) {
        if (auto ok = out.append(s.labels, query_t, s.value); !ok) {
          r.status.health = RuleHealth::kError;
          r.status.last_error = ok.error();
          continue;
        }
        written.push_back(std::move(s.labels));
      }
      // Series this rule wrote last time and not now end here, as a scrape target's would.
      std::unordered_set<store::Labels, store::LabelsHash> now(written.begin(), written.end());
      for (const store::Labels& l : r.previous_series) {
        if (!now.contains(l)) (void)out.append(l, query_t, store::stale_marker());
      }
      r.previous_series = std::move(written);
      if (r.status.health == RuleHealth::kError) ++failed;
    }
    r.status.evaluation_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  ++counters_.iterations;
  counters_.rule_evaluations += rules_.size();
  counters_.rule_failures += failed;
  last_evaluation_ms_ = t_ms;
  last_evaluation_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - group_start).count();
  return failed;
}

}  // namespace gpuscope::rules
