#include "http/rules_api.h"

#include <charconv>
#include <chrono>
#include <cmath>

#include <nlohmann/json.hpp>

#include "export/timestamp_text.h"
#include "promql/ast.h"
#include "promql/lexer.h"

namespace gpuscope::http {
namespace {

using nlohmann::json;

HttpResponse json_body(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump();
  return r;
}

json labels_json(const store::Labels& labels) {
  json out = json::object();
  for (const store::Label& l : labels) out[l.name] = l.value;
  return out;
}

json time_json(std::int64_t ms) {
  if (ms == 0) return "0001-01-01T00:00:00Z";  // Go's zero time, as Prometheus prints "never"
  return exporter::iso_timestamp(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
}

// strconv.FormatFloat(v, 'e', -1, 64), the API's alert value: "9e+01", "1.5e+00".
std::string value_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  return std::string(buf, end);
}

json alert_json(const rules::Alert& a) {
  json out = {{"labels", labels_json(a.labels)},
              {"annotations", labels_json(a.annotations)},
              {"state", rules::alert_state_name(a.state)},
              {"activeAt", time_json(a.active_at_ms)},
              {"value", value_text(a.value)}};
  if (a.keep_firing_since_ms != 0) out["keepFiringSince"] = time_json(a.keep_firing_since_ms);
  return out;
}

json fields_json(const std::vector<rules::TemplatedField>& fields) {
  json out = json::object();
  for (const rules::TemplatedField& f : fields) out[f.name] = f.text;
  return out;
}

}  // namespace

bool RulesApi::handles(std::string_view path) { return path == "/api/v1/rules" || path == "/api/v1/alerts"; }

HttpResponse RulesApi::handle(const HttpRequest& request) const {
  if (request.method() != "GET" && request.method() != "POST") {
    HttpResponse r = json_body(405, {{"status", "error"}, {"errorType", "bad_data"}, {"error", "method not allowed"}});
    r.headers.emplace_back("Allow", "GET, POST");
    return r;
  }
  return request.path() == "/api/v1/rules" ? rules(request) : alerts();
}

HttpResponse RulesApi::rules(const HttpRequest& request) const {
  std::string type;
  for (const auto& [k, v] : request.query_arguments()) {
    if (k == "type") type = v;
  }
  if (!type.empty() && type != "alert" && type != "record") {
    return json_body(400, {{"status", "error"},
                           {"errorType", "bad_data"},
                           {"error", "invalid parameter \"type\": not supported value " + promql::go_quote(type)}});
  }
  json groups = json::array();
  if (rules_ != nullptr) {
    rules_->visit([&](const std::vector<rules::RuleGroup>& all) {
      for (const rules::RuleGroup& g : all) {
        json rules = json::array();
        for (const rules::RuleGroup::Rule& r : g.rules()) {
          const rules::RuleDefinition& d = r.definition();
          const bool alerting = d.kind == rules::RuleDefinition::Kind::kAlert;
          if ((type == "alert" && !alerting) || (type == "record" && alerting)) continue;
          json rule = {{"name", d.name},
                       {"query", promql::to_string(*d.expr)},
                       {"labels", fields_json(d.labels)},
                       {"health", rules::rule_health_name(r.status.health)},
                       {"lastError", r.status.last_error},
                       {"evaluationTime", r.status.evaluation_seconds},
                       {"lastEvaluation", time_json(r.status.last_evaluation_ms)}};
          if (r.status.last_error.empty()) rule.erase("lastError");
          if (alerting) {
            const auto& a = std::get<rules::AlertingRule>(r.rule);
            json alerts = json::array();
            rules::AlertState state = rules::AlertState::kInactive;
            for (const rules::Alert& alert : a.alerts()) {
              if (alert.state == rules::AlertState::kInactive) continue;
              alerts.push_back(alert_json(alert));
              state = std::max(state, alert.state);
            }
            rule["state"] = rules::alert_state_name(state);
            rule["duration"] = static_cast<double>(d.for_ms) / 1000.0;
            rule["keepFiringFor"] = static_cast<double>(d.keep_firing_for_ms) / 1000.0;
            rule["annotations"] = fields_json(d.annotations);
            rule["alerts"] = std::move(alerts);
            rule["type"] = "alerting";
          } else {
            rule["type"] = "recording";
          }
          rules.push_back(std::move(rule));
        }
        if (!type.empty() && rules.empty()) continue;
        groups.push_back({{"name", g.name()},
                          {"file", g.file()},
                          {"interval", static_cast<double>(g.interval_ms()) / 1000.0},
                          {"limit", g.definition().limit},
                          {"rules", std::move(rules)},
                          {"evaluationTime", g.last_evaluation_seconds()},
                          {"lastEvaluation", time_json(g.last_evaluation_ms())}});
      }
    });
  }
  return json_body(200, {{"status", "success"}, {"data", {{"groups", std::move(groups)}}}});
}

HttpResponse RulesApi::alerts() const {
  json alerts = json::array();
  if (rules_ != nullptr) {
    rules_->visit([&](const std::vector<rules::RuleGroup>& all) {
      for (const rules::RuleGroup& g : all) {
        for (const rules::RuleGroup::Rule& r : g.rules()) {
          const auto* a = std::get_if<rules::AlertingRule>(&r.rule);
          if (a == nullptr) continue;
          for (const rules::Alert& alert : a->alerts()) {
            if (alert.state != rules::AlertState::kInactive) alerts.push_back(alert_json(alert));
          }
        }
      }
    });
  }
  return json_body(200, {{"status", "success"}, {"data", {{"alerts", std::move(alerts)}}}});
}

}  // namespace gpuscope::http
