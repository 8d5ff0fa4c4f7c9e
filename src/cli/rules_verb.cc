#include "cli/rules_verb.h"

#include <filesystem>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rules/rule_file.h"
#include "rules/rule_unit_tests.h"

namespace gpuscope::cli {
namespace {

constexpr std::string_view kRulesUsage =
    "Usage: gpuscope rules <check|test> FILE|DIR...\n"
    "\n"
    "Prometheus rule files, without Prometheus:\n"
    "  check  syntax, expressions, templates and names of each rule file, like 'promtool check rules'\n"
    "         (a directory: its *.yml and *.yaml files but not *.test.yml)\n"
    "  test   unit tests in 'promtool test rules' format (rule_files, input_series, alert_rule_test,\n"
    "         promql_expr_test): the same verdict and a similar diff on failure (a directory: its\n"
    "         *.test.yml and *.test.yaml files)\n"
    "\n"
    "'gpuscope rules check --help' and 'gpuscope rules test --help' show their options.\n"
    "\n"
    "Example:\n"
    "  gpuscope rules check rules/gpu.rules.yml\n"
    "  gpuscope rules test rules/gpu.rules.test.yml\n";

// A directory argument stands for the files of one kind in it (rule files or rule tests); a directory
// without any is an error, so that a CI job pointed at the wrong folder never passes on nothing.
struct Argument {
  std::string given;
  std::vector<std::string> files;  // a file argument: itself
  std::string error;               // a directory that cannot be listed or holds no such file
};

std::vector<Argument> expand_arguments(const std::vector<std::string>& args, bool tests) {
  std::vector<Argument> out;
  std::set<std::string> seen;  // a file named twice (itself and through its directory) is read once
  for (const std::string& a : args) {
    Argument arg{a, {}, {}};
    std::error_code ec;
    if (!std::filesystem::is_directory(a, ec)) {
      arg.files.push_back(a);
    } else if (auto files = tests ? rules::rule_test_files_in(a) : rules::rule_files_in(a); !files) {
      arg.error = files.error();
    } else if (files->empty()) {
      arg.error = tests ? fmt::format("{}: no rule test files (*.test.yml, *.test.yaml) in this directory", a)
                        : fmt::format("{}: no rule files (*.yml, *.yaml; *.test.yml are tests) in this directory", a);
    } else {
      arg.files = std::move(*files);
    }
    std::erase_if(arg.files, [&](const std::string& f) {
      std::error_code canonical_ec;
      const auto key = std::filesystem::weakly_canonical(f, canonical_ec).string();
      return !seen.insert(canonical_ec ? f : key).second;
    });
    out.push_back(std::move(arg));
  }
  return out;
}

int run_check(std::span<const std::string> args, const Invocation& inv) {
  auto app = make_verb_app(
      "rules check",
      "Checks Prometheus rule files as 'promtool check rules' does: YAML structure, each expression parses and\n"
      "is a vector or scalar, label and annotation names, templates (an unknown template function is an\n"
      "error naming the rule), repeated group names. Recording rules that record the same series are\n"
      "reported (--lint). A directory stands for its *.yml and *.yaml files (not *.test.yml: rule tests).\n"
      "Exit 1 when a file has an error, a directory has no rule file, or no rule at all was found.",
      "  gpuscope rules check rules/gpu.rules.yml /etc/prometheus/rules/");
  std::vector<std::string> args_files;
  std::string lint = "duplicate-rules";
  bool lint_fatal = false;
  app->add_option("files", args_files, "rule files or directories")->type_name("FILE|DIR")->required();
  app->add_option("--lint", lint, "duplicate-rules (default) or none")->type_name("CHECKS");
  app->add_flag("--lint-fatal", lint_fatal, "a lint finding fails the check (exit 1)");
  if (auto parsed = parse_arguments(*app, args); !parsed) return finish(parsed.error(), inv);
  if (!is_one_of(lint, {"duplicate-rules", "none"})) {
    return usage_error(inv.err, fmt::format("unknown value '{}' for --lint (duplicate-rules or none)", lint));
  }

  bool errors = false, lint_findings = false;
  std::size_t rules_found = 0;
  std::vector<std::string> files;
  for (Argument& arg : expand_arguments(args_files, false)) {
    if (!arg.error.empty()) {
      inv.out << "Checking " << arg.given << "\n";
      inv.out.flush();
      inv.err << "  FAILED:\n" << arg.error << "\n";
      inv.err.flush();
      inv.out << "\n";
      errors = true;
    }
    files.insert(files.end(), arg.files.begin(), arg.files.end());
  }
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
      rules_found += loaded->rule_count();
    } else {
      inv.out << "  SUCCESS: " << loaded->rule_count() << " rules found\n";
      rules_found += loaded->rule_count();
    }
    inv.out << "\n";
  }
  inv.out.flush();
  if (!errors && rules_found == 0) {
    // promtool passes here; a check that looked at nothing must not read as a pass.
    inv.err << fmt::format("gpuscope: no rules found in {}: nothing was checked\n", fmt::join(args_files, ", "));
    return kExitRuntime;
  }
  return errors || (lint_findings && lint_fatal) ? kExitRuntime : kExitOk;
}

int run_test(std::span<const std::string> args, const Invocation& inv) {
  auto app = make_verb_app(
      "rules test",
      "Runs rule unit tests written for 'promtool test rules': the rule files they name are evaluated over the\n"
      "input series at every evaluation_interval, firing alerts are compared at each alert_rule_test's\n"
      "eval_time (labels and expanded annotations), and each promql_expr_test's result with its exp_samples.\n"
      "A directory stands for its *.test.yml and *.test.yaml files. Exit 1 when a test fails (the failure shows\n"
      "what was expected and what came out), a file has no tests, or a directory has no test file.",
      "  gpuscope rules test rules/gpu.rules.test.yml");
  std::vector<std::string> args_files;
  app->add_option("files", args_files, "test files or directories")->type_name("FILE|DIR")->required();
  if (auto parsed = parse_arguments(*app, args); !parsed) return finish(parsed.error(), inv);
  bool failed = false;
  std::vector<std::string> files;
  for (Argument& arg : expand_arguments(args_files, true)) {
    if (!arg.error.empty()) {
      inv.out << "Unit Testing:  " << arg.given << "\n";
      inv.out.flush();
      inv.err << "  FAILED:\n" << arg.error << "\n\n";
      inv.err.flush();
      inv.out << "\n";
      failed = true;
    }
    files.insert(files.end(), arg.files.begin(), arg.files.end());
  }
  if (rules::run_rule_unit_tests(files, inv.out, inv.err) != 0) failed = true;
  return failed ? kExitRuntime : kExitOk;
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
