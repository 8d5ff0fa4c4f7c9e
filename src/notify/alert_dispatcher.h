// AlertDispatcher: Alertmanager's grouping inside the agent. Alerts are routed into groups (route ×
// group_by labels); a group first notifies after group_wait, then at most every group_interval when
// alerts join or resolve, again every repeat_interval while anything fires, and once when all resolve.
// Time is whatever the caller passes, so a virtual clock drives it as well as the wall clock.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "notify/notification.h"
#include "notify/notify_config.h"

namespace gpuscope::notify {

enum class IntegrationKind { kWebhook, kSlack, kPagerDuty, kEmail };
std::string_view integration_name(IntegrationKind kind);  // "webhook", "slack", "pagerduty", "email"

// One notification due for one integration of a receiver.
struct IntegrationNotification {
  const Receiver* receiver = nullptr;  // owned by the dispatcher's config
  IntegrationKind kind = IntegrationKind::kWebhook;
  std::size_t index = 0;  // into the receiver's list of that kind
  Notification notification;
  std::uint64_t log_id = 0;  // for report_failure()
};

class AlertDispatcher {
 public:
  // `config` must have a route; it is kept alive by the dispatcher.
  AlertDispatcher(std::shared_ptr<const NotifyConfig> config, std::string external_url);

  // Routes each alert into its groups. Sends nothing: tick() does, when a group's timer is due. With
  // `flush_now` the groups the alerts join are due at now_ms, group_wait or group_interval or not (an
  // alert that cannot wait: the node is being preempted).
  void add(const std::vector<NotificationAlert>& alerts, std::int64_t now_ms, bool flush_now = false);
  // Flushes every group whose timer is due at now_ms and returns what must be sent.
  std::vector<IntegrationNotification> tick(std::int64_t now_ms);
  // The notification with this id was not delivered: the group's next flush sends it again instead of
  // waiting for repeat_interval (Alertmanager only logs a notification once it succeeded).
  void report_failure(std::uint64_t log_id);

  // When tick() next has work; max() when there are no groups.
  std::int64_t next_flush_ms() const;
  std::size_t group_count() const { return groups_.size(); }

 private:
  // What an integration was last told about a group (Alertmanager's notification log entry).
  struct SentState {
    bool sent = false;
    std::set<std::uint64_t> firing;
    std::set<std::uint64_t> resolved;
    std::int64_t at_ms = 0;
    std::uint64_t id = 0;
  };
  struct Group {
    const Route* route = nullptr;
    std::string key;
    store::Labels labels;
    std::map<std::uint64_t, NotificationAlert> alerts;  // by fingerprint
    std::int64_t next_flush_ms = 0;
    std::vector<SentState> sent;  // per integration of the receiver, in flush order
  };

  void flush(Group& group, std::int64_t now_ms, std::vector<IntegrationNotification>& out);

  std::shared_ptr<const NotifyConfig> config_;
  std::string external_url_;
  std::map<std::pair<const Route*, std::string>, Group> groups_;
  std::uint64_t next_id_ = 1;
};

}  // namespace gpuscope::notify
