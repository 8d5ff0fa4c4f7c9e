// The whole alerting path as a user runs it: `gpuscope serve --rules --config` on a simulated node whose
// GPU is lost twice. A real Alertmanager gets the alert and sees it resolved after each loss; local
// webhook, Slack-, PagerDuty-shaped receivers and an SMTP sink get the same alert with the right
// payloads; a remediation action runs once, as its cooldown says, though the alert fired twice.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/http_client.h"
#include "notify_test_support.h"
#include "smtp_sink.h"

namespace gpuscope::notify {
namespace {

using testing::kAlertmanager;

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;


// GPU 1 falls off the bus at 3s for 4s, and again at 14s for 4s (scenario time counts from nvmlInit).
constexpr const char* kScenario = R"(description: GPU 1 lost twice
seed: 5
node:
  hostname: alerting-e2e-01
gpus:
  count: 2
  model: NVIDIA H100 80GB HBM3
workload:
  profile: training
faults:
  - type: gpu_lost
    gpu: 1
    at: 3s
    for: 4s
  - type: gpu_lost
    gpu: 1
    at: 14s
    for: 4s
)";

constexpr const char* kRules = R"(groups:
  - name: e2e
    interval: 1s
    rules:
      - alert: GpuLost
        expr: gpuscope_gpu_up == 0
        labels: {severity: critical}
        annotations:
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.Hostname }} is lost'
)";

json alertmanager_alerts(int port) {
  auto j = json::parse(e2e::http_get(port, "/api/v2/alerts").body, nullptr, false);
  return j.is_discarded() ? json::array() : j;
}

std::vector<json> bodies(testing::RecordingReceiver& r) {
  std::vector<json> out;
  for (const auto& req : r.requests()) out.push_back(json::parse(req.body, nullptr, false));
  return out;
}

TEST(AgentAlertingE2e, ScenarioAlertsReachAlertmanagerReceiversAndActions) {
  if (!fs::exists(kAlertmanager)) GTEST_SKIP() << "prometheus-alertmanager not installed (scripts/setup installs it)";
  e2e::TempDir dir;
  fs::create_directories(dir.path / "am");
  dir.write("alertmanager.yml", "route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n");
  const int am_port = e2e::free_port();
  e2e::BackgroundProcess am({kAlertmanager, "--config.file=" + (dir.path / "alertmanager.yml").string(),
                             "--storage.path=" + (dir.path / "am").string(),
                             "--web.listen-address=127.0.0.1:" + std::to_string(am_port), "--cluster.listen-address="});
  ASSERT_TRUE(testing::eventually([&] { return e2e::http_get(am_port, "/-/ready").status == 200; }, 20s)) << am.output();

  testing::RecordingReceiver webhook, slack, pagerduty;
  testing::SmtpSink smtp;
  const std::string action_log = (dir.path / "actions.log").string();
  const std::string config = dir.write("notify.yml", R"(resend_delay: 1m
alertmanagers:
  - url: http://127.0.0.1:)" + std::to_string(am_port) + R"(
route:
  receiver: all
  group_by: [alertname, gpu]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: all
    webhook_configs:
      - url: )" + webhook.url() + R"(
    slack_configs:
      - api_url: )" + slack.url("/services/T0/B0/x") + R"(
        channel: '#gpu'
        send_resolved: true
    pagerduty_configs:
      - routing_key: e2e-key
        url: )" + pagerduty.url("/v2/enqueue") + R"(
    email_configs:
      - to: [oncall@example.com]
        from: gpuscope@example.com
        smarthost: )" + smtp.url() + R"(
        require_tls: false
actions:
  enabled: true
  commands:
    - name: note-lost-gpu
      matchers: ['alertname="GpuLost"']
      command: [/bin/sh, -c, 'echo "$GPUSCOPE_LABEL_GPU $GPUSCOPE_ALERT_STATUS" >> )" + action_log + R"(']
      on: firing
      cooldown: 1h
      timeout: 10s
)");
  const std::string rules = dir.write("rules.yml", kRules);
  const std::string scenario = dir.write("lost_twice.yaml", kScenario);

  e2e::Agent agent({"--simulate=" + scenario, "serve", "--listen", "127.0.0.1:0", "--interval", "250ms", "--rules", rules,
                    "--config", config, "--external-url", "http://agent.example:9400"},
                   e2e::live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  // First loss: Alertmanager shows the alert firing, then no longer once the GPU is back.
  ASSERT_TRUE(testing::eventually([&] { return alertmanager_alerts(am_port).size() == 1; }, 20s))
      << agent.process->output();
  const json am_alert = alertmanager_alerts(am_port)[0];
  EXPECT_EQ(am_alert["labels"]["alertname"], "GpuLost");
  EXPECT_EQ(am_alert["labels"]["gpu"], "1");
  EXPECT_EQ(am_alert["labels"]["Hostname"], "alerting-e2e-01");
  EXPECT_EQ(am_alert["annotations"]["summary"], "GPU 1 on alerting-e2e-01 is lost");
  EXPECT_TRUE(am_alert["generatorURL"].get<std::string>().starts_with("http://agent.example:9400/graph?g0.expr="));
  ASSERT_TRUE(testing::eventually([&] { return alertmanager_alerts(am_port).empty(); }, 20s))
      << alertmanager_alerts(am_port).dump() << agent.process->output();
  // Second loss: firing again, then resolved again.
  ASSERT_TRUE(testing::eventually([&] { return alertmanager_alerts(am_port).size() == 1; }, 20s))
      << agent.process->output();
  ASSERT_TRUE(testing::eventually([&] { return alertmanager_alerts(am_port).empty(); }, 20s))
      << agent.process->output();

  // The webhook saw firing and resolved for each loss, in Alertmanager's webhook format.
  ASSERT_TRUE(testing::eventually([&] { return webhook.requests().size() >= 4; }, 10s)) << agent.process->output();
  std::vector<std::string> statuses;
  for (const json& b : bodies(webhook)) {
    EXPECT_EQ(b["version"], "4");
    EXPECT_EQ(b["receiver"], "all");
    EXPECT_EQ(b["groupLabels"], json({{"alertname", "GpuLost"}, {"gpu", "1"}}));
    ASSERT_EQ(b["alerts"].size(), 1u) << b.dump();
    EXPECT_EQ(b["alerts"][0]["labels"]["severity"], "critical");
    statuses.push_back(b["status"]);
  }
  EXPECT_EQ(statuses, (std::vector<std::string>{"firing", "resolved", "firing", "resolved"}));

  // Slack: a message naming the alert; PagerDuty: trigger and resolve under one dedup key.
  ASSERT_TRUE(testing::eventually([&] { return slack.requests().size() >= 4; }, 10s));
  const json first_slack = bodies(slack)[0];
  EXPECT_EQ(first_slack["channel"], "#gpu");
  EXPECT_NE(first_slack.dump().find("GpuLost"), std::string::npos) << first_slack.dump();
  EXPECT_NE(first_slack.dump().find("FIRING"), std::string::npos) << first_slack.dump();
  ASSERT_TRUE(testing::eventually([&] { return pagerduty.requests().size() >= 4; }, 10s));
  const auto pd = bodies(pagerduty);
  EXPECT_EQ(pd[0]["event_action"], "trigger");
  EXPECT_EQ(pd[0]["routing_key"], "e2e-key");
  EXPECT_EQ(pd[0]["payload"]["severity"], "critical");
  EXPECT_EQ(pd[1]["event_action"], "resolve");
  EXPECT_EQ(pd[0]["dedup_key"], pd[1]["dedup_key"]);
  EXPECT_EQ(pagerduty.requests()[0].path, "/v2/enqueue");

  // Email: one message per firing (resolved mail is off by default, as in Alertmanager).
  ASSERT_TRUE(testing::eventually([&] { return smtp.messages().size() >= 2; }, 10s));
  const std::string mail = smtp.messages()[0];
  EXPECT_NE(mail.find("From: gpuscope@example.com"), std::string::npos) << mail;
  EXPECT_NE(mail.find("To: oncall@example.com"), std::string::npos) << mail;
  EXPECT_NE(mail.find("GpuLost"), std::string::npos) << mail;

  // The action ran at the first firing only: the second came within its cooldown.
  std::string actions;
  ASSERT_TRUE(testing::eventually([&] {
    std::ifstream in(action_log);
    actions.assign(std::istreambuf_iterator<char>(in), {});
    return !actions.empty();
  }));
  EXPECT_EQ(actions, "1 firing\n");

  // What the agent says about its notifications. A receiver has its request before the agent has its
  // answer and counts the delivery: wait for the count rather than read it once.
  std::string metrics;
  EXPECT_TRUE(testing::eventually([&] {
    metrics = agent.metrics();
    return metrics.find("gpuscope_notifications_total{receiver=\"all\",integration=\"webhook\"} 4") != std::string::npos;
  }, 10s)) << metrics;
  EXPECT_NE(metrics.find("gpuscope_notifications_dropped_total 0"), std::string::npos);
  EXPECT_NE(metrics.find("gpuscope_actions_total{outcome=\"skipped_cooldown\"} 1"), std::string::npos) << metrics;

  EXPECT_EQ(agent.process->signal_and_wait(SIGTERM, 10s), 0) << agent.process->output();
  EXPECT_EQ(am.signal_and_wait(SIGTERM, 10s), 0) << am.output();
}

TEST(AgentAlertingE2e, BadConfigStopsTheAgentAtStart) {
  e2e::TempDir dir;
  const std::string rules = dir.write("rules.yml", kRules);
  const std::string config = dir.write("notify.yml", "route:\n  receiver: nobody\nreceivers: []\n");
  e2e::BackgroundProcess agent({GPUSCOPE_EXE, "--simulate", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                                (dir.path / "data").string(), "--rules", rules, "--config", config});
  EXPECT_EQ(agent.signal_and_wait(0, 20s), 2) << agent.output();
  EXPECT_NE(agent.output().find("notify.yml"), std::string::npos) << agent.output();
  e2e::BackgroundProcess no_rules({GPUSCOPE_EXE, "--simulate", "serve", "--config", config});
  EXPECT_EQ(no_rules.signal_and_wait(0, 20s), 2) << no_rules.output();
  EXPECT_NE(no_rules.output().find("--config sends the alerts of --rules"), std::string::npos) << no_rules.output();
}

}  // namespace
}  // namespace gpuscope::notify
