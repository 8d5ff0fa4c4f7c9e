#include "notify/notification.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpuscope::notify {
namespace {

store::Labels common(const std::vector<NotificationAlert>& alerts, store::Labels NotificationAlert::*field) {
  if (alerts.empty()) return {};
  std::vector<store::Label> shared;
  for (const store::Label& l : (alerts.front().*field).items()) {
    const bool everywhere = std::all_of(alerts.begin() + 1, alerts.end(), [&](const NotificationAlert& a) {
      return (a.*field).has(l.name) && (a.*field).get(l.name) == l.value;
    });
    if (everywhere) shared.push_back(l);
  }
  return store::Labels(std::move(shared));
}

}  // namespace

NotificationAlert notification_alert(const rules::Alert& alert, std::string generator_url) {
  NotificationAlert out;
  out.labels = alert.labels;
  out.annotations = alert.annotations;
  out.value = alert.value;
  out.starts_at_ms = alert.fired_at_ms > 0 ? alert.fired_at_ms : alert.active_at_ms;
  const bool resolved = alert.state == rules::AlertState::kInactive && alert.resolved_at_ms > 0;
  out.ends_at_ms = resolved ? alert.resolved_at_ms : alert.valid_until_ms;
  out.generator_url = std::move(generator_url);
  return out;
}

std::string query_escape(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string generator_url(std::string_view external_url, std::string_view expr) {
  if (expr.empty()) return "";
  while (external_url.ends_with('/')) external_url.remove_suffix(1);
  return fmt::format("{}/graph?g0.expr={}&g0.tab=1", external_url, query_escape(expr));
}

std::uint64_t labels_fingerprint(const store::Labels& labels) {
  // Prometheus's model.LabelSet.Fingerprint: FNV-1a 64 with a 0xff byte after every name and value.
  constexpr std::uint64_t kOffset = 14695981039346656037ULL;
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  if (labels.empty()) return kOffset;
  std::uint64_t h = kOffset;
  const auto add = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= kPrime;
    }
    h ^= 0xff;
    h *= kPrime;
  };
  for (const store::Label& l : labels) {
    add(l.name);
    add(l.value);
  }
  return h;
}

std::string fingerprint_text(const store::Labels& labels) { return fmt::format("{:016x}", labels_fingerprint(labels)); }

std::size_t Notification::firing_count() const {
  return static_cast<std::size_t>(std::count_if(alerts.begin(), alerts.end(), [&](const auto& a) { return !resolved(a); }));
}

std::size_t Notification::resolved_count() const { return alerts.size() - firing_count(); }

store::Labels Notification::common_labels() const { return common(alerts, &NotificationAlert::labels); }
store::Labels Notification::common_annotations() const { return common(alerts, &NotificationAlert::annotations); }

}  // namespace gpuscope::notify
