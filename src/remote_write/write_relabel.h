// Write relabelling: which series a receiver gets, as Prometheus's write_relabel_configs decide it with
// the `keep` and `drop` actions (the source labels' values joined by the separator, matched by a fully
// anchored RE2 regex). Rules apply in order; a series a rule drops goes nowhere further.
#pragma once

#include <expected>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "store/labels.h"

namespace re2 {
class RE2;
}

namespace gpuscope::remote_write {

struct WriteRelabelRule {
  enum class Action { kKeep, kDrop };
  Action action = Action::kKeep;
  std::vector<std::string> source_labels{"__name__"};
  std::string separator = ";";
  std::string regex = "(.*)";
  std::shared_ptr<const re2::RE2> compiled;  // made by make_relabel_rule
};

// Fails with RE2's message when the regex does not compile.
std::expected<WriteRelabelRule, std::string> make_relabel_rule(WriteRelabelRule::Action action,
                                                               std::vector<std::string> source_labels,
                                                               std::string separator, std::string regex);

// Whether the series goes out after every rule.
bool keeps_series(std::span<const WriteRelabelRule> rules, const store::Labels& labels);

}  // namespace gpuscope::remote_write
