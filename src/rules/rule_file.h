// Prometheus rule files: groups of recording and alerting rules in Prometheus's own YAML format, read
// and checked as `promtool check rules` does, so one file works in the agent and in a fleet's Prometheus.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "promql/ast.h"
#include "rules/template.h"
#include "store/labels.h"

namespace gpuscope::rules {

// A label or annotation whose value is a template ({{ $labels.gpu }}), parsed at load.
struct TemplatedField {
  std::string name;
  std::string text;  // as written
  std::shared_ptr<const Template> value;  // null: a literal (group labels, recording rules' labels)
};

struct RuleDefinition {
  enum class Kind { kAlert, kRecord };
  Kind kind = Kind::kAlert;
  std::string name;  // the alert name or the recorded metric's name
  std::string expr_text;
  std::shared_ptr<const promql::Expr> expr;
  std::int64_t for_ms = 0;
  std::int64_t keep_firing_for_ms = 0;
  std::vector<TemplatedField> labels;       // sorted by name; recording rules use the text as is
  std::vector<TemplatedField> annotations;  // sorted by name; alerts only
  int line = 0;                             // the rule's first line in the file, 1-based
};

struct RuleGroupDefinition {
  std::string name;
  std::string file;
  std::int64_t interval_ms = 0;  // 0: the evaluation interval the caller gives
  std::int64_t query_offset_ms = 0;
  int limit = 0;  // 0: no limit on alerts / recorded series per evaluation
  store::Labels labels;  // added to every rule's output (Prometheus 3's group labels)
  std::vector<RuleDefinition> rules;
  int line = 0;
};

struct RuleFile {
  std::string path;
  std::vector<RuleGroupDefinition> groups;
  std::size_t rule_count() const;
};

// A recording rule recording the same name and labels as an earlier one: allowed, but the two
// overwrite each other's samples (promtool's duplicate-rules lint).
struct DuplicateRecording {
  std::string name;
  store::Labels labels;
};

// Every problem in the file, each one line: "FILE: LINE:COL: group \"g\", rule N, \"name\": what"
// (promtool's wording), or "FILE: LINE:COL: what" outside rules. An empty file has no groups.
std::expected<RuleFile, std::vector<std::string>> parse_rule_file(std::string_view text, std::string_view path);
std::expected<RuleFile, std::vector<std::string>> load_rule_file(const std::string& path);

std::vector<DuplicateRecording> find_duplicate_recordings(const RuleFile& file);

// A directory's rule files: its *.yml and *.yaml files (not its subdirectories'), sorted, except rule
// unit tests (*.test.yml, *.test.yaml), which by convention sit beside the rules they test
// (rules/gpu.rules.test.yml) and are no rule file. Empty when there are none; an error only when the
// directory cannot be listed.
std::expected<std::vector<std::string>, std::string> rule_files_in(const std::string& dir);
// A directory's rule unit-test files: its *.test.yml and *.test.yaml files, sorted.
std::expected<std::vector<std::string>, std::string> rule_test_files_in(const std::string& dir);

// `--rules` takes a file, a directory (rule_files_in) or a glob; the result is sorted and without
// duplicates. A file or directory that does not exist, or a glob matching nothing, is an error; a
// directory without rule files is not (the caller decides what an empty result means).
std::expected<std::vector<std::string>, std::string> expand_rule_paths(const std::vector<std::string>& specs);

}  // namespace gpuscope::rules
