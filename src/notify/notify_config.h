// Notification config: where alerts go (Alertmanagers, and a route tree of receivers in Alertmanager's
// own format) and which remediation commands run for them; read from `gpuscope serve --config FILE`.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/template.h"
#include "store/label_matcher.h"
#include "store/labels.h"

namespace gpuscope::notify {

// A value that must never reach a log line, an error message or a metric label: webhook URLs (the
// path is the credential), routing keys, passwords. Reading it takes a deliberate reveal().
class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  const std::string& reveal() const { return value_; }
  bool empty() const { return value_.empty(); }

 private:
  std::string value_;
};

// Prometheus-style: every alert goes to every Alertmanager, independent of the route tree.
struct AlertmanagerTarget {
  std::string url;  // base URL; alerts are POSTed to URL/api/v2/alerts
  std::int64_t timeout_ms = 10'000;
};

struct WebhookIntegration {
  Secret url;
  bool send_resolved = true;
  std::size_t max_alerts = 0;  // 0: all; more are cut and counted in truncatedAlerts
  std::int64_t timeout_ms = 10'000;
};

struct SlackIntegration {
  Secret api_url;
  std::string channel;  // empty: the webhook's default channel
  std::string username;
  std::string icon_emoji;
  bool send_resolved = false;
  std::int64_t timeout_ms = 10'000;
};

inline constexpr std::string_view kPagerDutyEventsUrl = "https://events.pagerduty.com/v2/enqueue";

struct PagerDutyIntegration {
  Secret routing_key;
  std::string url{kPagerDutyEventsUrl};
  std::string source;    // empty: the agent's host name
  std::string severity;  // empty: from the alerts' severity label
  std::string client = "gpuscope";
  std::string client_url;  // empty: the agent's external URL
  bool send_resolved = true;
  std::int64_t timeout_ms = 10'000;
};

struct EmailIntegration {
  std::vector<std::string> to;
  std::string from;
  std::string smarthost;  // smtp://host:port or smtps://host:port
  std::string hello = "localhost";
  std::string auth_username;  // empty: no AUTH
  Secret auth_password;
  bool require_tls = true;  // smtp:// only: STARTTLS is required (false: the session stays plain text)
  bool send_resolved = false;
  std::int64_t timeout_ms = 30'000;
};

struct Receiver {
  std::string name;
  std::vector<WebhookIntegration> webhooks;
  std::vector<SlackIntegration> slacks;
  std::vector<PagerDutyIntegration> pagerduties;
  std::vector<EmailIntegration> emails;
  int line = 0;
  std::size_t integration_count() const { return webhooks.size() + slacks.size() + pagerduties.size() + emails.size(); }
};

// A node of the route tree. Children inherit receiver, group_by and the three timings they do not set.
struct Route {
  std::string receiver;
  std::vector<std::string> group_by;
  bool group_by_all = false;  // group_by: ['...']: every label
  std::int64_t group_wait_ms = 30'000;
  std::int64_t group_interval_ms = 5 * 60'000;
  std::int64_t repeat_interval_ms = 4 * 3600'000;
  std::vector<store::LabelMatcher> matchers;
  bool continue_matching = false;
  std::vector<Route> routes;
  // Alertmanager's route key: "{}" for the root, then "/{matchers}" per level; group keys start with it.
  std::string key;
  int line = 0;
};

enum class ActionTrigger { kFiring, kResolved };

struct ActionDefinition {
  std::string name;
  std::vector<store::LabelMatcher> matchers;
  std::vector<std::string> command;  // argv as written
  // One per argv element: the parsed template, or null for a literal element.
  std::vector<std::shared_ptr<const rules::Template>> command_templates;
  ActionTrigger on = ActionTrigger::kFiring;
  std::int64_t cooldown_ms = 3600'000;  // per alert (labels fingerprint)
  std::int64_t timeout_ms = 5 * 60'000;
  bool dry_run = false;
  int line = 0;
};

struct ActionsConfig {
  bool enabled = false;  // nothing runs unless the file says `enabled: true`
  std::vector<ActionDefinition> commands;
};

struct NotifyConfig {
  std::string path;
  std::int64_t resend_delay_ms = 60'000;  // for AlertingRule::take_alerts_to_send
  std::vector<AlertmanagerTarget> alertmanagers;
  std::optional<Route> route;  // none: alerts go to the Alertmanagers only
  std::vector<Receiver> receivers;
  ActionsConfig actions;

  const Receiver* find_receiver(std::string_view name) const;
};

// Looks up an environment variable for `${NAME}` in secret fields; nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvironmentLookup process_environment();

// Every problem, one line each: "FILE:LINE: what". Unknown keys, bad durations, matchers, URLs and
// unreadable secret files are errors. Secret values never appear in an error. Relative *_file paths
// are read relative to the config file's directory.
std::expected<NotifyConfig, std::vector<std::string>> parse_notify_config(
    std::string_view text, std::string_view path, const EnvironmentLookup& env = process_environment());
std::expected<NotifyConfig, std::vector<std::string>> load_notify_config(
    const std::string& path, const EnvironmentLookup& env = process_environment());

}  // namespace gpuscope::notify
