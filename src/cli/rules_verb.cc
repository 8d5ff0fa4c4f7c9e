#include "cli/rules_verb.h"

#include <vector>

#include <fmt/format.h>

#include "rules/rule_file.h"
#include "rules/rule_unit_tests.h"

namespace gpuscope::cli {
namespace {

constexpr std::string_view kRulesUsage =
    "Usage: gpuscope rules <check|test> FILE...\n"
    "\n"
    "Prometheus rule files, without Prometheus:\n"
    "  check  syntax, expressions, templates and names of each rule file, like 'promtool check rules'\n"
    "  test   unit tests in 'promtool test rules' format (rule_files, input_series, alert_rule_test,\n"
    "         promql_expr_test): the same verdict and a similar diff on failure\n"
    "\n"
    "'gpuscope rules check --help' and 'gpuscope rules test --help' show their options.\n"
    "\n"
    "Example:\n"
    "  gpuscope rules check rules/gpu.rules.yml\n"
    "  gpuscope rules test rules/gpu.rules.test.yml\n";

int run_check(std::span<const std::string> args, const Invocation& inv) {
  auto app = make_verb_app(
      "rules check",
      "Checks Prometheus rule files as 'promtool check rules' does: YAML structure, each expression parses and\n"
      "is a vector or scalar, label and annotation names, templates (an unknown template function is an\n"
      "error naming the rule), repeated group names. Recording rules that record the same series are\n"
      "reported (--lint). Exit 1 when a file has an error.",
      "  gpuscope rules check rules/gpu.rules.yml /etc/prometheus/rules/*.yml");
  std::vector<std::string> files;
  std::string lint = "duplicate-rules";
  bool lint_fatal = false;
  app->add_option("files", files, "rule files")->type_name("FILE")->required();
  app->add_option("--lint", lint, "duplicate-rules (default) or none")->type_name("CHECKS");
  app->add_flag("--lint-fatal", lint_fatal, "a lint finding fails the check (exit 1)");
  if (auto parsed = parse_arguments(*app, args); !parsed) return finish(parsed.error(), inv);
  if (!is_one_of(lint, {"duplicate-rules", "none"})) {
    return usage_error(inv.err, fmt::format("unknown value '{}' for --lint (duplicate-rules or none)", lint));
  }

  bool errors = false, lint_findings = false;
  for (const std::string& file : files) {
    inv.out << "Checking " << file << "\n";
    inv.out.flush();
    auto loaded = rules::load_rule_file(file);
    if (!loaded) {
      inv.err << "  FAILED:\n";
      for (const std::string& e : loaded.error()) inv.err << e << "\n";
      inv.err.flush();
      errors = true;
    } else if (auto dups = rules::find_duplicate_recordings(*loaded); lint != "none" && !dups.empty()) {
      std::string message = fmt::format("lint error {} duplicate rule(s) found.\n", dups.size());
      for (const rules::DuplicateRecording& d : dups) {
        message += fmt::format("Metric: {}\nLabel(s):\n", d.name);
        for (const store::Label& l : d.labels) message += fmt::format("\t{}: {}\n", l.name, l.value);
      }
      message += "Might cause inconsistency while recording expressions";
      inv.err << "  FAILED:\n" << message << "\n";
      inv.err.flush();
      lint_findings = true;
    } else {
      inv.out << "  SUCCESS: " << loaded->rule_count() << " rules found\n";
    }
    inv.out << "\n";
  }
  inv.out.flush();
  return errors || (lint_findings && lint_fatal) ? kExitRuntime : kExitOk;
}

int run_test(std::span<const std::string> args, const Invocation& inv) {
  auto app = make_verb_app(
      "rules test",
      "Runs rule unit tests written for 'promtool test rules': the rule files they name are evaluated over the\n"
      "input series at every evaluation_interval, firing alerts are compared at each alert_rule_test's\n"
      "eval_time (labels and expanded annotations), and each promql_expr_test's result with its exp_samples.\n"
      "Exit 1 when a test fails; the failure shows what was expected and what came out.",
      "  gpuscope rules test rules/gpu.rules.test.yml");
  std::vector<std::string> files;
  app->add_option("files", files, "test files")->type_name("FILE")->required();
  if (auto parsed = parse_arguments(*app, args); !parsed) return finish(parsed.error(), inv);
  return rules::run_rule_unit_tests(files, inv.out, inv.err) == 0 ? kExitOk : kExitRuntime;
}

}  // namespace

int run_rules(std::span<const std::string> args, const Invocation& inv) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    if (args.empty()) return usage_error(inv.err, "rules needs a command: check or test (see 'gpuscope rules --help')");
    inv.out << kRulesUsage;
    return kExitOk;
  }
  if (args[0] == "check") return run_check(args.subspan(1), inv);
  if (args[0] == "test") return run_test(args.subspan(1), inv);
  return usage_error(inv.err, fmt::format("unknown rules command '{}' (check or test; see 'gpuscope rules --help')", args[0]));
}

}  // namespace gpuscope::cli
