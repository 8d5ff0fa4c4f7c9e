#include "cli/backtest_verb.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/rule_evaluation_loop.h"
#include "cli/backtest_diagnosis.h"
#include "cli/backtest_progress.h"
#include "cli/simulated_history.h"
#include "export/timestamp_text.h"
#include "promql/parser.h"
#include "rules/rule_manager.h"
#include "store/head.h"

namespace gpuscope::cli {
namespace {

using nlohmann::json;

std::string exe_dir() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().string();
}

// "+1h05m", "+12m30s", "+0s": an offset into the scenario, as people read a timeline.
std::string offset_text(std::int64_t ms) {
  const std::int64_t s = ms / 1000;
  const std::int64_t h = s / 3600, m = s / 60 % 60, sec = s % 60;
  if (h > 0) return sec != 0 ? fmt::format("+{}h{:02}m{:02}s", h, m, sec) : fmt::format("+{}h{:02}m", h, m);
  if (m > 0) return sec != 0 ? fmt::format("+{}m{:02}s", m, sec) : fmt::format("+{}m", m);
  return fmt::format("+{}s", sec);
}

std::string pad(std::string_view s, std::size_t width) {
  std::string out(s);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

json labels_json(const store::Labels& labels) {
  json out = json::object();
  for (const store::Label& l : labels) out[l.name] = l.value;
  return out;
}

// A verdict change as a row of the timeline: STATE "verdict", the verdict where the alert's name goes.
std::string verdict_row(const VerdictEvent& v) {
  std::string verdict(analysis::verdict_id(v.verdict));
  if (!v.detail.empty()) verdict += " (" + v.detail + ")";
  std::string summary = v.summary;
  if (!v.findings.empty()) {
    std::string ids;
    for (const auto& f : v.findings) ids += (ids.empty() ? "" : ", ") + f;
    summary += " [" + ids + "]";
  }
  return pad(offset_text(v.offset_ms), 11) + pad("verdict", 10) + pad(verdict, 31) + ' ' +
         pad(v.identity.gpu.empty() ? "-" : v.identity.gpu, 5) + pad(v.identity.host.empty() ? "-" : v.identity.host, 20) +
         pad("-", 10) + summary + '\n';
}

json verdict_json(const VerdictEvent& v, const std::string& time) {
  json out = {{"offset_seconds", static_cast<double>(v.offset_ms) / 1000.0},
              {"time", time},
              {"gpu", v.identity.gpu},
              {"uuid", v.identity.uuid},
              {"host", v.identity.host},
              {"from_verdict", v.from ? json(analysis::verdict_id(*v.from)) : json(nullptr)},
              {"verdict", analysis::verdict_id(v.verdict)},
              {"summary", v.summary},
              {"findings", v.findings}};
  if (!v.detail.empty()) out["detail"] = v.detail;
  return out;
}

}  // namespace

std::string default_rule_pack(const std::string& dir) {
  if (dir.empty()) return {};
  for (const char* rel : {"/../share/gpuscope/rules/gpu.rules.yml", "/../rules/gpu.rules.yml"}) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(dir + rel, ec);
    if (!ec && std::filesystem::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

std::expected<BacktestOptions, ParseExit> parse_backtest_args(std::span<const std::string> args,
                                                              const GlobalOptions& global) {
  auto app = make_verb_app(
      "backtest",
      "Run a simulator scenario through the agent's reading path, history and rules on a virtual\n"
      "clock, as fast as possible, and print when each alert went pending, fired and resolved (with its\n"
      "labels and summary) and, between them, each GPU's diagnosis verdict changes (as `gpuscope\n"
      "diagnose`, over the last 30s, every 30s of scenario time; written to the store as the agent does,\n"
      "so rules can read them). Without --rules the built-in rule pack (rules/gpu.rules.yml) is used.\n"
      "Needs no GPU and no running agent.\n"
      "On a terminal, stderr shows how far a long run has got.",
      "  gpuscope backtest --scenario scenarios/thermal_runaway.yaml --duration 1h\n"
      "  gpuscope backtest --scenario scenarios/ecc.yaml --duration 6h --rules my.rules.yml --format json");
  BacktestOptions o;
  std::string duration = "6h", interval = "15s", evaluation_interval = "1m", format = "text";
  app->add_option("--scenario", o.scenario, "the simulator scenario to run (or the global --simulate=FILE)")
      ->type_name("FILE");
  app->add_option("--duration", duration, "how much scenario time to run, 1m to 30d (default 6h)")->type_name("DURATION");
  app->add_option("--interval", interval, "virtual time between GPU readings, 1s to 5m (default 15s)")->type_name("DURATION");
  app->add_option("--evaluation-interval", evaluation_interval,
                  "how often rule groups without their own interval are evaluated (default 1m)")
      ->type_name("DURATION");
  app->add_option("--rules", o.rule_specs, "rule file, directory or glob; repeatable (default: the built-in rule pack)")
      ->type_name("FILE|DIR|GLOB");
  app->add_option("--format", format, "text (default; 'table' also works) or json")->type_name("FORMAT");
  PriceFlags price_flags;
  add_price_flags(*app, price_flags);
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());

  if (o.scenario.empty()) o.scenario = global.scenario;
  if (o.scenario.empty()) return std::unexpected(usage("backtest needs a scenario: --scenario FILE"));
  std::error_code ec;
  if (std::filesystem::is_directory(o.scenario, ec)) {
    return std::unexpected(usage(fmt::format("--scenario {}: is a directory (name a scenario file in it)", o.scenario)));
  }
  if (!std::filesystem::exists(o.scenario, ec)) {
    return std::unexpected(usage(fmt::format("--scenario {}: no such file", o.scenario)));
  }
  auto ms = [](const std::string& text) { return promql::parse_duration(text); };
  auto d = ms(duration);
  if (!d || *d < 60'000 || *d > 30LL * 24 * 3600 * 1000) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --duration (1m to 30d, e.g. 6h)", duration)));
  }
  o.duration = std::chrono::milliseconds(*d);
  auto i = ms(interval);
  if (!i || *i < 1000 || *i > 300'000) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --interval (1s to 5m, e.g. 15s)", interval)));
  }
  o.interval = std::chrono::milliseconds(*i);
  auto e = ms(evaluation_interval);
  if (!e || *e < 1000 || *e > 3600'000) {
    return std::unexpected(
        usage(fmt::format("invalid value '{}' for --evaluation-interval (1s to 1h, e.g. 1m)", evaluation_interval)));
  }
  o.evaluation_interval = std::chrono::milliseconds(*e);
  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  o.json = *json;
  if (o.rule_specs.empty()) {
    const std::string pack = default_rule_pack(exe_dir());
    if (pack.empty()) return std::unexpected(usage("no --rules given and the built-in rule pack was not found"));
    o.rule_specs.push_back(pack);
  }
  auto prices = select_prices(price_flags);
  if (!prices) return std::unexpected(usage(prices.error()));
  o.prices = std::move(*prices);
  return o;
}

int run_backtest(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_backtest_args(args, inv.global);
  if (!options) return finish(options.error(), inv);
  const BacktestOptions& o = *options;

  auto groups = agent::load_rules(o.rule_specs);
  if (!groups) {
    for (const std::string& e : groups.error()) inv.err << "gpuscope: " << e << '\n';
    return kExitUsage;
  }
  for (const std::string& e : groups->empty) inv.err << "gpuscope: warning: " << e << '\n';
  const std::size_t rule_count = groups->rule_count;

  auto opened = SimulatedHistory::open(inv, o.scenario, o.prices);
  if (!opened) return opened.error();
  SimulatedHistory& sim = **opened;
  store::Head& head = sim.head();
  rules::RuleManagerOptions ro;
  ro.default_interval_ms = o.evaluation_interval.count();
  ro.engine.default_subquery_step_ms = o.evaluation_interval.count();
  rules::RuleManager manager(std::move(groups->groups), std::move(ro));
  rules::StoreAppender<store::Head> appender(head);

  const std::int64_t start_ms = sim.start_ms();
  const auto start = std::chrono::system_clock::time_point(std::chrono::milliseconds(start_ms));
  BacktestDiagnosis diagnosis(head, start_ms);
  const std::int64_t end_ms = start_ms + o.duration.count();
  std::vector<AlertEvent> events;
  std::map<std::pair<std::string, store::Labels>, std::string> last_state;
  std::int64_t next_eval = start_ms;
  // Only a person at a terminal sees it: redirected stderr (scripts, tests) gets the report alone.
  BacktestProgress progress(inv.err, &inv.err == &std::cerr && ::isatty(STDERR_FILENO) == 1, o.duration.count());
  for (std::int64_t t = start_ms; t <= end_ms; t += o.interval.count()) {
    progress.update(t - start_ms, events.size());
    if (inv.stop.load(std::memory_order_relaxed)) break;
    if (auto recorded = sim.record_at(t); !recorded) {
      progress.finish();
      inv.err << "gpuscope: " << recorded.error() << '\n';
      return kExitRuntime;
    }
    // Before the rules, which may read the verdicts it writes.
    if (auto diagnosed = diagnosis.evaluate_due(t); !diagnosed) {
      progress.finish();
      inv.err << "gpuscope: the diagnosis could not be stored: " << diagnosed.error() << '\n';
      return kExitRuntime;
    }
    if (t < next_eval) continue;
    next_eval = manager.evaluate_due(head, appender, t);
    std::map<std::pair<std::string, store::Labels>, std::string> now_state;
    manager.visit([&](const std::vector<rules::RuleGroup>& all) {
      for (const rules::RuleGroup& g : all) {
        for (const rules::RuleGroup::Rule& r : g.rules()) {
          const auto* alerting = std::get_if<rules::AlertingRule>(&r.rule);
          if (alerting == nullptr) continue;
          for (const rules::Alert& a : alerting->alerts()) {
            const std::string state = a.state == rules::AlertState::kInactive ? "resolved" : rules::alert_state_name(a.state);
            auto key = std::make_pair(g.file() + "\n" + g.name(), a.labels);
            auto before = last_state.find(key);
            if (before == last_state.end() || before->second != state) {
              if (!(state == "resolved" && before == last_state.end())) {
                events.push_back({t, t - start_ms, state, a.labels, a.annotations});
              }
            }
            now_state[key] = state;
          }
        }
      }
    });
    // A pending alert whose condition went away before `for` ran out is simply gone.
    for (const auto& [key, state] : last_state) {
      if (state == "pending" && !now_state.contains(key)) events.push_back({t, t - start_ms, "inactive", key.second, {}});
    }
    last_state = std::move(now_state);
  }
  progress.finish();

  std::size_t fired = 0, firing_at_end = 0;
  for (const AlertEvent& e : events) fired += e.state == "firing";
  for (const auto& [key, state] : last_state) firing_at_end += state == "firing";
  const auto gpus = sim.backend().gpus().size();
  const auto& verdicts = diagnosis.events();
  const auto time_text = [](std::int64_t t_ms) {
    return exporter::iso_timestamp(std::chrono::system_clock::time_point(std::chrono::milliseconds(t_ms)));
  };
  if (o.json) {
    json out_events = json::array();
    for (const AlertEvent& e : events) {
      out_events.push_back({{"offset_seconds", static_cast<double>(e.offset_ms) / 1000.0},
                            {"time", time_text(e.t_ms)},
                            {"state", e.state},
                            {"alertname", std::string(e.labels.get("alertname"))},
                            {"labels", labels_json(e.labels)},
                            {"annotations", labels_json(e.annotations)}});
    }
    json out_verdicts = json::array();
    for (const VerdictEvent& v : verdicts) out_verdicts.push_back(verdict_json(v, time_text(v.t_ms)));
    json firing = json::array();
    for (const auto& [key, state] : last_state) {
      if (state == "firing") firing.push_back(labels_json(key.second));
    }
    const json report = {{"scenario", o.scenario},
                         {"gpus", gpus},
                         {"start", exporter::iso_timestamp(start)},
                         {"duration_seconds", static_cast<double>(o.duration.count()) / 1000.0},
                         {"interval_seconds", static_cast<double>(o.interval.count()) / 1000.0},
                         {"rules", rule_count},
                         {"rule_files", o.rule_specs},
                         {"diagnosis_window_seconds", static_cast<double>(kBacktestDiagnosisWindowMs) / 1000.0},
                         {"events", std::move(out_events)},
                         {"verdicts", std::move(out_verdicts)},
                         {"firing_at_end", std::move(firing)}};
    inv.out << report.dump() << '\n';
  } else {
    inv.out << fmt::format("Backtest of {}: {} GPU{}, {} of scenario time, a reading every {}, {} rules\n\n", o.scenario,
                           gpus, gpus == 1 ? "" : "s", promql::format_duration(o.duration.count()),
                           promql::format_duration(o.interval.count()), rule_count);
    if (!events.empty() || !verdicts.empty()) {
      inv.out << pad("OFFSET", 11) << pad("STATE", 10) << pad("ALERT", 32) << pad("GPU", 5) << pad("HOST", 20)
              << pad("SEVERITY", 10) << "SUMMARY\n";
    }
    // Alerts and verdict changes in time order; at one time the verdict first (the rules ran after it).
    auto verdict = verdicts.begin();
    const auto print_verdicts_until = [&](std::int64_t t_ms) {
      for (; verdict != verdicts.end() && verdict->t_ms <= t_ms; ++verdict) inv.out << verdict_row(*verdict);
    };
    for (const AlertEvent& e : events) {
      print_verdicts_until(e.t_ms);
      const std::string_view gpu = e.labels.has("gpu") ? e.labels.get("gpu") : "-";
      std::string_view host = e.labels.get("Hostname");
      if (host.empty()) host = e.labels.get("hostname");
      inv.out << pad(offset_text(e.offset_ms), 11) << pad(e.state, 10) << pad(e.labels.get("alertname"), 32) << pad(gpu, 5)
              << pad(host.empty() ? "-" : host, 20) << pad(e.labels.has("severity") ? e.labels.get("severity") : "-", 10)
              << e.annotations.get("summary") << '\n';
    }
    print_verdicts_until(std::numeric_limits<std::int64_t>::max());
    const std::string changes = fmt::format("{} verdict change{}", verdicts.size(), verdicts.size() == 1 ? "" : "s");
    if (events.empty()) {
      inv.out << (verdicts.empty() ? "" : "\n") << "No alert went pending or fired; " << changes << ".\n";
    } else {
      inv.out << fmt::format("\n{} alert{} fired; {} still firing at the end; {}.\n", fired, fired == 1 ? "" : "s",
                             firing_at_end, changes);
    }
  }
  inv.out.flush();
  return inv.out ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli
