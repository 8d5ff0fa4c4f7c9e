#include "notify/alert_payloads.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

namespace gpuscope::notify {
namespace {

using nlohmann::json;

json labels_object(const store::Labels& labels) {
  json out = json::object();
  for (const store::Label& l : labels) out[l.name] = l.value;
  return out;
}

std::tm utc(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return tm;
}

// One line naming the alert: its summary, else its alertname; the labels that tell it apart follow.
std::string alert_headline(const NotificationAlert& a, const store::Labels& common) {
  std::string head(a.annotations.get("summary"));
  if (head.empty()) head = std::string(a.labels.get("alertname"));
  std::string distinct;
  for (const store::Label& l : a.labels) {
    if (common.has(l.name)) continue;
    distinct += fmt::format("{}{}={}", distinct.empty() ? "" : " ", l.name, l.value);
  }
  if (!distinct.empty()) head += fmt::format(" ({})", distinct);
  return head;
}

std::string base64(std::string_view in) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {kChars[(v >> 18) & 63], kChars[(v >> 12) & 63], kChars[(v >> 6) & 63], kChars[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += {kChars[(v >> 18) & 63], kChars[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {kChars[(v >> 18) & 63], kChars[(v >> 12) & 63], kChars[(v >> 6) & 63], '='};
  }
  return out;
}

// Header values must be 7-bit: non-ASCII text becomes an RFC 2047 encoded word. CR and LF never pass
// (an alert label must not be able to add a header).
std::string header_text(std::string_view text) {
  std::string clean;
  bool ascii = true;
  for (char c : text) {
    if (c == '\r' || c == '\n') c = ' ';
    if (static_cast<unsigned char>(c) >= 0x80) ascii = false;
    clean.push_back(c);
  }
  if (ascii) return clean;
  return fmt::format("=?UTF-8?B?{}?=", base64(clean));
}

int severity_rank(std::string_view s) {
  if (s == "critical") return 4;
  if (s == "error") return 3;
  if (s == "warning" || s == "warn") return 2;
  if (s == "info") return 1;
  return 0;
}

// Each alert in a few lines: Slack, PagerDuty details and email share this text.
std::string alert_list(const Notification& n, bool resolved, std::string_view bullet, std::string_view newline) {
  const store::Labels common = n.common_labels();
  std::string out;
  for (const NotificationAlert& a : n.alerts) {
    if (n.resolved(a) != resolved) continue;
    out += fmt::format("{}{}{}", bullet, alert_headline(a, common), newline);
    if (auto d = a.annotations.get("description"); !d.empty()) out += fmt::format("  {}{}", d, newline);
  }
  return out;
}

}  // namespace

std::string rfc3339(std::int64_t ms) {
  if (ms == 0) return "0001-01-01T00:00:00Z";
  const std::tm tm = utc(ms);
  const std::int64_t millis = ((ms % 1000) + 1000) % 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

std::string notification_title(const Notification& n) {
  std::string name(n.common_labels().get("alertname"));
  if (name.empty()) {
    for (const store::Label& l : n.group_labels) name += fmt::format("{}{}", name.empty() ? "" : " ", l.value);
  }
  if (name.empty()) name = "alerts";
  const std::size_t firing = n.firing_count();
  if (firing > 0) return fmt::format("[FIRING:{}] {}", firing, name);
  return fmt::format("[RESOLVED] {}", name);
}

nlohmann::json alertmanager_alerts_body(const std::vector<NotificationAlert>& alerts) {
  json out = json::array();
  for (const NotificationAlert& a : alerts) {
    json item = {{"labels", labels_object(a.labels)},
                 {"annotations", labels_object(a.annotations)},
                 {"startsAt", rfc3339(a.starts_at_ms)}};
    if (a.ends_at_ms > 0) item["endsAt"] = rfc3339(a.ends_at_ms);
    if (!a.generator_url.empty()) item["generatorURL"] = a.generator_url;
    out.push_back(std::move(item));
  }
  return out;
}

nlohmann::json webhook_body(const Notification& n, std::size_t max_alerts) {
  json alerts = json::array();
  std::size_t truncated = 0;
  for (const NotificationAlert& a : n.alerts) {
    if (max_alerts > 0 && alerts.size() >= max_alerts) {
      ++truncated;
      continue;
    }
    alerts.push_back({{"status", n.resolved(a) ? "resolved" : "firing"},
                      {"labels", labels_object(a.labels)},
                      {"annotations", labels_object(a.annotations)},
                      {"startsAt", rfc3339(a.starts_at_ms)},
                      {"endsAt", rfc3339(a.ends_at_ms)},
                      {"generatorURL", a.generator_url},
                      {"fingerprint", fingerprint_text(a.labels)}});
  }
  return {{"version", "4"},
          {"groupKey", n.group_key},
          {"truncatedAlerts", truncated},
          {"status", n.status()},
          {"receiver", n.receiver},
          {"groupLabels", labels_object(n.group_labels)},
          {"commonLabels", labels_object(n.common_labels())},
          {"commonAnnotations", labels_object(n.common_annotations())},
          {"externalURL", n.external_url},
          {"alerts", std::move(alerts)}};
}

nlohmann::json slack_body(const Notification& n, const SlackIntegration& slack) {
  const std::string title = notification_title(n);
  std::string text = alert_list(n, false, "• ", "\n");
  if (const std::string resolved = alert_list(n, true, "• ", "\n"); !resolved.empty()) {
    text += fmt::format("{}*Resolved:*\n{}", text.empty() ? "" : "\n", resolved);
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  json attachment = {{"title", title},
                     {"text", text},
                     {"fallback", title},
                     {"color", n.firing_count() > 0 ? "danger" : "good"},
                     {"mrkdwn_in", {"fallback", "pretext", "text"}}};
  if (!n.external_url.empty()) attachment["title_link"] = n.external_url;
  json body = {{"attachments", json::array({std::move(attachment)})}};
  if (!slack.channel.empty()) body["channel"] = slack.channel;
  if (!slack.username.empty()) body["username"] = slack.username;
  if (!slack.icon_emoji.empty()) body["icon_emoji"] = slack.icon_emoji;
  return body;
}

std::string pagerduty_dedup_key(std::string_view group_key) {
  return fmt::format("gpuscope-{:016x}", labels_fingerprint(store::Labels{{"group_key", std::string(group_key)}}));
}

std::string pagerduty_severity(const Notification& n, const PagerDutyIntegration& pd) {
  if (!pd.severity.empty()) return pd.severity;
  int best = 0;
  for (const NotificationAlert& a : n.alerts) {
    if (!n.resolved(a)) best = std::max(best, severity_rank(a.labels.get("severity")));
  }
  switch (best) {
    case 4: return "critical";
    case 2: return "warning";
    case 1: return "info";
    default: return "error";
  }
}

nlohmann::json pagerduty_body(const Notification& n, const PagerDutyIntegration& pd, std::string_view source) {
  json body = {{"routing_key", pd.routing_key.reveal()}, {"dedup_key", pagerduty_dedup_key(n.group_key)}};
  if (n.firing_count() == 0) {
    body["event_action"] = "resolve";
    return body;
  }
  body["event_action"] = "trigger";
  std::string summary = notification_title(n);
  if (summary.size() > 1024) summary.resize(1024);  // PagerDuty's limit
  json details = {{"firing", alert_list(n, false, "- ", "\n")},
                  {"num_firing", n.firing_count()},
                  {"num_resolved", n.resolved_count()}};
  if (n.resolved_count() > 0) details["resolved"] = alert_list(n, true, "- ", "\n");
  body["payload"] = {{"summary", summary},
                     {"source", std::string(source)},
                     {"severity", pagerduty_severity(n, pd)},
                     {"custom_details", std::move(details)}};
  const store::Labels common = n.common_labels();
  if (auto name = common.get("alertname"); !name.empty()) body["payload"]["class"] = std::string(name);
  body["client"] = pd.client;
  const std::string client_url = pd.client_url.empty() ? n.external_url : pd.client_url;
  if (!client_url.empty()) body["client_url"] = client_url;
  return body;
}

std::string email_message(const Notification& n, const EmailIntegration& email, std::string_view message_id_host) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::tm tm = utc(n.now_ms);
  std::string to;
  for (const std::string& addr : email.to) to += fmt::format("{}{}", to.empty() ? "" : ", ", header_text(addr));
  const std::string title = notification_title(n);
  std::string m;
  m += fmt::format("From: {}\r\n", header_text(email.from));
  m += fmt::format("To: {}\r\n", to);
  m += fmt::format("Subject: {}\r\n", header_text(title));
  m += fmt::format("Date: {}, {:02} {} {:04} {:02}:{:02}:{:02} +0000\r\n", kDays[tm.tm_wday], tm.tm_mday,
                   kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  m += fmt::format("Message-ID: <{}.{}@{}>\r\n", pagerduty_dedup_key(n.group_key), n.now_ms, message_id_host);
  m += "MIME-Version: 1.0\r\n";
  m += "Content-Type: text/plain; charset=UTF-8\r\n";
  m += "Content-Transfer-Encoding: 8bit\r\n";
  m += "\r\n";
  m += title + "\r\n";
  for (const bool resolved : {false, true}) {
    const std::size_t count = resolved ? n.resolved_count() : n.firing_count();
    if (count == 0) continue;
    m += fmt::format("\r\n{} ({}):\r\n", resolved ? "Resolved" : "Firing", count);
    for (const NotificationAlert& a : n.alerts) {
      if (n.resolved(a) != resolved) continue;
      std::string head(a.annotations.get("summary"));
      if (head.empty()) head = std::string(a.labels.get("alertname"));
      m += fmt::format("\r\n- {}\r\n", head);
      if (auto d = a.annotations.get("description"); !d.empty()) m += fmt::format("  {}\r\n", d);
      std::string labels;
      for (const store::Label& l : a.labels) labels += fmt::format("{}{}={}", labels.empty() ? "" : ", ", l.name, l.value);
      m += fmt::format("  Labels: {}\r\n", labels);
      m += fmt::format("  Started: {}\r\n", rfc3339(a.starts_at_ms));
      if (resolved) m += fmt::format("  Ended: {}\r\n", rfc3339(a.ends_at_ms));
      if (!a.generator_url.empty()) m += fmt::format("  Source: {}\r\n", a.generator_url);
    }
  }
  m += n.external_url.empty() ? "\r\n-- \r\nSent by gpuscope\r\n" : fmt::format("\r\n-- \r\nSent by gpuscope ({})\r\n", n.external_url);
  // Bare LFs inside annotation text would break SMTP's line rules: normalize every line end to CRLF.
  std::string out;
  out.reserve(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] == '\n' && (i == 0 || m[i - 1] != '\r')) out.push_back('\r');
    if (m[i] == '\r' && (i + 1 >= m.size() || m[i + 1] != '\n')) {
      out += "\r\n";
      continue;
    }
    out.push_back(m[i]);
  }
  return out;
}

}  // namespace gpuscope::notify
