// Rules in the agent as a user meets them: `serve --rules` evaluates recording and alerting rules
// against its history, shows them at /api/v1/rules and /api/v1/alerts and as ALERTS series, reloads
// them on SIGHUP, and refuses to start on a bad rule file; `gpuscope rules check/test` as commands.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kExe = GPUSCOPE_EXE;

constexpr const char* kRules = R"(groups:
  - name: e2e
    rules:
      - record: node:gpu_temp:max
        expr: max by (Hostname) (DCGM_FI_DEV_GPU_TEMP)
      - alert: GpuWarm
        expr: DCGM_FI_DEV_GPU_TEMP{gpu="0"} > 0
        labels: {severity: info}
        annotations:
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.Hostname }} at {{ $value | printf "%.0f" }} C ({{ $externalLabels.cluster }})'
      - alert: GpuWarmForAnHour
        expr: DCGM_FI_DEV_GPU_TEMP{gpu="0"} > 0
        for: 1h
)";

json get_json(int port, const std::string& path) { return json::parse(http_get(port, path).body, nullptr, false); }

// Polls `path` until `done` holds for its JSON (or gives up); returns the last answer.
template <class Predicate>
json wait_for(int port, const std::string& path, Predicate done, std::chrono::seconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  json j;
  while (std::chrono::steady_clock::now() < deadline) {
    j = get_json(port, path);
    if (done(j)) break;
    std::this_thread::sleep_for(100ms);
  }
  return j;
}

TEST(RulesE2e, AgentEvaluatesRulesAndShowsAlerts) {
  TempDir dir;
  const std::string rules = dir.write("gpu.rules.yml", kRules);
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "200ms",
               "--rules", rules, "--evaluation-interval", "1s", "--external-label", "cluster=lab"},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  auto alerts = wait_for(agent.port, "/api/v1/alerts", [](const json& j) {
    return j.is_object() && j["data"]["alerts"].size() == 2;
  });
  ASSERT_EQ(alerts["data"]["alerts"].size(), 2u) << alerts.dump() << agent.process->output();
  std::map<std::string, json> by_name;
  for (const json& a : alerts["data"]["alerts"]) by_name[a["labels"]["alertname"]] = a;
  const json& warm = by_name["GpuWarm"];
  EXPECT_EQ(warm["state"], "firing");
  EXPECT_EQ(warm["labels"]["severity"], "info");
  EXPECT_EQ(warm["labels"]["gpu"], "0");
  const std::string summary = warm["annotations"]["summary"];
  EXPECT_TRUE(summary.starts_with("GPU 0 on ")) << summary;
  EXPECT_TRUE(summary.ends_with(" C (lab)")) << summary;
  EXPECT_EQ(by_name["GpuWarmForAnHour"]["state"], "pending");

  // ALERTS and the recorded series are history like any other series.
  auto firing = wait_for(agent.port, "/api/v1/query?query=" + url_encode("ALERTS{alertstate=\"firing\"}"),
                         [](const json& j) { return j.is_object() && !j["data"]["result"].empty(); });
  ASSERT_EQ(firing["data"]["result"].size(), 1u) << firing.dump();
  EXPECT_EQ(firing["data"]["result"][0]["metric"]["alertname"], "GpuWarm");
  auto recorded = get_json(agent.port, "/api/v1/query?query=" + url_encode("node:gpu_temp:max"));
  ASSERT_EQ(recorded["data"]["result"].size(), 1u) << recorded.dump();
  // The same query at the time the rule wrote its sample.
  const double recorded_at = recorded["data"]["result"][0]["value"][0];
  auto max_temp = get_json(agent.port, "/api/v1/query?query=" + url_encode("max(DCGM_FI_DEV_GPU_TEMP)") +
                                           "&time=" + std::to_string(recorded_at));
  EXPECT_EQ(recorded["data"]["result"][0]["value"][1], max_temp["data"]["result"][0]["value"][1]);

  auto groups = get_json(agent.port, "/api/v1/rules");
  ASSERT_EQ(groups["data"]["groups"].size(), 1u) << groups.dump();
  const json& g = groups["data"]["groups"][0];
  EXPECT_EQ(g["name"], "e2e");
  EXPECT_EQ(g["file"], rules);
  EXPECT_EQ(g["interval"], 1.0);
  ASSERT_EQ(g["rules"].size(), 3u);
  EXPECT_EQ(g["rules"][0]["type"], "recording");
  EXPECT_EQ(g["rules"][0]["health"], "ok");
  EXPECT_EQ(g["rules"][1]["type"], "alerting");
  EXPECT_EQ(g["rules"][1]["state"], "firing");
  EXPECT_EQ(g["rules"][2]["duration"], 3600.0);
  // The agent reports its rule evaluations in /metrics, as Prometheus's rule manager does.
  const std::string metrics = agent.metrics();
  EXPECT_NE(metrics.find("gpuscope_rule_group_rules{rule_group=\"" + rules + ";e2e\"} 3\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("gpuscope_rule_evaluation_failures_total{rule_group=\"" + rules + ";e2e\"} 0\n"), std::string::npos);
  EXPECT_NE(metrics.find("gpuscope_rule_group_iterations_total{rule_group="), std::string::npos);
  auto only_alerts = get_json(agent.port, "/api/v1/rules?type=alert");
  EXPECT_EQ(only_alerts["data"]["groups"][0]["rules"].size(), 2u);

  // SIGHUP: the edited file replaces the rules; the unchanged alert keeps its state (no new activeAt).
  const std::string active_at = warm["activeAt"];
  std::string edited = kRules;
  edited = edited.substr(0, edited.find("      - alert: GpuWarmForAnHour"));
  dir.write("gpu.rules.yml", edited);
  agent.process->send(SIGHUP);
  auto after = wait_for(agent.port, "/api/v1/alerts", [](const json& j) {
    return j.is_object() && j["data"]["alerts"].size() == 1;
  });
  ASSERT_EQ(after["data"]["alerts"].size(), 1u) << after.dump();
  EXPECT_EQ(after["data"]["alerts"][0]["activeAt"], active_at);

  // A broken edit is refused and the rules stay.
  dir.write("gpu.rules.yml", "groups:\n  - name: e2e\n    rules:\n      - alert: X\n        expr: 'sum('\n");
  agent.process->send(SIGHUP);
  EXPECT_TRUE(agent.process->wait_for_line("rule file reload failed", 10s)) << agent.process->output();
  EXPECT_EQ(get_json(agent.port, "/api/v1/rules")["data"]["groups"][0]["rules"].size(), 2u);
}

TEST(RulesE2e, RestartKeepsAlertState) {
  TempDir dir;
  const std::string rules = dir.write("gpu.rules.yml", kRules);
  const std::vector<std::string> args = {"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0",
                                         "--interval", "200ms", "--rules", rules, "--evaluation-interval", "1s",
                                         "--data-dir", dir.path.string() + "/data"};
  std::string active_at, firing_active_at;
  {
    Agent first(args, live_env());
    ASSERT_TRUE(first.ready()) << first.process->output();
    auto alerts = wait_for(first.port, "/api/v1/alerts", [](const json& j) {
      return j.is_object() && j["data"]["alerts"].size() == 2;
    });
    ASSERT_EQ(alerts["data"]["alerts"].size(), 2u) << alerts.dump();
    for (const json& a : alerts["data"]["alerts"]) {
      (a["labels"]["alertname"] == "GpuWarmForAnHour" ? active_at : firing_active_at) = a["activeAt"];
    }
    EXPECT_EQ(first.process->signal_and_wait(SIGTERM, 10s), 0) << first.process->output();
  }
  std::this_thread::sleep_for(1100ms);  // the pending alert's `for` must not count this gap
  Agent second(args, live_env());
  ASSERT_TRUE(second.ready()) << second.process->output();
  EXPECT_TRUE(second.process->wait_for_line("alert state restored", 10s)) << second.process->output();
  auto alerts = wait_for(second.port, "/api/v1/alerts", [](const json& j) {
    return j.is_object() && j["data"]["alerts"].size() == 2;
  });
  ASSERT_EQ(alerts["data"]["alerts"].size(), 2u) << alerts.dump();
  for (const json& a : alerts["data"]["alerts"]) {
    const std::string restored = a["activeAt"];
    if (a["labels"]["alertname"] == "GpuWarm") {
      EXPECT_EQ(a["state"], "firing");
      EXPECT_EQ(restored, firing_active_at);  // the same alert, not a new one (no second notification)
    } else {
      EXPECT_EQ(a["state"], "pending");
      EXPECT_GT(restored, active_at);  // the time the agent was down does not count toward `for`
    }
  }
}

TEST(RulesE2e, ASighupWhileTheAgentStartsReloadsInsteadOfEndingIt) {
  // The notifier's sender threads start as its file is loaded. A SIGHUP sent then, while the agent opens
  // NVML and waits for its first reading, must wait for the signal loop; it used to land on a sender
  // thread, whose mask did not block it, and SIGHUP's default action ended the agent.
  TempDir dir;
  const auto rules = dir.write("e2e.rules.yml", kRules);
  const auto notify = dir.write("notify.yml", "route: {receiver: r}\nreceivers: [{name: r}]\n");
  BackgroundProcess agent({kExe, "--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0",
                           "--data-dir", (dir.path / "history").string(), "--rules", rules, "--config", notify},
                          frozen_env(600));
  ASSERT_TRUE(agent.wait_for_line("msg=\"notifications configured\"", 10s).has_value()) << agent.output();
  agent.send(SIGHUP);
  ASSERT_TRUE(agent.wait_for_line("msg=listening", 10s).has_value()) << agent.output();
  EXPECT_TRUE(agent.wait_for_line("msg=\"rules reloaded\"", 10s).has_value()) << agent.output();
  EXPECT_TRUE(agent.running()) << agent.output();
  EXPECT_EQ(agent.signal_and_wait(SIGTERM, 5s), 0) << agent.output();
}

TEST(RulesE2e, BadRuleFileStopsTheAgentAtStart) {
  TempDir dir;
  const std::string rules =
      dir.write("bad.yml", "groups:\n  - name: g\n    rules:\n      - alert: Hot\n        expr: up\n        annotations:\n"
                           "          summary: '{{ $value | humanise }}'\n");
  auto r = run_command({kExe, "--simulate", "serve", "--listen", "127.0.0.1:0", "--data-dir", dir.path.string() + "/d",
                        "--rules", rules},
                       {}, 30);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("bad.yml: 7:20: group \"g\", rule 1, \"Hot\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("humanise"), std::string::npos) << r.err;

  auto missing = run_command({kExe, "--simulate", "serve", "--rules", dir.path.string() + "/none.yml"}, {}, 30);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.yml: no such rule file or directory"), std::string::npos) << missing.err;
  // An empty directory started the agent with an info log ("rules loaded groups=0"): nothing would
  // ever be evaluated.
  std::filesystem::create_directories(dir.path / "empty");
  auto empty = run_command({kExe, "--simulate", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                            dir.path.string() + "/d", "--rules", (dir.path / "empty").string()},
                           {}, 30);
  EXPECT_EQ(empty.exit_code, 2) << empty.out << empty.err;
  EXPECT_NE(empty.err.find("gpuscope: --rules " + (dir.path / "empty").string() +
                           ": no rules found, nothing would be evaluated"),
            std::string::npos)
      << empty.err;
  auto no_history = run_command({kExe, "--simulate", "serve", "--rules", rules, "--no-history"}, {}, 30);
  EXPECT_EQ(no_history.exit_code, 2);
  EXPECT_NE(no_history.err.find("--rules needs the history"), std::string::npos) << no_history.err;
}

TEST(RulesE2e, CheckAndTestCommands) {
  TempDir dir;
  const std::string rules = dir.write("gpu.rules.yml", kRules);
  auto check = run_command({kExe, "rules", "check", rules});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.out, "Checking " + rules + "\n  SUCCESS: 3 rules found\n\n");

  const std::string bad = dir.write("bad.yml", "groups:\n  - name: g\n    rules:\n      - record: x\n        expr: 'rate(up[5m]'\n");
  auto failed = run_command({kExe, "rules", "check", rules, bad});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.out.find("  SUCCESS: 3 rules found"), std::string::npos);
  EXPECT_NE(failed.err.find("  FAILED:\n" + bad + ": 5:15: group \"g\", rule 1, \"x\": could not parse expression"),
            std::string::npos)
      << failed.err;

  const std::string good_text = R"(rule_files: [gpu.rules.yml]
tests:
  - interval: 1m
    input_series:
      - series: 'DCGM_FI_DEV_GPU_TEMP{gpu="0", Hostname="n1"}'
        values: '70x90'
    alert_rule_test:
      - eval_time: 59m
        alertname: GpuWarmForAnHour
      - eval_time: 60m
        alertname: GpuWarmForAnHour
        exp_alerts:
          - exp_labels: {gpu: "0", Hostname: n1}
)";
  // The same test expecting __name__, which is not an alert label: it must fail.
  std::string bad_text = good_text;
  bad_text.replace(bad_text.find("Hostname: n1}"), 13, "Hostname: n1, __name__: DCGM_FI_DEV_GPU_TEMP}");
  auto failing = run_command({kExe, "rules", "test", dir.write("bad.test.yml", bad_text)});
  EXPECT_EQ(failing.exit_code, 1) << failing.out << failing.err;
  EXPECT_NE(failing.err.find("alertname: GpuWarmForAnHour, time: 1h"), std::string::npos) << failing.err;
  const std::string good = dir.write("good.test.yml", good_text);
  auto ok = run_command({kExe, "rules", "test", good});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_EQ(ok.out, "Unit Testing:  " + good + "\n  SUCCESS\n\n");

  auto usage = run_command({kExe, "rules", "lint", rules});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("unknown rules command 'lint'"), std::string::npos) << usage.err;
}

}  // namespace
}  // namespace gpuscope::e2e
