#include "remote_write/write_relabel.h"

#include <re2/re2.h>

#include <expected>

namespace gpuscope::remote_write {

std::expected<WriteRelabelRule, std::string> make_relabel_rule(WriteRelabelRule::Action action,
                                                               std::vector<std::string> source_labels,
                                                               std::string separator, std::string regex) {
  // Prometheus anchors relabel regexes at both ends.
  auto compiled = std::make_shared<re2::RE2>("^(?:" + regex + ")$", re2::RE2::Quiet);
  if (!compiled->ok()) return std::unexpected(compiled->error());
  WriteRelabelRule rule;
  rule.action = action;
  rule.source_labels = std::move(source_labels);
  rule.separator = std::move(separator);
  rule.regex = std::move(regex);
  rule.compiled = std::move(compiled);
  return rule;
}

bool keeps_series(std::span<const WriteRelabelRule> rules, const store::Labels& labels) {
  std::string joined;
  for (const WriteRelabelRule& rule : rules) {
    joined.clear();
    for (std::size_t i = 0; i < rule.source_labels.size(); ++i) {
      if (i > 0) joined += rule.separator;
      joined += labels.get(rule.source_labels[i]);
    }
    const bool matched = re2::RE2::FullMatch(joined, *rule.compiled);
    if (matched != (rule.action == WriteRelabelRule::Action::kKeep)) return false;
  }
  return true;
}

}  // namespace gpuscope::remote_write
