#include "notify/notifier.h"

#include <unistd.h>

#include <limits>

#include <fmt/format.h>

#include "notify/alert_payloads.h"
#include "notify/curl_library.h"

namespace gpuscope::notify {
namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "gpuscope";
  return name;
}

// Invalid UTF-8 in a label must not stop a notification (nlohmann's default throws).
std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

std::string url_without_credentials(std::string_view url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const std::size_t authority = scheme + 3;
  const std::size_t end = url.find_first_of("/?#", authority);
  const std::size_t at = url.substr(0, end).rfind('@');
  if (at == std::string_view::npos || at < authority) return std::string(url);
  return fmt::format("{}{}", url.substr(0, authority), url.substr(at + 1));
}

Notifier::Notifier(std::shared_ptr<const NotifyConfig> config, log::Logger& log, NotifierOptions options)
    : config_(std::move(config)), log_(log), options_(std::move(options)) {
  if (options_.source.empty()) options_.source = host_name();
  options_.actions.external_url = options_.external_url;
  options_.actions.external_labels = options_.external_labels;
  if (config_->route) dispatcher_ = std::make_unique<AlertDispatcher>(config_, options_.external_url);
  actions_ = std::make_unique<ActionRunner>(config_->actions, log_, options_.actions);
  queue_ = std::make_unique<DeliveryQueue>(options_.delivery, log_, options_.send);
}

std::expected<std::unique_ptr<Notifier>, std::string> Notifier::create(NotifyConfig config, log::Logger& log,
                                                                      NotifierOptions options) {
  if (options.delivery.capacity == 0) return std::unexpected("notification queue capacity must be at least 1");
  if (config.route && config.find_receiver(config.route->receiver) == nullptr) {
    return std::unexpected(fmt::format("{}: route: receiver \"{}\" does not exist", config.path, config.route->receiver));
  }
  if (!options.send) {
    // Fail at start, not at the first alert, when nothing could be sent.
    if (auto curl = curl_api(); !curl) return std::unexpected(fmt::format("notifications need libcurl: {}", curl.error()));
  }
  auto shared = std::make_shared<const NotifyConfig>(std::move(config));
  std::unique_ptr<Notifier> notifier(new Notifier(std::move(shared), log, std::move(options)));
  if (notifier->config_->actions.enabled) {
    log.info("remediation actions enabled", {{"count", std::to_string(notifier->config_->actions.commands.size())}});
  }
  return notifier;
}

Notifier::~Notifier() { stop(std::chrono::milliseconds(0)); }

void Notifier::submit(const std::vector<rules::Alert>& alerts, std::int64_t now_ms, std::string_view rule_expr) {
  queue_alerts(alerts, now_ms, rule_expr, false);
}

void Notifier::submit_now(const std::vector<rules::Alert>& alerts, std::int64_t now_ms) {
  queue_alerts(alerts, now_ms, {}, true);
}

void Notifier::queue_alerts(const std::vector<rules::Alert>& alerts, std::int64_t now_ms, std::string_view rule_expr,
                            bool flush_now) {
  const std::string link = generator_url(options_.external_url, rule_expr);
  std::vector<NotificationAlert> outgoing;
  for (const rules::Alert& alert : alerts) {
    if (alert.state == rules::AlertState::kPending) continue;
    NotificationAlert a = notification_alert(alert, link);
    for (const store::Label& l : options_.external_labels) {
      if (!a.labels.has(l.name)) a.labels.set(l.name, l.value);
    }
    outgoing.push_back(std::move(a));
  }
  if (outgoing.empty()) {
    tick(now_ms);
    return;
  }
  if (!config_->alertmanagers.empty()) {
    const std::string body = json_text(alertmanager_alerts_body(outgoing));
    for (const AlertmanagerTarget& am : config_->alertmanagers) {
      std::string_view base = am.url;
      while (base.ends_with('/')) base.remove_suffix(1);
      queue_->push(Delivery{url_without_credentials(am.url), "alertmanager",
                            HttpPost{Secret(fmt::format("{}/api/v2/alerts", base)), body, "application/json", am.timeout_ms},
                            {}});
    }
  }
  if (dispatcher_) {
    std::lock_guard lock(mu_);
    dispatcher_->add(outgoing, now_ms, flush_now);
  }
  actions_->submit(outgoing, now_ms);
  tick(now_ms);
}

Delivery Notifier::delivery_for(IntegrationNotification& due) {
  const Receiver& r = *due.receiver;
  const Notification& n = due.notification;
  Delivery d;
  d.receiver = r.name;
  d.integration = std::string(integration_name(due.kind));
  switch (due.kind) {
    case IntegrationKind::kWebhook: {
      const WebhookIntegration& hook = r.webhooks[due.index];
      d.request = HttpPost{hook.url, json_text(webhook_body(n, hook.max_alerts)), "application/json", hook.timeout_ms};
      break;
    }
    case IntegrationKind::kSlack: {
      const SlackIntegration& slack = r.slacks[due.index];
      d.request = HttpPost{slack.api_url, json_text(slack_body(n, slack)), "application/json", slack.timeout_ms};
      break;
    }
    case IntegrationKind::kPagerDuty: {
      const PagerDutyIntegration& pd = r.pagerduties[due.index];
      const std::string source = pd.source.empty() ? options_.source : pd.source;
      d.request = HttpPost{Secret(pd.url), json_text(pagerduty_body(n, pd, source)), "application/json", pd.timeout_ms};
      break;
    }
    case IntegrationKind::kEmail: {
      const EmailIntegration& email = r.emails[due.index];
      std::string_view host = email.smarthost;
      while (host.ends_with('/')) host.remove_suffix(1);
      d.request = SmtpMail{fmt::format("{}/{}", host, email.hello), email.from, email.to, email.auth_username,
                           email.auth_password, email.require_tls, email_message(n, email, options_.source),
                           email.timeout_ms};
      break;
    }
  }
  const std::uint64_t id = due.log_id;
  d.on_done = [this, id](bool delivered) {
    if (delivered) return;
    std::lock_guard lock(mu_);
    if (dispatcher_) dispatcher_->report_failure(id);
  };
  return d;
}

void Notifier::tick(std::int64_t now_ms) {
  if (!dispatcher_) return;
  std::vector<Delivery> deliveries;
  {
    std::lock_guard lock(mu_);
    for (IntegrationNotification& due : dispatcher_->tick(now_ms)) deliveries.push_back(delivery_for(due));
  }
  // Outside the lock: a full queue calls the dropped delivery's on_done, which takes it.
  for (Delivery& d : deliveries) queue_->push(std::move(d));
}

std::int64_t Notifier::next_tick_ms() const {
  if (!dispatcher_) return std::numeric_limits<std::int64_t>::max();
  std::lock_guard lock(mu_);
  return dispatcher_->next_flush_ms();
}

NotifyStats Notifier::stats() const {
  NotifyStats out;
  DeliveryStats d = queue_->stats();
  out.integrations = std::move(d.integrations);
  out.dropped = d.dropped;
  out.queue_length = d.queue_length;
  out.actions = actions_->stats();
  if (dispatcher_) {
    std::lock_guard lock(mu_);
    out.alert_groups = dispatcher_->group_count();
  }
  return out;
}

void Notifier::stop(std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  queue_->stop(grace);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  actions_->stop(std::max(left, std::chrono::milliseconds(0)));
}

}  // namespace gpuscope::notify
