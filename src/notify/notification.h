// The notification model: an alert as receivers see it (Alertmanager's fields: status, startsAt,
// endsAt, generatorURL, fingerprint) and one notification of an alert group, the input of every payload.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rules/alerting_rule.h"
#include "store/labels.h"

namespace gpuscope::notify {

struct NotificationAlert {
  store::Labels labels;
  store::Labels annotations;
  double value = 0;
  std::int64_t starts_at_ms = 0;
  std::int64_t ends_at_ms = 0;  // 0: not set
  std::string generator_url;
  // Whether the alert is resolved at `now_ms` (its end has passed), as Alertmanager decides.
  bool resolved_at(std::int64_t now_ms) const { return ends_at_ms > 0 && ends_at_ms <= now_ms; }
};

// As Prometheus's notifier sends a rule's alert: starts at its firing time, ends at its resolve time or,
// while firing, at valid_until (so Alertmanager resolves it by itself if the agent dies).
NotificationAlert notification_alert(const rules::Alert& alert, std::string generator_url);

// Prometheus's link back to the rule: EXTERNAL_URL/graph?g0.expr=EXPR&g0.tab=1. Empty without an expr.
std::string generator_url(std::string_view external_url, std::string_view expr);

// Prometheus's labels fingerprint (FNV-1a 64 over sorted names and values), as 16 hex digits, so the
// same alert has the same fingerprint in gpuscope's webhook and in Alertmanager's.
std::uint64_t labels_fingerprint(const store::Labels& labels);
std::string fingerprint_text(const store::Labels& labels);

// Go's url.QueryEscape: what Prometheus uses for generator URLs.
std::string query_escape(std::string_view text);

// One notification of one alert group to one receiver at `now_ms`.
struct Notification {
  std::string receiver;
  std::string group_key;  // route key + ":" + group labels, e.g. {}/{severity="critical"}:{alertname="X"}
  store::Labels group_labels;
  std::vector<NotificationAlert> alerts;  // firing ones first, then resolved, each sorted by labels
  std::string external_url;
  std::int64_t now_ms = 0;

  bool resolved(const NotificationAlert& alert) const { return alert.resolved_at(now_ms); }
  std::size_t firing_count() const;
  std::size_t resolved_count() const;
  // "firing" when any alert fires, else "resolved".
  std::string_view status() const { return firing_count() > 0 ? "firing" : "resolved"; }
  // Labels / annotations every alert shares with the same value (Alertmanager's CommonLabels).
  store::Labels common_labels() const;
  store::Labels common_annotations() const;
};

}  // namespace gpuscope::notify
