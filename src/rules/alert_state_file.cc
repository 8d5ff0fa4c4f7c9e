#include "rules/alert_state_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/file_text.h"

namespace gpuscope::rules {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;

std::string rule_key(const RuleGroup& g, const RuleDefinition& r) {
  return fmt::format("{}\n{}\n{}\n{}", g.file(), g.name(), r.name, r.expr_text);
}

json labels_json(const store::Labels& labels) {
  json out = json::object();
  for (const store::Label& l : labels) out[l.name] = l.value;
  return out;
}

store::Labels labels_from(const json& j) {
  std::vector<store::Label> items;
  for (auto it = j.begin(); it != j.end(); ++it) items.push_back({it.key(), it.value().get<std::string>()});
  return store::Labels(std::move(items));
}

AlertState state_from(const std::string& s) {
  if (s == "firing") return AlertState::kFiring;
  if (s == "pending") return AlertState::kPending;
  return AlertState::kInactive;
}

}  // namespace

std::expected<void, std::string> AlertStateFile::save(const RuleManager& manager, std::int64_t now_ms, bool force) {
  json rules = json::array();
  manager.visit([&](const std::vector<RuleGroup>& groups) {
    for (const RuleGroup& g : groups) {
      for (const RuleGroup::Rule& r : g.rules()) {
        const auto* alerting = std::get_if<AlertingRule>(&r.rule);
        if (alerting == nullptr) continue;
        json alerts = json::array();
        for (const Alert& a : alerting->alerts()) {
          alerts.push_back({{"labels", labels_json(a.labels)},
                            {"state", alert_state_name(a.state)},
                            {"active_at_ms", a.active_at_ms},
                            {"fired_at_ms", a.fired_at_ms},
                            {"resolved_at_ms", a.resolved_at_ms},
                            {"last_sent_at_ms", a.last_sent_at_ms},
                            {"valid_until_ms", a.valid_until_ms},
                            {"keep_firing_since_ms", a.keep_firing_since_ms}});
        }
        if (alerts.empty()) continue;
        rules.push_back({{"key", rule_key(g, r.definition())}, {"alerts", std::move(alerts)}});
      }
    }
  });
  const std::string body = rules.dump();
  if (body == last_saved_ && !force) return {};
  const json file = {{"version", kFormatVersion}, {"saved_at_ms", now_ms}, {"rules", json::parse(body)}};
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << file.dump() << '\n';
    out.flush();
    if (!out) return std::unexpected(fmt::format("cannot write {}", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path_, ec);
  if (ec) return std::unexpected(fmt::format("cannot replace {}: {}", path_, ec.message()));
  last_saved_ = body;
  return {};
}

std::expected<std::size_t, std::string> AlertStateFile::restore(RuleManager& manager, std::int64_t now_ms) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec) && !ec) return 0;  // a first start: nothing to restore
  const auto text = model::read_file_text(path_);
  if (!text) return std::unexpected(fmt::format("{}: cannot be read: {}", path_, text.error()));
  const json file = json::parse(*text, nullptr, false);
  if (file.is_discarded() || !file.is_object() || file.value("version", 0) != kFormatVersion ||
      !file.contains("saved_at_ms") || !file["saved_at_ms"].is_number_integer() || !file.contains("rules") ||
      !file["rules"].is_array()) {
    return std::unexpected(fmt::format("{}: not an alert state file of this version", path_));
  }
  const std::int64_t saved_at = file["saved_at_ms"].get<std::int64_t>();
  const std::int64_t down_ms = now_ms - saved_at;
  if (down_ms > kAlertStateOutageToleranceMs || down_ms < 0) return 0;

  // Everything is read before anything is restored: a damaged file restores nothing.
  std::map<std::string, std::vector<Alert>> saved;
  try {
    for (const json& r : file["rules"]) {
      std::vector<Alert>& alerts = saved[r.at("key").get<std::string>()];
      for (const json& a : r.at("alerts")) {
        Alert alert;
        alert.labels = labels_from(a.at("labels"));
        alert.state = state_from(a.at("state").get<std::string>());
        alert.active_at_ms = a.at("active_at_ms").get<std::int64_t>();
        alert.fired_at_ms = a.at("fired_at_ms").get<std::int64_t>();
        alert.resolved_at_ms = a.at("resolved_at_ms").get<std::int64_t>();
        alert.last_sent_at_ms = a.at("last_sent_at_ms").get<std::int64_t>();
        alert.valid_until_ms = a.at("valid_until_ms").get<std::int64_t>();
        alert.keep_firing_since_ms = a.at("keep_firing_since_ms").get<std::int64_t>();
        // Down time is not time the condition was seen to hold.
        if (alert.state == AlertState::kPending) alert.active_at_ms += down_ms;
        alerts.push_back(std::move(alert));
      }
    }
  } catch (const json::exception& e) {
    return std::unexpected(fmt::format("{}: damaged alert state: {}", path_, e.what()));
  }
  std::size_t restored = 0;
  manager.update([&](std::vector<RuleGroup>& groups) {
    for (RuleGroup& g : groups) {
      for (RuleGroup::Rule& r : g.rules()) {
        auto* alerting = std::get_if<AlertingRule>(&r.rule);
        if (alerting == nullptr) continue;
        auto it = saved.find(rule_key(g, r.definition()));
        if (it == saved.end()) continue;
        restored += it->second.size();
        alerting->restore(std::move(it->second));
        saved.erase(it);
      }
    }
  });
  return restored;
}

}  // namespace gpuscope::rules
