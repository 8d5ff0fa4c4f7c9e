#include "notify/alert_dispatcher.h"

#include <algorithm>

#include "notify/route_selection.h"

namespace gpuscope::notify {
namespace {

struct IntegrationSlot {
  IntegrationKind kind;
  std::size_t index;
  bool send_resolved;
};

std::vector<IntegrationSlot> integration_slots(const Receiver& r) {
  std::vector<IntegrationSlot> out;
  for (std::size_t i = 0; i < r.webhooks.size(); ++i) out.push_back({IntegrationKind::kWebhook, i, r.webhooks[i].send_resolved});
  for (std::size_t i = 0; i < r.slacks.size(); ++i) out.push_back({IntegrationKind::kSlack, i, r.slacks[i].send_resolved});
  for (std::size_t i = 0; i < r.pagerduties.size(); ++i) {
    out.push_back({IntegrationKind::kPagerDuty, i, r.pagerduties[i].send_resolved});
  }
  for (std::size_t i = 0; i < r.emails.size(); ++i) out.push_back({IntegrationKind::kEmail, i, r.emails[i].send_resolved});
  return out;
}

bool subset(const std::set<std::uint64_t>& small, const std::set<std::uint64_t>& big) {
  return std::includes(big.begin(), big.end(), small.begin(), small.end());
}

// Alertmanager's DedupStage.needsUpdate.
bool needs_update(const auto& sent, const std::set<std::uint64_t>& firing, const std::set<std::uint64_t>& resolved,
                  bool send_resolved, std::int64_t repeat_ms, std::int64_t now_ms) {
  if (!sent.sent) return !firing.empty();  // never notified: only news of firing alerts is worth sending
  if (!subset(firing, sent.firing)) return true;
  // All resolved: notify (even without send_resolved, so the log forgets them) unless the receiver
  // never heard of any of them firing.
  if (firing.empty()) return !sent.firing.empty();
  if (send_resolved && !subset(resolved, sent.resolved)) return true;
  return sent.at_ms + repeat_ms <= now_ms;
}

}  // namespace

std::string_view integration_name(IntegrationKind kind) {
  switch (kind) {
    case IntegrationKind::kWebhook: return "webhook";
    case IntegrationKind::kSlack: return "slack";
    case IntegrationKind::kPagerDuty: return "pagerduty";
    case IntegrationKind::kEmail: return "email";
  }
  return "webhook";
}

AlertDispatcher::AlertDispatcher(std::shared_ptr<const NotifyConfig> config, std::string external_url)
    : config_(std::move(config)), external_url_(std::move(external_url)) {}

void AlertDispatcher::add(const std::vector<NotificationAlert>& alerts, std::int64_t now_ms, bool flush_now) {
  if (!config_->route) return;
  for (const NotificationAlert& alert : alerts) {
    const std::uint64_t fp = labels_fingerprint(alert.labels);
    for (const Route* route : select_routes(*config_->route, alert.labels)) {
      store::Labels group_labels = route->group_by_all ? alert.labels : alert.labels.keep_only(route->group_by);
      auto [it, created] = groups_.try_emplace({route, group_labels.to_string()});
      Group& group = it->second;
      if (created) {
        group.route = route;
        group.labels = std::move(group_labels);
        group.key = route->key + ":" + group.labels.to_string();
        if (const Receiver* r = config_->find_receiver(route->receiver)) group.sent.resize(r->integration_count());
        // An alert older than group_wait (a restart, a late rule) needs no more waiting.
        group.next_flush_ms = alert.starts_at_ms + route->group_wait_ms < now_ms ? now_ms : now_ms + route->group_wait_ms;
      }
      if (flush_now) group.next_flush_ms = now_ms;
      auto existing = group.alerts.find(fp);
      if (existing != group.alerts.end() && !existing->second.resolved_at(now_ms)) {
        // The same episode: keep when it started.
        const std::int64_t starts = std::min(existing->second.starts_at_ms, alert.starts_at_ms);
        existing->second = alert;
        existing->second.starts_at_ms = starts;
      } else {
        group.alerts.insert_or_assign(fp, alert);
      }
    }
  }
}

void AlertDispatcher::flush(Group& group, std::int64_t now_ms, std::vector<IntegrationNotification>& out) {
  std::set<std::uint64_t> firing, resolved;
  for (const auto& [fp, alert] : group.alerts) (alert.resolved_at(now_ms) ? resolved : firing).insert(fp);

  const Receiver* receiver = config_->find_receiver(group.route->receiver);
  if (receiver != nullptr) {
    const std::vector<IntegrationSlot> slots = integration_slots(*receiver);
    for (std::size_t i = 0; i < slots.size() && i < group.sent.size(); ++i) {
      SentState& sent = group.sent[i];
      if (!needs_update(sent, firing, resolved, slots[i].send_resolved, group.route->repeat_interval_ms, now_ms)) continue;
      Notification n;
      n.receiver = receiver->name;
      n.group_key = group.key;
      n.group_labels = group.labels;
      n.external_url = external_url_;
      n.now_ms = now_ms;
      for (const bool want_resolved : {false, true}) {
        if (want_resolved && !slots[i].send_resolved) continue;
        for (const auto& [fp, alert] : group.alerts) {
          if (alert.resolved_at(now_ms) == want_resolved) n.alerts.push_back(alert);
        }
      }
      std::stable_sort(n.alerts.begin(), n.alerts.end(), [&](const NotificationAlert& a, const NotificationAlert& b) {
        const bool ra = a.resolved_at(now_ms), rb = b.resolved_at(now_ms);
        return ra != rb ? !ra : a.labels < b.labels;
      });
      sent = SentState{true, firing, resolved, now_ms, next_id_++};
      // Without send_resolved an all-resolved group sends nothing, but the log still forgets the alerts.
      if (n.alerts.empty()) continue;
      out.push_back(IntegrationNotification{receiver, slots[i].kind, slots[i].index, std::move(n), sent.id});
    }
  }
  std::erase_if(group.alerts, [&](const auto& entry) { return entry.second.resolved_at(now_ms); });
  group.next_flush_ms = now_ms + group.route->group_interval_ms;
}

std::vector<IntegrationNotification> AlertDispatcher::tick(std::int64_t now_ms) {
  std::vector<IntegrationNotification> out;
  for (auto it = groups_.begin(); it != groups_.end();) {
    Group& group = it->second;
    if (group.next_flush_ms <= now_ms) {
      flush(group, now_ms, out);
      if (group.alerts.empty()) {
        it = groups_.erase(it);
        continue;
      }
    }
    ++it;
  }
  return out;
}

void AlertDispatcher::report_failure(std::uint64_t log_id) {
  for (auto& [key, group] : groups_) {
    for (SentState& sent : group.sent) {
      if (sent.sent && sent.id == log_id) {
        sent = SentState{};
        return;
      }
    }
  }
}

std::int64_t AlertDispatcher::next_flush_ms() const {
  std::int64_t next = std::numeric_limits<std::int64_t>::max();
  for (const auto& [key, group] : groups_) next = std::min(next, group.next_flush_ms);
  return next;
}

}  // namespace gpuscope::notify
