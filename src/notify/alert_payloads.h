// The bodies gpuscope sends: Alertmanager's v2 API, Alertmanager's webhook JSON, Slack's incoming
// webhook, PagerDuty's Events API v2 and a plain-text email. Pure functions of a notification.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "notify/notification.h"
#include "notify/notify_config.h"

namespace gpuscope::notify {

// RFC 3339 in UTC with milliseconds ("2024-05-01T12:00:00.000Z"); 0 is Go's zero time
// ("0001-01-01T00:00:00Z"), what Alertmanager shows for an unset end.
std::string rfc3339(std::int64_t ms);

// "[FIRING:2] GpuOverheating" / "[RESOLVED] GpuOverheating": the common alertname, else the group
// labels' values.
std::string notification_title(const Notification& n);

// POST /api/v2/alerts: [{labels, annotations, startsAt, endsAt, generatorURL}].
nlohmann::json alertmanager_alerts_body(const std::vector<NotificationAlert>& alerts);

// Alertmanager's webhook message, version "4". max_alerts > 0 cuts the list (truncatedAlerts counts the rest).
nlohmann::json webhook_body(const Notification& n, std::size_t max_alerts);

nlohmann::json slack_body(const Notification& n, const SlackIntegration& slack);

// PagerDuty Events API v2: "trigger" while any alert fires, else "resolve" (same dedup_key, no payload).
nlohmann::json pagerduty_body(const Notification& n, const PagerDutyIntegration& pd, std::string_view source);
// Stable per alert group, so the resolve closes the incident the trigger opened.
std::string pagerduty_dedup_key(std::string_view group_key);
// critical, error, warning or info: the integration's `severity`, else the most severe `severity`
// label among the firing alerts (warn → warning), else error.
std::string pagerduty_severity(const Notification& n, const PagerDutyIntegration& pd);

// A complete RFC 5322 message (headers, blank line, text body), CRLF line ends.
std::string email_message(const Notification& n, const EmailIntegration& email, std::string_view message_id_host);

}  // namespace gpuscope::notify
