#include "rules/rule_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpuscope::rules {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> errors_of(std::string_view text) {
  auto parsed = parse_rule_file(text, "r.yml");
  if (parsed) return {};
  return parsed.error();
}

TEST(RuleFile, ReadsGroupsRulesAndDurations) {
  auto file = parse_rule_file(R"(groups:
  - name: gpu
    interval: 30s
    limit: 10
    rules:
      - record: node:gpu_util:avg
        expr: avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)
        labels: {team: ml}
      - alert: GpuHot
        expr: DCGM_FI_DEV_GPU_TEMP > 85
        for: 5m
        keep_firing_for: 10m
        labels:
          severity: warning
        annotations:
          summary: "GPU {{ $labels.gpu }} is hot"
  - name: other
    rules: []
)",
                              "r.yml");
  ASSERT_TRUE(file) << file.error().front();
  ASSERT_EQ(file->groups.size(), 2u);
  const RuleGroupDefinition& g = file->groups[0];
  EXPECT_EQ(g.name, "gpu");
  EXPECT_EQ(g.interval_ms, 30'000);
  EXPECT_EQ(g.limit, 10);
  EXPECT_EQ(g.line, 2);
  ASSERT_EQ(g.rules.size(), 2u);
  EXPECT_EQ(g.rules[0].kind, RuleDefinition::Kind::kRecord);
  EXPECT_EQ(g.rules[0].name, "node:gpu_util:avg");
  ASSERT_EQ(g.rules[0].labels.size(), 1u);
  EXPECT_EQ(g.rules[0].labels[0].text, "ml");
  EXPECT_EQ(g.rules[0].labels[0].value, nullptr);  // recording rules' labels are literal
  const RuleDefinition& a = g.rules[1];
  EXPECT_EQ(a.kind, RuleDefinition::Kind::kAlert);
  EXPECT_EQ(a.for_ms, 300'000);
  EXPECT_EQ(a.keep_firing_for_ms, 600'000);
  EXPECT_EQ(a.line, 9);
  ASSERT_NE(a.expr, nullptr);
  ASSERT_EQ(a.annotations.size(), 1u);
  EXPECT_NE(a.annotations[0].value, nullptr);
  EXPECT_EQ(file->rule_count(), 2u);
  EXPECT_EQ(file->groups[1].interval_ms, 0);  // the caller's default
}

TEST(RuleFile, EmptyFileHasNoGroups) {
  auto file = parse_rule_file("", "r.yml");
  ASSERT_TRUE(file);
  EXPECT_TRUE(file->groups.empty());
}

TEST(RuleFile, BadExpressionNamesFilePositionGroupAndRule) {
  auto errors = errors_of(R"(groups:
  - name: gpu
    rules:
      - alert: Fine
        expr: up == 0
      - alert: Broken
        expr: sum(rate(x[5m])
)");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("r.yml: 7:15: group \"gpu\", rule 2, \"Broken\": could not parse expression: "));
  EXPECT_THAT(errors[0], HasSubstr("parse error"));
}

TEST(RuleFile, RangeVectorExpressionIsNotARule) {
  auto errors = errors_of("groups:\n- name: g\n  rules:\n  - record: x\n    expr: up[5m]\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("invalid expression type \"range vector\""));
}

TEST(RuleFile, PromtoolsFieldChecks) {
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - record: x\n    alert: y\n    expr: up\n").at(0),
              HasSubstr("only one of 'record' and 'alert' must be set"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - expr: up\n").at(0),
              HasSubstr("one of 'record' or 'alert' must be set"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - alert: A\n").at(0), HasSubstr("field 'expr' must be set in rule"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - record: x\n    expr: up\n    for: 5m\n").at(0),
              HasSubstr("invalid field 'for' in recording rule"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - record: x\n    expr: up\n    annotations: {a: b}\n").at(0),
              HasSubstr("invalid field 'annotations' in recording rule"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - record: 'bad name'\n    expr: up\n").at(0),
              HasSubstr("invalid recording rule name: bad name"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    labels: {'a-b': c}\n").at(0),
              HasSubstr("invalid label name: a-b"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    labels: {__name__: c}\n").at(0),
              HasSubstr("invalid label name: __name__"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    for: 5 minutes\n").at(0),
              HasSubstr("for: not a valid duration string: \"5 minutes\""));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    severity: page\n").at(0),
              HasSubstr("field severity not found"));
  EXPECT_THAT(errors_of("groups:\n- name: g\n  interval: 1m\n  evaluation_interval: 1m\n").at(0),
              HasSubstr("field evaluation_interval not found"));
  EXPECT_THAT(errors_of("rules: []\n").at(0), HasSubstr("field rules not found"));
}

TEST(RuleFile, RepeatedAndEmptyGroupNames) {
  auto errors = errors_of("groups:\n- name: g\n  rules: []\n- name: g\n  rules: []\n- rules: []\n");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_THAT(errors[0], HasSubstr("r.yml: 4:3: groupname: \"g\" is repeated in the same file"));
  EXPECT_THAT(errors[1], HasSubstr("Groupname must not be empty"));
}

TEST(RuleFile, EveryErrorIsReportedNotJustTheFirst) {
  auto errors = errors_of(R"(groups:
- name: g
  rules:
  - alert: A
    expr: up ==
  - record: x
    expr: up
    for: 1m
)");
  EXPECT_EQ(errors.size(), 2u);
}

TEST(RuleFile, UnknownTemplateFunctionIsAnErrorNamingTheRule) {
  auto errors = errors_of(R"(groups:
- name: g
  rules:
  - alert: GpuHot
    expr: up > 1
    annotations:
      summary: "{{ $value | humanise }}"
)");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("group \"g\", rule 1, \"GpuHot\""));
  EXPECT_THAT(errors[0], HasSubstr("humanise"));
}

TEST(RuleFile, YamlSyntaxErrorHasAPosition) {
  auto errors = errors_of("groups:\n  - name: g\n    rules: [\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], ::testing::StartsWith("r.yml: "));
}

TEST(RuleFile, DuplicateRecordings) {
  auto file = parse_rule_file(R"(groups:
- name: a
  rules:
  - record: job:x:sum
    expr: sum(x)
  - record: job:x:sum
    expr: sum(y)
  - record: job:x:sum
    expr: sum(z)
    labels: {k: v}
)",
                              "r.yml");
  ASSERT_TRUE(file);
  auto dups = find_duplicate_recordings(*file);
  ASSERT_EQ(dups.size(), 1u);
  EXPECT_EQ(dups[0].name, "job:x:sum");
  EXPECT_TRUE(dups[0].labels.empty());
}

TEST(RuleFile, ExpandsFilesDirectoriesAndGlobs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gpuscope_rule_paths_" + std::to_string(::getpid()));
  fs::create_directories(dir / "d");
  for (const char* name : {"a.yml", "b.yaml", "c.txt", "d/e.yml"}) std::ofstream(dir / name) << "groups: []\n";
  auto from_dir = expand_rule_paths({dir.string()});
  ASSERT_TRUE(from_dir) << from_dir.error();
  EXPECT_EQ(*from_dir, (std::vector<std::string>{(dir / "a.yml").string(), (dir / "b.yaml").string()}));
  auto from_glob = expand_rule_paths({(dir / "*.y*ml").string(), (dir / "a.yml").string()});
  ASSERT_TRUE(from_glob);
  EXPECT_EQ(from_glob->size(), 2u);
  EXPECT_FALSE(expand_rule_paths({(dir / "none*.yml").string()}));
  auto missing = expand_rule_paths({(dir / "missing.yml").string()});
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error(), HasSubstr("no such rule file"));
  fs::remove_all(dir);
}

// Rule unit tests sit beside their rules (rules/gpu.rules.test.yml): a directory's rule files leave
// them out, so `--rules rules/` loads the pack and not its tests; its test files are only those.
TEST(RuleFile, ADirectorysRuleFilesAreNotItsTests) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gpuscope_rule_tests_dir_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* name : {"a.yml", "a.test.yml", "b.test.yaml", "c.yaml"}) std::ofstream(dir / name) << "groups: []\n";
  auto rules = rule_files_in(dir.string());
  ASSERT_TRUE(rules) << rules.error();
  EXPECT_EQ(*rules, (std::vector<std::string>{(dir / "a.yml").string(), (dir / "c.yaml").string()}));
  auto tests = rule_test_files_in(dir.string());
  ASSERT_TRUE(tests) << tests.error();
  EXPECT_EQ(*tests, (std::vector<std::string>{(dir / "a.test.yml").string(), (dir / "b.test.yaml").string()}));
  auto expanded = expand_rule_paths({dir.string()});
  ASSERT_TRUE(expanded) << expanded.error();
  EXPECT_EQ(*expanded, *rules);
  // An empty directory is no error here: what zero rules means is the caller's to say.
  fs::create_directories(dir / "empty");
  auto empty = expand_rule_paths({(dir / "empty").string()});
  ASSERT_TRUE(empty) << empty.error();
  EXPECT_TRUE(empty->empty());
  fs::remove_all(dir);
}

// A directory opens as a file and then fails to read (EISDIR); it read as an empty file: "0 rules".
TEST(RuleFile, AFileThatCannotBeReadSaysWhy) {
  const auto dir = std::filesystem::temp_directory_path();
  auto as_file = load_rule_file(dir.string());
  ASSERT_FALSE(as_file);
  EXPECT_EQ(as_file.error().at(0), dir.string() + ": cannot be read: Is a directory");
  auto missing = load_rule_file("/nonexistent/r.yml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().at(0), "/nonexistent/r.yml: cannot be read: No such file or directory");
}

// yaml-cpp 0.7 reports a document nested past its parser's limit as "bad file".
TEST(RuleFile, DeeplyNestedYamlSaysSo) {
  auto deep = parse_rule_file(std::string(10000, '[') + "\n", "deep.yml");
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().at(0), "deep.yml: 2:1: nested too deeply (more levels of lists and maps than the YAML parser allows)");
  std::string block = "groups:\n";
  for (int i = 0; i < 3000; ++i) block += std::string(static_cast<std::size_t>(i) + 2, ' ') + "- \n";
  auto deep_block = parse_rule_file(block, "block.yml");
  ASSERT_FALSE(deep_block);
  EXPECT_THAT(deep_block.error().at(0), HasSubstr("nested too deeply"));
}

}  // namespace
}  // namespace gpuscope::rules
