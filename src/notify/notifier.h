// Notifier: the notify module's entry point. The rules thread hands it the alerts each evaluation
// wants sent; it posts them to every Alertmanager, groups and routes them to receivers, and starts
// remediation actions, all off the caller's thread. Time is passed in, never read.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "log/logger.h"
#include "notify/action_runner.h"
#include "notify/alert_dispatcher.h"
#include "notify/delivery_queue.h"
#include "notify/notify_config.h"
#include "rules/alerting_rule.h"

namespace gpuscope::notify {

struct NotifierOptions {
  std::string external_url;        // generatorURL base, webhook externalURL, Slack title link
  store::Labels external_labels;   // added to every alert's labels (an alert's own label wins)
  std::string source;              // PagerDuty's payload.source and the email Message-ID host; empty: host name
  DeliveryQueueOptions delivery;
  ActionRunnerOptions actions;     // external_url and external_labels are filled in from above
  SendFunction send;               // empty: libcurl (tests inject failures here)
};

// For /metrics: gpuscope_notifications_total{receiver,integration} (integrations[].total),
// gpuscope_notifications_failed_total{...} (.failed), gpuscope_notifications_dropped_total (dropped),
// gpuscope_notification_queue_length (queue_length).
struct NotifyStats {
  std::vector<IntegrationCounters> integrations;
  std::uint64_t dropped = 0;
  std::size_t queue_length = 0;
  std::size_t alert_groups = 0;
  ActionStats actions;
};

class Notifier {
 public:
  static std::expected<std::unique_ptr<Notifier>, std::string> create(NotifyConfig config, log::Logger& log,
                                                                      NotifierOptions options);
  ~Notifier();  // stop(0)
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // The alerts AlertingRule::take_alerts_to_send returned for one rule (pending ones are ignored);
  // `rule_expr` makes their generatorURL. Only queues work: never waits on a receiver or a command.
  // Also flushes the groups that are due at now_ms.
  void submit(const std::vector<rules::Alert>& alerts, std::int64_t now_ms, std::string_view rule_expr = {});
  // An alert that cannot wait for its group (the node is being preempted and may be gone in 30 s): as
  // submit(), but the groups it joins are flushed to their receivers now, group_wait or not.
  void submit_now(const std::vector<rules::Alert>& alerts, std::int64_t now_ms);
  // Flushes the alert groups whose group_wait / group_interval ended by now_ms. Call it at least at
  // next_tick_ms() (calling more often is fine).
  void tick(std::int64_t now_ms);
  std::int64_t next_tick_ms() const;

  NotifyStats stats() const;
  const NotifyConfig& config() const { return *config_; }
  // Gives queued notifications and running actions up to `grace`, then abandons them (counted as dropped).
  void stop(std::chrono::milliseconds grace);

 private:
  Notifier(std::shared_ptr<const NotifyConfig> config, log::Logger& log, NotifierOptions options);
  Delivery delivery_for(IntegrationNotification& n);
  void queue_alerts(const std::vector<rules::Alert>& alerts, std::int64_t now_ms, std::string_view rule_expr,
                    bool flush_now);

  std::shared_ptr<const NotifyConfig> config_;
  log::Logger& log_;
  NotifierOptions options_;
  mutable std::mutex mu_;  // the dispatcher
  std::unique_ptr<AlertDispatcher> dispatcher_;
  std::unique_ptr<ActionRunner> actions_;
  std::unique_ptr<DeliveryQueue> queue_;  // last: destroyed first, so its callbacks never see a dead dispatcher
};

// "http://user:pass@host:9093/x" → "http://host:9093/x": an Alertmanager URL fit for a metric label.
std::string url_without_credentials(std::string_view url);

}  // namespace gpuscope::notify
