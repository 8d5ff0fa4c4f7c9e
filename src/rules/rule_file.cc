#include "rules/rule_file.h"

#include <glob.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/file_text.h"
#include "model/yaml_error_text.h"
#include "promql/parser.h"

namespace gpuscope::rules {
namespace {

namespace fs = std::filesystem;

// Where a node starts, as promtool prints it: "LINE:COL" (1-based).
std::string position(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return "";
  return fmt::format("{}:{}", mark.line + 1, mark.column + 1);
}

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

// Rule files must also load in Prometheus 2.x fleets, so names follow the classic (pre-UTF-8) rules.
bool is_classic_label_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool is_classic_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Any non-empty UTF-8 is a valid label name in Prometheus 3: the same test says "valid UTF-8".
bool is_valid_utf8(std::string_view s) { return s.empty() || store::is_valid_label_name(s); }

class FileReader {
 public:
  explicit FileReader(std::string_view path) : path_(path) {}

  std::vector<std::string> errors;

  void error_at(const YAML::Node& node, std::string_view message) {
    const std::string pos = position(node);
    errors.push_back(pos.empty() ? fmt::format("{}: {}", path_, message) : fmt::format("{}: {}: {}", path_, pos, message));
  }

  std::optional<std::string> scalar(const YAML::Node& node, std::string_view what) {
    if (!node.IsScalar()) {
      error_at(node, fmt::format("{} must be a string", what));
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<std::int64_t> duration(const YAML::Node& node, std::string_view what) {
    auto text = scalar(node, what);
    if (!text) return std::nullopt;
    auto ms = promql::parse_duration(*text);
    if (!ms) {
      error_at(node, fmt::format("{}: not a valid duration string: \"{}\"", what, *text));
      return std::nullopt;
    }
    return *ms;
  }

  // Keys of a mapping checked against what the format allows there (Prometheus reads strictly too).
  bool known_keys(const YAML::Node& map, std::string_view where, std::initializer_list<std::string_view> known) {
    bool ok = true;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        error_at(it->first, fmt::format("field {} not found in {}", key, where));
        ok = false;
      }
    }
    return ok;
  }

  RuleFile read(const YAML::Node& root) {
    RuleFile file;
    file.path = path_;
    if (!root || root.IsNull()) return file;
    if (!root.IsMap()) {
      error_at(root, "a rule file is a mapping with a 'groups' list");
      return file;
    }
    known_keys(root, "the rule file (only 'groups')", {"groups"});
    const YAML::Node groups = root["groups"];
    if (!groups || groups.IsNull()) return file;
    if (!groups.IsSequence()) {
      error_at(groups, "'groups' must be a list");
      return file;
    }
    std::set<std::string> names;
    for (const YAML::Node& g : groups) {
      if (!g.IsMap()) {
        error_at(g, "a group must be a mapping (name, interval, rules)");
        continue;
      }
      RuleGroupDefinition group = read_group(g);
      if (group.name.empty()) {
        error_at(g, "Groupname must not be empty");
      } else if (!names.insert(group.name).second) {
        error_at(g, fmt::format("groupname: \"{}\" is repeated in the same file", group.name));
      }
      file.groups.push_back(std::move(group));
    }
    return file;
  }

 private:
  RuleGroupDefinition read_group(const YAML::Node& g) {
    RuleGroupDefinition group;
    group.file = path_;
    group.line = line_of(g);
    known_keys(g, "the rule group", {"name", "interval", "query_offset", "limit", "rules", "labels"});
    if (g["name"]) {
      if (auto name = scalar(g["name"], "name")) group.name = *name;
    }
    if (g["interval"]) {
      if (auto ms = duration(g["interval"], "interval")) {
        if (*ms <= 0) error_at(g["interval"], "interval must be positive");
        group.interval_ms = *ms;
      }
    }
    if (g["query_offset"]) {
      if (auto ms = duration(g["query_offset"], "query_offset")) group.query_offset_ms = *ms;
    }
    if (const YAML::Node limit = g["limit"]) {
      int value = -1;
      if (!limit.IsScalar() || !YAML::convert<int>::decode(limit, value) || value < 0) {
        error_at(limit, "limit must be a whole number, 0 or more");
      } else {
        group.limit = value;
      }
    }
    if (const YAML::Node labels = g["labels"]) {
      std::vector<store::Label> items;
      if (!labels.IsMap()) {
        error_at(labels, "labels must be a mapping");
      } else {
        for (auto it = labels.begin(); it != labels.end(); ++it) {
          const std::string name = it->first.Scalar();
          if (!is_classic_label_name(name) || name == store::kMetricNameLabel) {
            error_at(it->first, fmt::format("invalid label name: {}", name));
          }
          if (auto value = scalar(it->second, "a label value")) items.push_back({name, *value});
        }
      }
      group.labels = store::Labels(std::move(items));
    }
    const YAML::Node rules = g["rules"];
    if (rules && !rules.IsNull()) {
      if (!rules.IsSequence()) {
        error_at(rules, "'rules' must be a list");
      } else {
        int index = 0;
        for (const YAML::Node& r : rules) {
          ++index;
          if (auto rule = read_rule(r, group.name, index)) group.rules.push_back(std::move(*rule));
        }
      }
    }
    return group;
  }

  std::optional<RuleDefinition> read_rule(const YAML::Node& r, const std::string& group, int index) {
    if (!r.IsMap()) {
      error_at(r, fmt::format("group \"{}\", rule {}: a rule must be a mapping (alert or record, expr, ...)", group, index));
      return std::nullopt;
    }
    RuleDefinition rule;
    rule.line = line_of(r);
    const YAML::Node alert = r["alert"];
    const YAML::Node record = r["record"];
    const YAML::Node name_node = alert ? alert : record ? record : r;
    rule.name = name_node.IsScalar() && (alert || record) ? name_node.Scalar() : "";
    const std::size_t errors_before = errors.size();
    // promtool's wording: the position of the offending field, then the rule it belongs to.
    auto fail = [&](const YAML::Node& at, std::string_view message) {
      error_at(at, fmt::format("group \"{}\", rule {}, \"{}\": {}", group, index, rule.name, message));
    };
    for (auto it = r.begin(); it != r.end(); ++it) {
      static constexpr std::string_view kKnown[] = {"alert", "record", "expr", "for", "keep_firing_for", "labels",
                                                    "annotations"};
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
        fail(it->first, fmt::format("field {} not found in the rule", key));
      }
    }
    if (alert && record) {
      fail(record, "only one of 'record' and 'alert' must be set");
      return std::nullopt;
    }
    if (!alert && !record) {
      fail(r, "one of 'record' or 'alert' must be set");
      return std::nullopt;
    }
    rule.kind = alert ? RuleDefinition::Kind::kAlert : RuleDefinition::Kind::kRecord;
    const bool recording = rule.kind == RuleDefinition::Kind::kRecord;
    if (!name_node.IsScalar() || rule.name.empty()) {
      fail(name_node, recording ? "field 'record' must be set to the recorded metric's name"
                                : "field 'alert' must be set to the alert's name");
    } else if (recording && !is_classic_metric_name(rule.name)) {
      fail(name_node, fmt::format("invalid recording rule name: {}", rule.name));
    } else if (!recording && !is_valid_utf8(rule.name)) {
      fail(name_node, fmt::format("invalid alert name: {}", rule.name));
    }

    const YAML::Node expr = r["expr"];
    if (!expr || !expr.IsScalar() || expr.Scalar().empty()) {
      fail(expr ? expr : r, "field 'expr' must be set in rule");
    } else {
      rule.expr_text = expr.Scalar();
      auto parsed = promql::parse_expr(rule.expr_text);
      if (!parsed) {
        fail(expr, fmt::format("could not parse expression: {}", parsed.error().to_string(rule.expr_text)));
      } else {
        const promql::ValueType type = (*parsed)->type();
        if (type != promql::ValueType::kVector && type != promql::ValueType::kScalar) {
          fail(expr, fmt::format("invalid expression type \"{}\" for a rule: must be an instant vector or a scalar",
                                 promql::value_type_name(type)));
        }
        rule.expr = std::shared_ptr<const promql::Expr>(std::move(*parsed));
      }
    }
    if (const YAML::Node f = r["for"]) {
      if (recording) {
        fail(f, "invalid field 'for' in recording rule");
      } else if (auto ms = duration(f, "for")) {
        rule.for_ms = *ms;
      }
    }
    if (const YAML::Node k = r["keep_firing_for"]) {
      if (recording) {
        fail(k, "invalid field 'keep_firing_for' in recording rule");
      } else if (auto ms = duration(k, "keep_firing_for")) {
        rule.keep_firing_for_ms = *ms;
      }
    }
    const std::string template_name = "__alert_" + rule.name;
    auto read_fields = [&](const YAML::Node& map, bool is_label, std::vector<TemplatedField>& out) {
      if (!map.IsMap()) {
        fail(map, is_label ? "labels must be a mapping" : "annotations must be a mapping");
        return;
      }
      for (auto it = map.begin(); it != map.end(); ++it) {
        const std::string name = it->first.IsScalar() ? it->first.Scalar() : std::string();
        if (is_label && (!is_classic_label_name(name) || name == store::kMetricNameLabel)) {
          fail(it->first, fmt::format("invalid label name: {}", name));
          continue;
        }
        if (!is_label && !is_classic_label_name(name)) {
          fail(it->first, fmt::format("invalid annotation name: {}", name));
          continue;
        }
        if (!it->second.IsScalar()) {
          fail(it->second, fmt::format("the value of {} must be a string", name));
          continue;
        }
        const std::string text = it->second.Scalar();
        if (!is_valid_utf8(text)) {
          fail(it->second, fmt::format("invalid {} value: not UTF-8", is_label ? "label" : "annotation"));
          continue;
        }
        // Recording rules' label values are used as written; alerts' are templates (Prometheus).
        if (recording) {
          out.push_back(TemplatedField{name, text, nullptr});
          continue;
        }
        auto parsed = Template::parse(template_name, text);
        if (!parsed) {
          fail(it->second, fmt::format("msg=template: {}", parsed.error()));
          continue;
        }
        out.push_back(TemplatedField{name, text, std::make_shared<const Template>(std::move(*parsed))});
      }
      std::sort(out.begin(), out.end(), [](const TemplatedField& a, const TemplatedField& b) { return a.name < b.name; });
    };
    if (const YAML::Node labels = r["labels"]) read_fields(labels, true, rule.labels);
    if (const YAML::Node annotations = r["annotations"]) {
      if (recording) {
        fail(annotations, "invalid field 'annotations' in recording rule");
      } else {
        read_fields(annotations, false, rule.annotations);
      }
    }
    if (errors.size() != errors_before) return std::nullopt;
    return rule;
  }

  std::string path_;
};

}  // namespace

std::size_t RuleFile::rule_count() const {
  std::size_t n = 0;
  for (const RuleGroupDefinition& g : groups) n += g.rules.size();
  return n;
}

std::expected<RuleFile, std::vector<std::string>> parse_rule_file(std::string_view text, std::string_view path) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    const std::string where = e.mark.line >= 0 ? fmt::format("{}:{}: ", e.mark.line + 1, e.mark.column + 1) : "";
    return std::unexpected(std::vector<std::string>{fmt::format("{}: {}{}", path, where, model::yaml_error_text(e))});
  }
  FileReader reader(path);
  RuleFile file;
  try {
    file = reader.read(root);
  } catch (const YAML::Exception& e) {
    reader.errors.push_back(fmt::format("{}: {}", path, model::yaml_error_text(e)));
  }
  if (!reader.errors.empty()) return std::unexpected(std::move(reader.errors));
  return file;
}

std::expected<RuleFile, std::vector<std::string>> load_rule_file(const std::string& path) {
  auto text = model::read_file_text(path);
  if (!text) return std::unexpected(std::vector<std::string>{fmt::format("{}: cannot be read: {}", path, text.error())});
  return parse_rule_file(*text, path);
}

std::vector<DuplicateRecording> find_duplicate_recordings(const RuleFile& file) {
  std::map<std::pair<std::string, store::Labels>, int> seen;
  std::vector<DuplicateRecording> out;
  for (const RuleGroupDefinition& g : file.groups) {
    for (const RuleDefinition& r : g.rules) {
      if (r.kind != RuleDefinition::Kind::kRecord) continue;
      std::vector<store::Label> items;
      for (const TemplatedField& l : r.labels) items.push_back({l.name, l.text});
      store::Labels labels(std::move(items));
      if (++seen[{r.name, labels}] == 2) out.push_back({r.name, std::move(labels)});
    }
  }
  return out;
}

namespace {

enum class DirectoryPart { kRules, kTests };

std::expected<std::vector<std::string>, std::string> yaml_files_in(const std::string& dir, DirectoryPart part) {
  std::error_code ec;
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool yaml = name.ends_with(".yml") || name.ends_with(".yaml");
    const bool test = name.ends_with(".test.yml") || name.ends_with(".test.yaml");
    std::error_code type_ec;
    if (yaml && test == (part == DirectoryPart::kTests) && entry.is_regular_file(type_ec)) {
      out.push_back(entry.path().string());
    }
  }
  if (ec) return std::unexpected(fmt::format("{}: cannot list the directory: {}", dir, ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::expected<std::vector<std::string>, std::string> rule_files_in(const std::string& dir) {
  return yaml_files_in(dir, DirectoryPart::kRules);
}

std::expected<std::vector<std::string>, std::string> rule_test_files_in(const std::string& dir) {
  return yaml_files_in(dir, DirectoryPart::kTests);
}

std::expected<std::vector<std::string>, std::string> expand_rule_paths(const std::vector<std::string>& specs) {
  std::set<std::string> paths;
  for (const std::string& spec : specs) {
    std::error_code ec;
    if (spec.find_first_of("*?[") != std::string::npos) {
      glob_t matches{};
      const int rc = ::glob(spec.c_str(), 0, nullptr, &matches);
      if (rc == 0) {
        for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
          if (fs::is_regular_file(matches.gl_pathv[i], ec)) paths.insert(matches.gl_pathv[i]);
        }
      }
      globfree(&matches);
      if (rc == GLOB_NOMATCH) return std::unexpected(fmt::format("{}: no rule file matches this pattern", spec));
      if (rc != 0) return std::unexpected(fmt::format("{}: the pattern could not be expanded", spec));
      continue;
    }
    if (fs::is_directory(spec, ec)) {
      auto files = rule_files_in(spec);
      if (!files) return std::unexpected(files.error());
      paths.insert(files->begin(), files->end());
      continue;
    }
    if (!fs::exists(spec, ec)) return std::unexpected(fmt::format("{}: no such rule file or directory", spec));
    paths.insert(spec);
  }
  return std::vector<std::string>(paths.begin(), paths.end());
}

}  // namespace gpuscope::rules
