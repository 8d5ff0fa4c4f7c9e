// RuleManager: the agent's loaded rule groups, each evaluated on its own interval against the store,
// on whatever clock the caller drives it with (wall time in `serve`, a virtual clock in a backtest).
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "promql/engine.h"
#include "rules/rule_group.h"

namespace gpuscope::rules {

struct RuleManagerOptions {
  std::int64_t default_interval_ms = 60'000;  // for groups without `interval` (Prometheus's global one)
  store::Labels external_labels;
  std::string external_url;
  promql::EngineOptions engine;
};

// Loads every file (all errors of all files, each one line) into groups, in file then group order.
std::expected<std::vector<RuleGroupDefinition>, std::vector<std::string>> load_rule_groups(
    const std::vector<std::string>& files);

class RuleManager {
 public:
  RuleManager(std::vector<RuleGroupDefinition> groups, RuleManagerOptions options);

  // Evaluates every group whose evaluation is due at now_ms, at its own slot time (groups start at
  // the first call and then keep their interval; a late call evaluates once, at the latest due slot,
  // as Prometheus skips missed iterations). Returns when the next group is due.
  std::int64_t evaluate_due(const store::Queryable& data, SampleAppender& out, std::int64_t now_ms);

  // Replaces the groups (a reload). Alerts of a rule whose group, name, expression, labels and
  // annotations are unchanged are carried over, so a reload neither re-notifies nor restarts `for`.
  void replace(std::vector<RuleGroupDefinition> groups);

  // Reads under the manager's lock (the HTTP API, the notifier).
  void visit(const std::function<void(const std::vector<RuleGroup>&)>& reader) const;
  void update(const std::function<void(std::vector<RuleGroup>&)>& writer);

  const RuleManagerOptions& options() const { return options_; }

 private:
  RuleManagerOptions options_;
  promql::Engine engine_;
  mutable std::mutex mu_;
  std::vector<RuleGroup> groups_;
  std::vector<std::int64_t> next_due_ms_;  // per group; 0: at the next call
};

}  // namespace gpuscope::rules
