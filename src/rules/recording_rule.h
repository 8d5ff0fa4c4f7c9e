// RecordingRule: one `record:` rule, its expression's result renamed and relabelled, to be written
// back to the store as Prometheus's rule manager does.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "rules/alerting_rule.h"
#include "rules/rule_file.h"

namespace gpuscope::rules {

class RecordingRule {
 public:
  explicit RecordingRule(RuleDefinition definition) : definition_(std::move(definition)) {}

  const RuleDefinition& definition() const { return definition_; }
  const std::string& name() const { return definition_.name; }

  // The samples to record at t_ms: __name__ set to the rule's name, the rule's labels set. Two results
  // with the same labels after that, or more than `limit` series (0: no limit), are an error.
  std::expected<std::vector<RuleSample>, std::string> evaluate(const EvaluationContext& ctx, std::int64_t t_ms,
                                                               int limit) const;

 private:
  RuleDefinition definition_;
};

}  // namespace gpuscope::rules
