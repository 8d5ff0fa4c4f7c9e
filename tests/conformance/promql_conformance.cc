// promql_conformance: runs Prometheus's own PromQL test scripts (../shared/conformance/promql/*.test)
// against gpuscope's engine and reports passed / failed / skipped per file and for IN_SUBSET.txt.
// Exit status 1 when a case listed in IN_SUBSET.txt does not pass and is not in the allow-list.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "promql/engine.h"
#include "promql_script.h"
#include "script_runner.h"

namespace fs = std::filesystem;
using namespace gpuscope;
using conformance::CaseStatus;

namespace {

struct Tally {
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  void add(CaseStatus s) {
    if (s == CaseStatus::kPassed) ++passed;
    if (s == CaseStatus::kFailed) ++failed;
    if (s == CaseStatus::kSkipped) ++skipped;
  }
  std::string text() const { return fmt::format("{} passed, {} failed, {} skipped", passed, failed, skipped); }
};

std::expected<std::string, std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(fmt::format("{}: cannot open", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `file:line` entries, one a line; `#` starts a comment. A malformed entry is reported and ignored.
std::expected<std::set<std::string>, std::string> read_case_list(const fs::path& path) {
  auto text = read_file(path);
  if (!text) return std::unexpected(text.error());
  std::set<std::string> cases;
  std::istringstream lines(*text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = line.substr(0, line.find('#'));
    auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    auto last = line.find_last_not_of(" \t\r");
    std::string entry = line.substr(first, last - first + 1);
    auto colon = entry.rfind(':');
    if (colon == std::string::npos || colon + 1 == entry.size() ||
        entry.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      fmt::print(stderr, "{}:{}: malformed entry \"{}\", expected file:line\n", path.string(), number, entry);
      continue;
    }
    cases.insert(entry);
  }
  return cases;
}

std::string one_line(std::string_view text, std::size_t limit = 300) {
  std::string out(text.substr(0, limit));
  std::ranges::replace(out, '\n', ' ');
  if (text.size() > limit) out += "...";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs Prometheus's PromQL test scripts against gpuscope's engine.\n"
               "Example: promql_conformance --file aggregators.test --line 16 --verbose"};
  std::string dir = GPUSCOPE_SOURCE_DIR "/../shared/conformance/promql";
  std::string allowlist_path = GPUSCOPE_SOURCE_DIR "/tests/conformance/promql_allowlist.txt";
  std::string only_file;
  int only_line = 0;
  bool verbose = false;
  bool show_skips = false;
  bool no_range_mode = false;
  bool no_at_variants = false;
  app.add_option("--dir", dir, "folder holding the *.test scripts and IN_SUBSET.txt");
  app.add_option("--allowlist", allowlist_path, "file:line cases allowed to fail or skip within IN_SUBSET");
  app.add_option("--file", only_file, "run only this script (e.g. aggregators.test)");
  app.add_option("--line", only_line, "run only the eval at this line (with --file)");
  app.add_flag("--verbose", verbose, "print passing cases too");
  app.add_flag("--show-skips", show_skips, "print every skipped case with its reason");
  app.add_flag("--no-range-mode", no_range_mode, "skip re-running instant queries as range queries");
  app.add_flag("--no-at-variants", no_at_variants, "skip re-running instant queries with selectors pinned by @");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "promql_conformance: {} (see --help)\n", e.what());
    return 2;
  }
  if (only_line != 0 && only_file.empty()) {
    fmt::print(stderr, "promql_conformance: --line needs --file\n");
    return 2;
  }

  auto in_subset = read_case_list(fs::path(dir) / "IN_SUBSET.txt");
  if (!in_subset) {
    fmt::print(stderr, "promql_conformance: {}\n", in_subset.error());
    return 2;
  }
  auto allowed = read_case_list(allowlist_path);
  if (!allowed) {
    fmt::print(stderr, "promql_conformance: {}\n", allowed.error());
    return 2;
  }

  std::vector<fs::path> scripts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".test" && (only_file.empty() || entry.path().filename() == only_file)) {
      scripts.push_back(entry.path());
    }
  }
  if (ec || scripts.empty()) {
    fmt::print(stderr, "promql_conformance: no {} in {}\n", only_file.empty() ? "*.test" : only_file, dir);
    return 2;
  }
  std::ranges::sort(scripts);

  promql::Engine engine;  // Prometheus's defaults: 5m lookback, 1m subquery step
  conformance::ScriptRunOptions options;
  options.range_mode_check = !no_range_mode;
  options.at_modifier_check = !no_at_variants;
  if (only_line != 0) options.only_line = only_line;

  Tally total;
  Tally subset;
  std::set<std::string> subset_seen;
  std::vector<std::string> subset_not_passing;
  std::vector<std::string> allowed_but_passing;
  std::vector<std::string> file_lines;
  std::map<std::string, int> skip_reasons;
  for (const auto& path : scripts) {
    std::string name = path.filename().string();
    auto text = read_file(path);
    if (!text) {
      fmt::print("{}\n", text.error());
      continue;
    }
    auto report = conformance::run_script(conformance::parse_script(*text), engine, options);
    for (const auto& notice : report.notices) fmt::print("NOTE {}:{}: {}\n", name, notice.line, one_line(notice.message));
    Tally file;
    for (const auto& c : report.cases) {
      std::string id = fmt::format("{}:{}", name, c.line);
      bool listed = in_subset->contains(id);
      file.add(c.status);
      total.add(c.status);
      if (listed) {
        subset.add(c.status);
        subset_seen.insert(id);
        if (c.status != CaseStatus::kPassed && !allowed->contains(id)) subset_not_passing.push_back(id);
        if (c.status == CaseStatus::kPassed && allowed->contains(id)) allowed_but_passing.push_back(id);
      }
      const char* mark = listed ? " [IN_SUBSET]" : "";
      switch (c.status) {
        case CaseStatus::kPassed:
          if (verbose) fmt::print("PASS {}: {}\n", id, one_line(c.expr));
          break;
        case CaseStatus::kFailed:
          fmt::print("FAIL {}{}: {}\n     {}\n", id, mark, one_line(c.expr), one_line(c.detail, 600));
          break;
        case CaseStatus::kSkipped:
          ++skip_reasons[one_line(c.detail, 60)];
          if (show_skips || listed || verbose) fmt::print("SKIP {}{}: {} ({})\n", id, mark, one_line(c.detail), one_line(c.expr, 80));
          break;
      }
    }
    file_lines.push_back(fmt::format("{}: {}", name, file.text()));
  }

  // Listed cases that no script produced (a stale list, or an eval the harness did not see) count
  // as skipped: the list promises them.
  if (only_file.empty()) {
    for (const auto& id : *in_subset) {
      if (subset_seen.contains(id)) continue;
      fmt::print("SKIP {} [IN_SUBSET]: no eval command at this line\n", id);
      subset.add(CaseStatus::kSkipped);
      if (!allowed->contains(id)) subset_not_passing.push_back(id);
    }
  }

  if (!skip_reasons.empty() && !show_skips) {
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [reason, n] : skip_reasons) by_count.emplace_back(n, reason);
    std::ranges::sort(by_count, std::greater<>());
    fmt::print("most common skip reasons (--show-skips lists all):\n");
    for (std::size_t i = 0; i < by_count.size() && i < 8; ++i) fmt::print("  {:5} {}\n", by_count[i].first, by_count[i].second);
  }
  for (const auto& id : allowed_but_passing) fmt::print("NOTE {} passes now: remove it from the allow-list\n", id);
  for (const auto& line : file_lines) fmt::print("{}\n", line);
  fmt::print("total: {}\n", total.text());
  int subset_cases = subset.passed + subset.failed + subset.skipped;
  double percent = subset_cases == 0 ? 0.0 : 100.0 * subset.passed / subset_cases;
  fmt::print("IN_SUBSET: {} ({:.1f}% passing)\n", subset.text(), percent);
  if (!subset_not_passing.empty()) {
    fmt::print("IN_SUBSET cases not passing and not allow-listed ({}): {}\n", subset_not_passing.size(),
               fmt::join(subset_not_passing, " "));
    return 1;
  }
  return 0;
}
