#include "notify/notify_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace gpuscope::notify {
namespace {

namespace fs = std::filesystem;

EnvironmentLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::vector<std::string> errors_of(std::string_view yaml, const EnvironmentLookup& env = env_of({})) {
  auto parsed = parse_notify_config(yaml, "notify.yml", env);
  if (parsed) return {};
  return parsed.error();
}

// The single error of a config, or a failure message listing what came instead.
std::string only_error(std::string_view yaml, const EnvironmentLookup& env = env_of({})) {
  auto errors = errors_of(yaml, env);
  if (errors.size() != 1) {
    std::string all;
    for (const auto& e : errors) all += e + "\n";
    return "expected one error, got " + std::to_string(errors.size()) + ":\n" + all;
  }
  return errors[0];
}

constexpr std::string_view kFull = R"(
resend_delay: 2m
alertmanagers:
  - url: http://127.0.0.1:9093
    timeout: 5s
  - url: https://am.example.com/prefix
route:
  receiver: default
  group_by: [alertname, instance]
  group_wait: 10s
  group_interval: 1m
  repeat_interval: 2h
  routes:
    - matchers: ['severity="critical"']
      receiver: oncall
      group_wait: 0s
      continue: true
      routes:
        - matchers: ['gpu=~"0|1"', 'team != ml']
          repeat_interval: 30m
    - matchers: [severity=warning]
      group_by: ['...']
receivers:
  - name: default
    webhook_configs:
      - url: http://127.0.0.1:8080/hook
        max_alerts: 10
  - name: oncall
    slack_configs:
      - api_url: https://hooks.slack.com/services/${SLACK_PATH}
        channel: '#gpu'
        username: gpuscope
    pagerduty_configs:
      - routing_key_file: key.txt
        url: http://127.0.0.1:9999/v2/enqueue
        severity: critical
    email_configs:
      - to: [a@example.com, b@example.com]
        from: gpuscope@example.com
        smarthost: smtp://127.0.0.1:2525
        auth_username: bot
        auth_password: ${SMTP_PASSWORD}
        require_tls: false
        send_resolved: true
actions:
  enabled: true
  commands:
    - name: drain
      matchers: ['alertname="GpuXid"']
      command: [/usr/local/bin/drain, --gpu, '{{ $labels.gpu }}']
      on: firing
      cooldown: 30m
      timeout: 1m
      dry_run: true
    - name: undrain
      command: [/usr/local/bin/undrain]
      on: resolved
)";

class NotifyConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("notify_config_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "key.txt") << "  pd-routing-key\n";
    std::ofstream(dir_ / "notify.yml") << kFull;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(NotifyConfigFile, ReadsEverySection) {
  auto config = load_notify_config((dir_ / "notify.yml").string(),
                                   env_of({{"SLACK_PATH", "T0/B0/XYZ"}, {"SMTP_PASSWORD", "hunter2"}}));
  ASSERT_TRUE(config.has_value()) << config.error()[0];
  EXPECT_EQ(config->resend_delay_ms, 120'000);
  ASSERT_EQ(config->alertmanagers.size(), 2u);
  EXPECT_EQ(config->alertmanagers[0].url, "http://127.0.0.1:9093");
  EXPECT_EQ(config->alertmanagers[0].timeout_ms, 5000);
  EXPECT_EQ(config->alertmanagers[1].timeout_ms, 10'000);

  ASSERT_TRUE(config->route.has_value());
  const Route& root = *config->route;
  EXPECT_EQ(root.receiver, "default");
  EXPECT_EQ(root.group_by, (std::vector<std::string>{"alertname", "instance"}));
  EXPECT_EQ(root.group_wait_ms, 10'000);
  EXPECT_EQ(root.group_interval_ms, 60'000);
  EXPECT_EQ(root.repeat_interval_ms, 7'200'000);
  EXPECT_EQ(root.key, "{}");
  ASSERT_EQ(root.routes.size(), 2u);
  const Route& critical = root.routes[0];
  EXPECT_EQ(critical.receiver, "oncall");
  EXPECT_TRUE(critical.continue_matching);
  EXPECT_EQ(critical.group_wait_ms, 0);
  EXPECT_EQ(critical.group_interval_ms, 60'000);  // inherited
  EXPECT_EQ(critical.group_by, root.group_by);    // inherited
  EXPECT_EQ(critical.key, "{}/{severity=\"critical\"}");
  ASSERT_EQ(critical.routes.size(), 1u);
  const Route& gpu = critical.routes[0];
  EXPECT_EQ(gpu.receiver, "oncall");  // inherited from its parent, not the root
  EXPECT_EQ(gpu.group_wait_ms, 0);
  EXPECT_EQ(gpu.repeat_interval_ms, 1'800'000);
  EXPECT_FALSE(gpu.continue_matching);
  ASSERT_EQ(gpu.matchers.size(), 2u);
  EXPECT_EQ(gpu.matchers[1].to_string(), "team!=\"ml\"");
  EXPECT_EQ(gpu.key, "{}/{severity=\"critical\"}/{gpu=~\"0|1\",team!=\"ml\"}");
  EXPECT_TRUE(root.routes[1].group_by_all);
  EXPECT_EQ(root.routes[1].receiver, "default");

  ASSERT_EQ(config->receivers.size(), 2u);
  const Receiver* def = config->find_receiver("default");
  ASSERT_NE(def, nullptr);
  ASSERT_EQ(def->webhooks.size(), 1u);
  EXPECT_EQ(def->webhooks[0].url.reveal(), "http://127.0.0.1:8080/hook");
  EXPECT_EQ(def->webhooks[0].max_alerts, 10u);
  EXPECT_TRUE(def->webhooks[0].send_resolved);
  const Receiver* oncall = config->find_receiver("oncall");
  ASSERT_NE(oncall, nullptr);
  ASSERT_EQ(oncall->slacks.size(), 1u);
  EXPECT_EQ(oncall->slacks[0].api_url.reveal(), "https://hooks.slack.com/services/T0/B0/XYZ");
  EXPECT_EQ(oncall->slacks[0].channel, "#gpu");
  EXPECT_FALSE(oncall->slacks[0].send_resolved);
  ASSERT_EQ(oncall->pagerduties.size(), 1u);
  EXPECT_EQ(oncall->pagerduties[0].routing_key.reveal(), "pd-routing-key");  // trimmed, relative to the file
  EXPECT_EQ(oncall->pagerduties[0].url, "http://127.0.0.1:9999/v2/enqueue");
  EXPECT_EQ(oncall->pagerduties[0].severity, "critical");
  ASSERT_EQ(oncall->emails.size(), 1u);
  const EmailIntegration& email = oncall->emails[0];
  EXPECT_EQ(email.to, (std::vector<std::string>{"a@example.com", "b@example.com"}));
  EXPECT_EQ(email.smarthost, "smtp://127.0.0.1:2525");
  EXPECT_EQ(email.auth_password.reveal(), "hunter2");
  EXPECT_FALSE(email.require_tls);
  EXPECT_TRUE(email.send_resolved);

  EXPECT_TRUE(config->actions.enabled);
  ASSERT_EQ(config->actions.commands.size(), 2u);
  const ActionDefinition& drain = config->actions.commands[0];
  EXPECT_EQ(drain.name, "drain");
  EXPECT_EQ(drain.command, (std::vector<std::string>{"/usr/local/bin/drain", "--gpu", "{{ $labels.gpu }}"}));
  ASSERT_EQ(drain.command_templates.size(), 3u);
  EXPECT_EQ(drain.command_templates[0], nullptr);
  EXPECT_NE(drain.command_templates[2], nullptr);
  EXPECT_EQ(drain.cooldown_ms, 1'800'000);
  EXPECT_EQ(drain.timeout_ms, 60'000);
  EXPECT_TRUE(drain.dry_run);
  EXPECT_EQ(drain.on, ActionTrigger::kFiring);
  const ActionDefinition& undrain = config->actions.commands[1];
  EXPECT_EQ(undrain.on, ActionTrigger::kResolved);
  EXPECT_EQ(undrain.cooldown_ms, 3'600'000);  // defaults
  EXPECT_EQ(undrain.timeout_ms, 300'000);
  EXPECT_FALSE(undrain.dry_run);
}

TEST(NotifyConfig, DefaultsAndEmptyFile) {
  auto empty = parse_notify_config("", "notify.yml", env_of({}));
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->resend_delay_ms, 60'000);
  EXPECT_FALSE(empty->route.has_value());
  EXPECT_FALSE(empty->actions.enabled);

  auto minimal = parse_notify_config("route: {receiver: r}\nreceivers: [{name: r}]\n", "n.yml", env_of({}));
  ASSERT_TRUE(minimal.has_value()) << minimal.error()[0];
  EXPECT_EQ(minimal->route->group_wait_ms, 30'000);
  EXPECT_EQ(minimal->route->group_interval_ms, 300'000);
  EXPECT_EQ(minimal->route->repeat_interval_ms, 4 * 3'600'000);
  EXPECT_TRUE(minimal->route->group_by.empty());
}

TEST(NotifyConfig, ActionsAreOffUnlessEnabled) {
  auto config = parse_notify_config("actions:\n  commands:\n    - name: a\n      command: [/bin/true]\n", "n.yml", env_of({}));
  ASSERT_TRUE(config.has_value()) << config.error()[0];
  EXPECT_FALSE(config->actions.enabled);
  EXPECT_EQ(config->actions.commands.size(), 1u);
}

TEST(NotifyConfig, EmailToMayBeACommaSeparatedString) {
  auto config = parse_notify_config(R"(
route: {receiver: r}
receivers:
  - name: r
    email_configs: [{to: 'a@x.org, b@y.org', from: g@x.org, smarthost: 'smtps://mail.x.org:465'}]
)", "n.yml", env_of({}));
  ASSERT_TRUE(config.has_value()) << config.error()[0];
  EXPECT_EQ(config->receivers[0].emails[0].to, (std::vector<std::string>{"a@x.org", "b@y.org"}));
  EXPECT_TRUE(config->receivers[0].emails[0].require_tls);
}

TEST(NotifyConfigErrors, YamlSyntaxHasTheLine) {
  EXPECT_EQ(only_error("route:\n  receiver: [unclosed\n").substr(0, 13), "notify.yml:3:");
  EXPECT_NE(only_error("a: b\n  c: d\n").find("notify.yml:2: yaml:"), std::string::npos) << only_error("a: b\n  c: d\n");
}

TEST(NotifyConfigErrors, UnknownKeysAreRejectedWithTheirLine) {
  EXPECT_EQ(only_error("resend_delay: 1m\nglobal: {}\n"),
            "notify.yml:2: unknown key \"global\" in the notification config (known: resend_delay, alertmanagers, "
            "route, receivers, actions)");
  const std::string e = only_error("route:\n  receiver: r\n  match: {a: b}\nreceivers: [{name: r}]\n");
  EXPECT_EQ(e.substr(0, 35), "notify.yml:3: unknown key \"match\" i") << e;
  EXPECT_NE(only_error("route: {receiver: r}\nreceivers:\n  - name: r\n    webhook_configs: [{url: 'http://x', "
                       "http_config: {}}]\n")
                .find("notify.yml:4: unknown key \"http_config\""),
            std::string::npos);
}

TEST(NotifyConfigErrors, BadDurationsAreNamed) {
  EXPECT_EQ(only_error("resend_delay: 5 minutes\n"),
            "notify.yml:1: resend_delay: not a valid duration: \"5 minutes\" (use e.g. 30s, 5m, 4h)");
  EXPECT_EQ(only_error("route: {receiver: r, group_interval: 0s}\nreceivers: [{name: r}]\n"),
            "notify.yml:1: route.group_interval must be greater than zero");
  EXPECT_EQ(only_error("alertmanagers: [{url: 'http://a', timeout: soon}]\n"),
            "notify.yml:1: alertmanagers[0].timeout: not a valid duration: \"soon\" (use e.g. 30s, 5m, 4h)");
}

TEST(NotifyConfigErrors, BadMatchersAreNamed) {
  const std::string e1 = only_error("route:\n  receiver: r\n  routes:\n    - matchers: ['severity']\n"
                                    "receivers: [{name: r}]\n");
  EXPECT_EQ(e1, "notify.yml:4: route.routes[0].matchers[0]: bad matcher \"severity\": expected =, !=, =~ or !~ after "
                "\"severity\"");
  const std::string e2 = only_error("route:\n  receiver: r\n  routes:\n    - matchers: ['gpu=~\"(\"']\n"
                                    "receivers: [{name: r}]\n");
  EXPECT_NE(e2.find("notify.yml:4: route.routes[0].matchers[0]: bad matcher \"gpu=~\"(\"\""), std::string::npos) << e2;
  EXPECT_NE(only_error("route: {receiver: r, matchers: ['a=b']}\nreceivers: [{name: r}]\n")
                .find("the root route must not have matchers"),
            std::string::npos);
}

TEST(NotifyConfigErrors, BadUrlsAreNamedButSecretsAreNotShown) {
  EXPECT_EQ(only_error("alertmanagers: [{url: 'localhost:9093'}]\n"),
            "notify.yml:1: alertmanagers[0].url: \"localhost:9093\" is not a http:// or https:// URL");
  const std::string e = only_error("route: {receiver: r}\nreceivers:\n  - name: r\n    slack_configs: "
                                   "[{api_url: 'hooks.slack.com/services/SECRET'}]\n");
  EXPECT_NE(e.find("notify.yml:4: receiver \"r\".slack_configs[0].api_url: not an http:// or https:// URL"),
            std::string::npos) << e;
  EXPECT_EQ(e.find("SECRET"), std::string::npos) << e;
  EXPECT_NE(only_error("route: {receiver: r}\nreceivers:\n  - name: r\n    email_configs: "
                       "[{to: a@b.c, from: d@e.f, smarthost: 'mail:25'}]\n")
                .find("smarthost: \"mail:25\" is not a smtp:// or smtps:// URL"),
            std::string::npos);
}

TEST(NotifyConfigErrors, SecretsFromTheEnvironment) {
  const std::string yaml = "route: {receiver: r}\nreceivers:\n  - name: r\n    webhook_configs: [{url: '${HOOK_URL}'}]\n";
  EXPECT_EQ(only_error(yaml), "notify.yml:4: receiver \"r\".webhook_configs[0].url: environment variable HOOK_URL is not set");
  auto ok = parse_notify_config(yaml, "n.yml", env_of({{"HOOK_URL", "http://127.0.0.1:1/x"}}));
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->receivers[0].webhooks[0].url.reveal(), "http://127.0.0.1:1/x");
  const std::string bad = only_error("route: {receiver: r}\nreceivers:\n  - name: r\n    webhook_configs: [{url: "
                                     "'http://x/${1A}'}]\n");
  EXPECT_NE(bad.find("\"${1A}\" is not an environment variable reference"), std::string::npos) << bad;
}

TEST(NotifyConfigErrors, SecretFilesAndTheirProblems) {
  const std::string e = only_error("route: {receiver: r}\nreceivers:\n  - name: r\n    pagerduty_configs: "
                                   "[{routing_key_file: /nonexistent/key}]\n");
  EXPECT_EQ(e, "notify.yml:4: receiver \"r\".pagerduty_configs[0].routing_key_file: cannot read /nonexistent/key: "
               "No such file or directory");
  EXPECT_NE(only_error("route: {receiver: r}\nreceivers:\n  - name: r\n    pagerduty_configs: [{routing_key: a, "
                       "routing_key_file: b}]\n")
                .find("set either routing_key or routing_key_file, not both"),
            std::string::npos);
  EXPECT_NE(only_error("route: {receiver: r}\nreceivers:\n  - name: r\n    pagerduty_configs: [{severity: info}]\n")
                .find("routing_key or routing_key_file is required"),
            std::string::npos);
}

TEST(NotifyConfigErrors, ReceiversAndRoutesMustAgree) {
  EXPECT_EQ(only_error("route: {receiver: nobody}\n"),
            "notify.yml:1: route.receiver: receiver \"nobody\" does not exist");
  EXPECT_EQ(only_error("route: {receiver: r}\nreceivers: [{name: r}, {name: r}]\n"),
            "notify.yml:2: receivers[1]: receiver \"r\" is defined twice");
  EXPECT_EQ(only_error("receivers: [{name: r}]\n"), "notify.yml:1: receivers are defined but there is no route to reach them");
  EXPECT_EQ(only_error("route: {group_by: [a]}\n"), "notify.yml:1: route: the root route needs a receiver");
  EXPECT_NE(only_error("route: {receiver: r, group_by: ['...', a]}\nreceivers: [{name: r}]\n")
                .find("'...' groups by every label and must stand alone"),
            std::string::npos);
}

TEST(NotifyConfigErrors, ActionsAreChecked) {
  EXPECT_EQ(only_error("actions:\n  enabled: true\n  commands:\n    - name: a\n      command: '/bin/sh -c x'\n"),
            "notify.yml:5: action \"a\".command must be a list (argv; it is never run through a shell)");
  EXPECT_EQ(only_error("actions:\n  enabled: yes please\n"), "notify.yml:2: actions.enabled must be true or false");
  EXPECT_EQ(only_error("actions:\n  commands:\n    - name: a\n      command: [/bin/true]\n      on: pending\n"),
            "notify.yml:5: action \"a\".on: \"pending\" is not firing or resolved");
  const std::string tmpl = only_error("actions:\n  commands:\n    - name: a\n      command: [/bin/echo, '{{ $labels.gpu ']\n");
  EXPECT_NE(tmpl.find("notify.yml:4: action \"a\".command[1]:"), std::string::npos) << tmpl;
  EXPECT_EQ(only_error("actions:\n  commands:\n    - command: [/bin/true]\n"), "notify.yml:3: actions.commands[0]: name is required");
}

TEST(NotifyConfigErrors, EveryProblemIsReportedOneLineEach) {
  auto errors = errors_of("resend_delay: x\nalertmanagers: [{url: nope}]\nroute: {receiver: missing}\n");
  ASSERT_EQ(errors.size(), 3u);
  for (const auto& e : errors) EXPECT_EQ(e.find('\n'), std::string::npos);
}

TEST(NotifyConfigErrors, MissingFile) {
  auto config = load_notify_config("/nonexistent/notify.yml");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error()[0], "/nonexistent/notify.yml: cannot read: No such file or directory");
  // A directory opens and then fails to read: it read as an empty file, a config of defaults.
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto directory = load_notify_config(dir);
  ASSERT_FALSE(directory.has_value());
  EXPECT_EQ(directory.error()[0], dir + ": cannot read: Is a directory");
}

TEST(NotifyConfigErrors, DeeplyNestedYamlSaysSo) {
  EXPECT_EQ(only_error("route: " + std::string(10000, '{') + "\n"),
            "notify.yml:2: yaml: nested too deeply (more levels of lists and maps than the YAML parser allows)");
}

}  // namespace
}  // namespace gpuscope::notify

namespace gpuscope::notify {
namespace {

TEST(NotifyConfig, TheShippedExampleParses) {
  auto config = load_notify_config(std::string(GPUSCOPE_SOURCE_DIR) + "/deploy/notify.example.yml",
                                   env_of({{"SLACK_WEBHOOK_PATH", "T0/B0/X"},
                                           {"PAGERDUTY_ROUTING_KEY", "key"},
                                           {"SMTP_PASSWORD", "pw"}}));
  ASSERT_TRUE(config.has_value()) << config.error()[0];
  EXPECT_EQ(config->alertmanagers.size(), 1u);
  EXPECT_EQ(config->receivers.size(), 2u);
  EXPECT_FALSE(config->actions.enabled);
  EXPECT_EQ(config->actions.commands.size(), 1u);
}

}  // namespace
}  // namespace gpuscope::notify
