#include "rules/rule_unit_tests.h"

#include <glob.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/file_text.h"
#include "model/yaml_error_text.h"
#include "promql/engine.h"
#include "promql/lexer.h"
#include "promql/parser.h"
#include "promql/series_notation.h"
#include "rules/rule_file.h"
#include "rules/rule_group.h"
#include "store/series_set.h"

namespace gpuscope::rules {
namespace {

namespace fs = std::filesystem;

// A test file problem: reported as the file's one failure, as promtool does.
struct TestFileError {
  std::string message;
};

[[noreturn]] void fail(const YAML::Node& at, const std::string& message) {
  const YAML::Mark mark = at.Mark();
  if (mark.line >= 0) throw TestFileError{fmt::format("{}:{}: {}", mark.line + 1, mark.column + 1, message)};
  throw TestFileError{message};
}

void check_keys(const YAML::Node& map, std::string_view where, std::initializer_list<std::string_view> known) {
  if (!map.IsMap()) fail(map, fmt::format("{} must be a mapping", where));
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail(it->first, fmt::format("field {} not found in {}", key, where));
    }
  }
}

std::string scalar(const YAML::Node& node, std::string_view what) {
  if (!node.IsScalar()) fail(node, fmt::format("{} must be a string", what));
  return node.Scalar();
}

std::int64_t duration(const YAML::Node& node, std::string_view what) {
  const std::string text = scalar(node, what);
  auto ms = promql::parse_duration(text);
  if (!ms) fail(node, fmt::format("{}: not a valid duration string: \"{}\"", what, text));
  return *ms;
}

double number(const YAML::Node& node, std::string_view what) {
  const std::string text = scalar(node, what);
  // YAML's and Go's spellings of the special values.
  if (text == ".inf" || text == ".Inf" || text == "+Inf" || text == "Inf" || text == "+inf") return INFINITY;
  if (text == "-.inf" || text == "-.Inf" || text == "-Inf" || text == "-inf") return -INFINITY;
  if (text == ".nan" || text == ".NaN" || text == "NaN" || text == "nan") return NAN;
  double v = 0;
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  auto [end, ec] = std::from_chars(begin, text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) fail(node, fmt::format("{}: not a number: \"{}\"", what, text));
  return v;
}

std::map<std::string, std::string> string_map(const YAML::Node& node, std::string_view what) {
  std::map<std::string, std::string> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsMap()) fail(node, fmt::format("{} must be a mapping", what));
  for (auto it = node.begin(); it != node.end(); ++it) out[scalar(it->first, what)] = scalar(it->second, what);
  return out;
}

// Go's labels.Labels.String(): {a="b", c="d"}, __name__ included, values strconv.Quote'd.
std::string go_labels(const store::Labels& labels) {
  std::string out = "{";
  for (const store::Label& l : labels) {
    if (out.size() > 1) out += ", ";
    out += l.name + "=" + promql::go_quote(l.value);
  }
  return out + "}";
}

// strconv.FormatFloat(v, 'E', -1, 64): the shortest exact digits, "1E+00", "1.2345E+02".
std::string go_exponent(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string s(buf, end);
  for (char& c : s) c = c == 'e' ? 'E' : c;
  return s;
}

// Go's time.Duration.String() for whole milliseconds: "0s", "5m0s", "1h30m0s", "1.5s".
std::string go_time_duration(std::int64_t ms) {
  if (ms == 0) return "0s";
  std::string sign = ms < 0 ? "-" : "";
  ms = std::abs(ms);
  const std::int64_t h = ms / 3'600'000, m = ms / 60'000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
  std::string seconds = std::to_string(s);
  if (frac != 0) {
    std::string f = fmt::format("{:03}", frac);
    while (f.back() == '0') f.pop_back();
    seconds += "." + f;
  }
  if (h > 0) return fmt::format("{}{}h{}m{}s", sign, h, m, seconds);
  if (m > 0) return fmt::format("{}{}m{}s", sign, m, seconds);
  if (ms < 1000) return fmt::format("{}{}ms", sign, ms);
  return sign + seconds + "s";
}

std::string indent_lines(const std::string& text, const std::string& indent) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\n' && i + 1 <= text.size()) out += indent;
  }
  return out;
}

struct LabelsAndAnnotations {
  store::Labels labels;
  store::Labels annotations;
  auto operator<=>(const LabelsAndAnnotations&) const = default;
};

std::string alerts_text(const std::vector<LabelsAndAnnotations>& alerts) {
  if (alerts.empty()) return "[]";
  std::string out = "[";
  for (std::size_t i = 0; i < alerts.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    out += fmt::format("{}:", i);
    out += indent_lines("\nLabels:" + go_labels(alerts[i].labels) + "\nAnnotations:" + go_labels(alerts[i].annotations), "  ");
  }
  return out + "\n]";
}

struct Sample {
  store::Labels labels;
  double value;
};

std::string samples_text(const std::vector<Sample>& samples) {
  if (samples.empty()) return "nil";
  std::string out;
  for (const Sample& s : samples) {
    if (!out.empty()) out += ", ";
    out += go_labels(s.labels) + " " + go_exponent(s.value);
  }
  return out;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  // Evaluation order may differ from Prometheus's in the last bits of a sum; more is a real difference.
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

class SeriesSetAppender : public SampleAppender {
 public:
  explicit SeriesSetAppender(store::SeriesSet& set) : set_(set) {}
  std::expected<void, std::string> append(const store::Labels& labels, std::int64_t t_ms, double value) override {
    if (!set_.add(labels, t_ms, value)) return std::unexpected("out of order sample for " + labels.to_string());
    return {};
  }

 private:
  store::SeriesSet& set_;
};

struct AlertTest {
  std::int64_t eval_time_ms;
  std::string eval_time_text;
  std::string alertname;
  std::vector<LabelsAndAnnotations> expected;
};

struct ExprTest {
  std::string expr;
  std::int64_t eval_time_ms;
  std::string eval_time_text;
  std::vector<std::pair<std::string, double>> expected;  // labels text, value
};

class TestFile {
 public:
  TestFile(std::string path, std::ostream& err) : path_(std::move(path)), err_(err) {}

  // The failures (empty: passed).
  std::vector<std::string> run() {
    const auto text = model::read_file_text(path_);
    if (!text) return {fmt::format("{}: cannot be read: {}", path_, text.error())};
    YAML::Node root;
    try {
      root = YAML::Load(*text);
    } catch (const YAML::Exception& e) {
      return {fmt::format("{}: {}", path_, yaml_text(e))};
    }
    try {
      return run_file(root);
    } catch (const TestFileError& e) {
      return {fmt::format("{}: {}", path_, e.message)};
    } catch (const YAML::Exception& e) {
      return {fmt::format("{}: {}", path_, yaml_text(e))};
    }
  }

  // "LINE:COL: what", as a rule file's errors are given.
  static std::string yaml_text(const YAML::Exception& e) {
    if (e.mark.is_null()) return model::yaml_error_text(e);
    return fmt::format("{}:{}: {}", e.mark.line + 1, e.mark.column + 1, model::yaml_error_text(e));
  }

 private:
  std::vector<std::string> run_file(const YAML::Node& root) {
    // promtool passes a file without tests; a test run that tested nothing must not read as a pass.
    const auto no_tests = [&] { return std::vector<std::string>{fmt::format("{}: no tests in it ('tests' is empty)", path_)}; };
    if (!root || root.IsNull()) return no_tests();
    check_keys(root, "the test file", {"rule_files", "evaluation_interval", "group_eval_order", "tests"});
    std::vector<std::string> rule_files;
    const fs::path base = fs::path(path_).parent_path();
    if (const YAML::Node files = root["rule_files"]) {
      if (!files.IsSequence() && !files.IsNull()) fail(files, "rule_files must be a list");
      for (const YAML::Node& f : files) {
        std::string pattern = scalar(f, "a rule file");
        if (!pattern.empty() && !fs::path(pattern).is_absolute()) pattern = (base / pattern).string();
        glob_t matches{};
        if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
          for (std::size_t i = 0; i < matches.gl_pathc; ++i) rule_files.emplace_back(matches.gl_pathv[i]);
        } else {
          err_ << "  WARNING: no file match pattern " << pattern << "\n";
        }
        globfree(&matches);
      }
    }
    std::int64_t evaluation_interval_ms = 60'000;
    if (const YAML::Node ei = root["evaluation_interval"]) evaluation_interval_ms = duration(ei, "evaluation_interval");
    if (evaluation_interval_ms <= 0) fail(root["evaluation_interval"], "evaluation_interval must be positive");
    std::map<std::string, int> group_order;
    if (const YAML::Node order = root["group_eval_order"]) {
      int i = 0;
      for (const YAML::Node& g : order) {
        const std::string name = scalar(g, "a group name");
        if (!group_order.emplace(name, i++).second) {
          throw TestFileError{fmt::format("group name repeated in evaluation order: {}", name)};
        }
      }
    }

    std::vector<RuleGroupDefinition> groups;
    std::vector<std::string> load_errors;
    for (const std::string& file : rule_files) {
      auto loaded = load_rule_file(file);
      if (!loaded) {
        load_errors.insert(load_errors.end(), loaded.error().begin(), loaded.error().end());
        continue;
      }
      for (RuleGroupDefinition& g : loaded->groups) groups.push_back(std::move(g));
    }
    if (!load_errors.empty()) return load_errors;
    // Listed groups in the listed order; the rest first, in file order (promtool's partial order).
    std::stable_sort(groups.begin(), groups.end(), [&](const RuleGroupDefinition& a, const RuleGroupDefinition& b) {
      auto rank = [&](const std::string& n) {
        auto it = group_order.find(n);
        return it == group_order.end() ? 0 : it->second;
      };
      return rank(a.name) < rank(b.name);
    });

    std::vector<std::string> failures;
    const YAML::Node tests = root["tests"];
    if (!tests || tests.IsNull() || (tests.IsSequence() && tests.size() == 0)) return no_tests();
    {
      if (!tests.IsSequence()) fail(tests, "tests must be a list");
      for (const YAML::Node& t : tests) {
        auto more = run_test_group(t, groups, evaluation_interval_ms);
        failures.insert(failures.end(), more.begin(), more.end());
      }
    }
    return failures;
  }

  std::vector<std::string> run_test_group(const YAML::Node& t, const std::vector<RuleGroupDefinition>& definitions,
                                          std::int64_t evaluation_interval_ms) {
    check_keys(t, "a test group",
               {"interval", "input_series", "alert_rule_test", "promql_expr_test", "external_labels", "external_url",
                "name"});
    const std::int64_t interval_ms = t["interval"] ? duration(t["interval"], "interval") : evaluation_interval_ms;
    if (interval_ms <= 0) fail(t["interval"], "interval must be positive");
    const std::string name = t["name"] ? scalar(t["name"], "name") : "";

    store::SeriesSet data;
    if (const YAML::Node input = t["input_series"]) {
      for (const YAML::Node& s : input) {
        check_keys(s, "an input series", {"series", "values"});
        if (!s["series"]) fail(s, "an input series needs 'series'");
        const std::string line = scalar(s["series"], "series") + " " + (s["values"] ? scalar(s["values"], "values") : "");
        auto parsed = promql::parse_series_description(line);
        if (!parsed) fail(s, fmt::format("input series \"{}\": {}", scalar(s["series"], "series"), parsed.error()));
        for (const store::Sample& sample : promql::expand_samples(parsed->points, 0, interval_ms)) {
          data.add(parsed->labels, sample.t_ms, sample.value);
        }
      }
    }
    std::vector<store::Label> external;
    for (auto& [k, v] : string_map(t["external_labels"], "external_labels")) external.push_back({k, v});

    std::vector<AlertTest> alert_tests;
    std::int64_t max_eval_ms = 0;
    if (const YAML::Node alerts = t["alert_rule_test"]) {
      for (const YAML::Node& a : alerts) {
        check_keys(a, "an alert_rule_test item", {"eval_time", "alertname", "exp_alerts"});
        AlertTest test;
        test.eval_time_ms = a["eval_time"] ? duration(a["eval_time"], "eval_time") : 0;
        test.eval_time_text = promql::format_duration(test.eval_time_ms);
        test.alertname = a["alertname"] ? scalar(a["alertname"], "alertname") : "";
        if (test.alertname.empty()) {
          const std::string in_group = name.empty() ? "" : fmt::format(" (in TestGroup {})", name);
          return {fmt::format("an item under alert_rule_test misses required attribute alertname at eval_time {}{}",
                              test.eval_time_text, in_group)};
        }
        if (const YAML::Node exp = a["exp_alerts"]) {
          for (const YAML::Node& e : exp) {
            check_keys(e, "an exp_alerts item", {"exp_labels", "exp_annotations"});
            std::vector<store::Label> labels, annotations;
            for (auto& [k, v] : string_map(e["exp_labels"], "exp_labels")) labels.push_back({k, v});
            for (auto& [k, v] : string_map(e["exp_annotations"], "exp_annotations")) annotations.push_back({k, v});
            store::Labels l(std::move(labels));
            l.set("alertname", test.alertname);
            test.expected.push_back({std::move(l), store::Labels(std::move(annotations))});
          }
        }
        std::sort(test.expected.begin(), test.expected.end());
        max_eval_ms = std::max(max_eval_ms, test.eval_time_ms);
        alert_tests.push_back(std::move(test));
      }
    }
    std::vector<ExprTest> expr_tests;
    if (const YAML::Node exprs = t["promql_expr_test"]) {
      for (const YAML::Node& e : exprs) {
        check_keys(e, "a promql_expr_test item", {"expr", "eval_time", "exp_samples"});
        ExprTest test;
        test.expr = e["expr"] ? scalar(e["expr"], "expr") : "";
        test.eval_time_ms = e["eval_time"] ? duration(e["eval_time"], "eval_time") : 0;
        test.eval_time_text = promql::format_duration(test.eval_time_ms);
        if (const YAML::Node exp = e["exp_samples"]) {
          for (const YAML::Node& s : exp) {
            check_keys(s, "an exp_samples item", {"labels", "value"});
            test.expected.emplace_back(s["labels"] ? scalar(s["labels"], "labels") : "",
                                       s["value"] ? number(s["value"], "value") : 0.0);
          }
        }
        max_eval_ms = std::max(max_eval_ms, test.eval_time_ms);
        expr_tests.push_back(std::move(test));
      }
    }

    std::vector<RuleGroup> groups;
    groups.reserve(definitions.size());
    for (const RuleGroupDefinition& d : definitions) groups.emplace_back(d, interval_ms);

    promql::EngineOptions engine_options;
    engine_options.default_subquery_step_ms = evaluation_interval_ms;
    const promql::Engine engine(engine_options);
    EvaluationContext ctx;
    ctx.engine = &engine;
    ctx.data = &data;
    ctx.external_labels = store::Labels(std::move(external));
    ctx.external_url = t["external_url"] ? scalar(t["external_url"], "external_url") : "";
    SeriesSetAppender appender(data);

    std::vector<std::string> failures;
    std::stable_sort(alert_tests.begin(), alert_tests.end(),
                     [](const AlertTest& a, const AlertTest& b) { return a.eval_time_ms < b.eval_time_ms; });
    std::size_t next_alert_test = 0;
    const std::string test_name = name.empty() ? "" : fmt::format("    name: {},\n", name);
    for (std::int64_t ts = 0; ts <= max_eval_ms; ts += evaluation_interval_ms) {
      std::vector<std::string> eval_errors;
      for (RuleGroup& g : groups) {
        g.evaluate(ctx, appender, ts);
        for (const RuleGroup::Rule& r : g.rules()) {
          if (r.status.health == RuleHealth::kError) {
            eval_errors.push_back(fmt::format("    rule: {}, time: {}, err: {}", r.definition().name,
                                              go_time_duration(ts), r.status.last_error));
          }
        }
      }
      if (!eval_errors.empty()) {
        failures.insert(failures.end(), eval_errors.begin(), eval_errors.end());
        return failures;
      }
      // An alert test at eval_time is checked against the evaluation at the last ts <= eval_time.
      while (next_alert_test < alert_tests.size() && alert_tests[next_alert_test].eval_time_ms >= ts &&
             alert_tests[next_alert_test].eval_time_ms < ts + evaluation_interval_ms) {
        const AlertTest& test = alert_tests[next_alert_test++];
        std::vector<LabelsAndAnnotations> got;
        for (const RuleGroup& g : groups) {
          for (const RuleGroup::Rule& r : g.rules()) {
            const auto* alerting = std::get_if<AlertingRule>(&r.rule);
            if (alerting == nullptr || alerting->name() != test.alertname) continue;
            for (const Alert& a : alerting->alerts()) {
              if (a.state == AlertState::kFiring) got.push_back({a.labels, a.annotations});
            }
          }
        }
        std::sort(got.begin(), got.end());
        if (got != test.expected) {
          failures.push_back(fmt::format("{}    alertname: {}, time: {}, \n        exp:{}, \n        got:{}", test_name,
                                         test.alertname, test.eval_time_text,
                                         indent_lines(alerts_text(test.expected), "            "),
                                         indent_lines(alerts_text(got), "            ")));
        }
      }
    }

    for (const ExprTest& test : expr_tests) {
      auto parsed = promql::parse_expr(test.expr);
      if (!parsed) {
        failures.push_back(fmt::format("    expr: {}, time: {}, err: {}", promql::go_quote(test.expr),
                                       test.eval_time_text, parsed.error().to_string(test.expr)));
        continue;
      }
      auto got_vector = query_vector(ctx, **parsed, test.eval_time_ms);
      if (!got_vector) {
        failures.push_back(fmt::format("    expr: {}, time: {}, err: {}", promql::go_quote(test.expr),
                                       test.eval_time_text, got_vector.error()));
        continue;
      }
      std::vector<Sample> got, expected;
      for (auto& s : *got_vector) got.push_back({std::move(s.labels), s.value});
      bool bad_labels = false;
      for (const auto& [text, value] : test.expected) {
        auto labels = promql::parse_series_labels(text);
        if (!labels) {
          failures.push_back(fmt::format("    expr: {}, time: {}, err: labels {}: {}", promql::go_quote(test.expr),
                                         test.eval_time_text, promql::go_quote(text), labels.error()));
          bad_labels = true;
          break;
        }
        expected.push_back({std::move(*labels), value});
      }
      if (bad_labels) continue;
      auto by_labels = [](const Sample& a, const Sample& b) { return a.labels < b.labels; };
      std::sort(got.begin(), got.end(), by_labels);
      std::sort(expected.begin(), expected.end(), by_labels);
      const bool equal = got.size() == expected.size() &&
                         std::equal(got.begin(), got.end(), expected.begin(), [](const Sample& a, const Sample& b) {
                           return a.labels == b.labels && same_value(a.value, b.value);
                         });
      if (!equal) {
        failures.push_back(fmt::format("    expr: {}, time: {},\n        exp: {}\n        got: {}",
                                       promql::go_quote(test.expr), test.eval_time_text, samples_text(expected),
                                       samples_text(got)));
      }
    }
    return failures;
  }

  std::string path_;
  std::ostream& err_;
};

}  // namespace

int run_rule_unit_tests(const std::vector<std::string>& files, std::ostream& out, std::ostream& err) {
  bool failed = false;
  for (const std::string& file : files) {
    out << "Unit Testing:  " << file << "\n";
    out.flush();
    const std::vector<std::string> failures = TestFile(file, err).run();
    if (failures.empty()) {
      out << "  SUCCESS\n";
    } else {
      err << "  FAILED:\n";
      for (const std::string& f : failures) err << f << "\n\n";
      err.flush();
      failed = true;
    }
    out << "\n";
  }
  return failed ? 1 : 0;
}

}  // namespace gpuscope::rules
