// RuleGroup: a group's rules evaluated in order at one time, each rule's output written back before
// the next rule runs (so later rules see it), and staleness markers for series a rule stopped producing.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <variant>
#include <vector>

#include "rules/alerting_rule.h"
#include "rules/recording_rule.h"
#include "rules/rule_file.h"

namespace gpuscope::rules {

// Where rule output goes: the agent's store, or the unit tests' in-memory series.
class SampleAppender {
 public:
  virtual ~SampleAppender() = default;
  virtual std::expected<void, std::string> append(const store::Labels& labels, std::int64_t t_ms, double value) = 0;
};

// The adapter for the store's Head and Tsdb, whose append() reports its refusals as AppendError.
template <class Store>
class StoreAppender : public SampleAppender {
 public:
  explicit StoreAppender(Store& store) : store_(store) {}
  std::expected<void, std::string> append(const store::Labels& labels, std::int64_t t_ms, double value) override {
    auto ok = store_.append(labels, t_ms, value);
    if (!ok) return std::unexpected(ok.error().message);
    return {};
  }

 private:
  Store& store_;
};

enum class RuleHealth { kUnknown, kOk, kError };
const char* rule_health_name(RuleHealth health);  // "unknown", "ok", "err" (Prometheus's API words)

struct RuleStatus {
  RuleHealth health = RuleHealth::kUnknown;
  std::string last_error;
  std::int64_t last_evaluation_ms = 0;  // 0: not evaluated yet
  double evaluation_seconds = 0;
};

class RuleGroup {
 public:
  // default_interval_ms is used when the group names none (Prometheus's global evaluation_interval).
  RuleGroup(RuleGroupDefinition definition, std::int64_t default_interval_ms);

  const RuleGroupDefinition& definition() const { return definition_; }
  const std::string& name() const { return definition_.name; }
  const std::string& file() const { return definition_.file; }
  std::int64_t interval_ms() const { return interval_ms_; }

  struct Rule {
    std::variant<AlertingRule, RecordingRule> rule;
    RuleStatus status;
    std::vector<store::Labels> previous_series;  // written at the last evaluation, for staleness
    const RuleDefinition& definition() const;
  };
  std::vector<Rule>& rules() { return rules_; }
  const std::vector<Rule>& rules() const { return rules_; }

  // Evaluates every rule at t_ms (queries at t_ms minus the group's query_offset). A failing rule is
  // marked with its error and the others still run. Returns the number of rules that failed.
  std::size_t evaluate(const EvaluationContext& ctx, SampleAppender& out, std::int64_t t_ms);
  std::int64_t last_evaluation_ms() const { return last_evaluation_ms_; }
  double last_evaluation_seconds() const { return last_evaluation_seconds_; }

  // Counted over the group's life (carried over a reload that keeps the group), for the agent's /metrics.
  struct Counters {
    std::uint64_t iterations = 0;         // evaluations of the whole group
    std::uint64_t iterations_missed = 0;  // slots skipped because the evaluation came late
    std::uint64_t rule_evaluations = 0;
    std::uint64_t rule_failures = 0;
  };
  const Counters& counters() const { return counters_; }
  Counters& counters() { return counters_; }

 private:
  RuleGroupDefinition definition_;
  std::int64_t interval_ms_;
  std::vector<Rule> rules_;
  std::int64_t last_evaluation_ms_ = 0;
  double last_evaluation_seconds_ = 0;
  Counters counters_;
};

}  // namespace gpuscope::rules
