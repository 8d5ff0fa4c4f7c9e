// AlertingRule: one `alert:` rule and the alerts it keeps, moving inactive → pending → firing →
// resolved with `for` and `keep_firing_for` exactly as Prometheus's rule manager does.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "promql/engine.h"
#include "rules/rule_file.h"
#include "rules/template.h"
#include "store/labels.h"
#include "store/queryable.h"

namespace gpuscope::rules {

enum class AlertState { kInactive, kPending, kFiring };
const char* alert_state_name(AlertState state);  // "inactive", "pending", "firing"

// Prometheus keeps a resolved alert this long, so receivers that missed the resolve get it again.
inline constexpr std::int64_t kResolvedRetentionMs = 15 * 60 * 1000;

struct Alert {
  store::Labels labels;       // the result's labels without __name__, the rule's labels, alertname
  store::Labels annotations;  // expanded at the latest evaluation that saw the alert
  AlertState state = AlertState::kPending;
  double value = 0;
  std::int64_t active_at_ms = 0;  // when it first became pending
  std::int64_t fired_at_ms = 0;   // 0: never fired
  std::int64_t resolved_at_ms = 0;
  std::int64_t last_sent_at_ms = 0;
  std::int64_t valid_until_ms = 0;
  std::int64_t keep_firing_since_ms = 0;  // 0: the expression still returns it

  // Prometheus's rule: firing alerts go out again after resend_delay, resolved ones once more.
  bool needs_sending(std::int64_t t_ms, std::int64_t resend_delay_ms) const;
};

// What an evaluation needs from its surroundings.
struct EvaluationContext {
  const promql::Engine* engine = nullptr;
  const store::Queryable* data = nullptr;
  store::Labels external_labels;
  std::string external_url;
};

// A series a rule wrote at this evaluation (recorded samples, ALERTS, ALERTS_FOR_STATE).
struct RuleSample {
  store::Labels labels;
  double value;
};

// Runs the instant query `expr` at t_ms; a scalar result becomes one sample with no labels.
std::expected<std::vector<promql::InstantSample>, std::string> query_vector(const EvaluationContext& ctx,
                                                                            const promql::Expr& expr,
                                                                            std::int64_t t_ms);

class AlertingRule {
 public:
  explicit AlertingRule(RuleDefinition definition) : definition_(std::move(definition)) {}

  const RuleDefinition& definition() const { return definition_; }
  const std::string& name() const { return definition_.name; }

  // One evaluation at t_ms (the group's time minus its query offset). Returns the ALERTS and
  // ALERTS_FOR_STATE samples for pending and firing alerts. On error the alerts are left as they were,
  // except that exceeding `limit` (alerts pending or firing) clears them, as Prometheus does.
  std::expected<std::vector<RuleSample>, std::string> evaluate(const EvaluationContext& ctx, std::int64_t t_ms,
                                                               int limit);

  // The alerts to send now (marking them sent): firing ones due for (re)sending, resolved ones once.
  // valid_until is t + 4 × max(resend delay, group interval): two missed evaluations or sends are fine.
  std::vector<Alert> take_alerts_to_send(std::int64_t t_ms, std::int64_t resend_delay_ms, std::int64_t interval_ms);

  // Active (pending, firing, or resolved within the retention) alerts, sorted by labels.
  std::vector<Alert> alerts() const;
  // Restores alerts saved before a restart (state file), keyed by their labels.
  void restore(std::vector<Alert> alerts);

 private:
  RuleDefinition definition_;
  std::unordered_map<store::Labels, Alert, store::LabelsHash> active_;
};

}  // namespace gpuscope::rules
