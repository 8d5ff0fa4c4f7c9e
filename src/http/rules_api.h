// RulesApi: Prometheus's /api/v1/rules and /api/v1/alerts over the agent's rule manager, in
// Prometheus's JSON shapes, so Grafana's alert views and scripts written for Prometheus read the agent.
#pragma once

#include <string_view>

#include "http/http_server.h"
#include "rules/rule_manager.h"

namespace gpuscope::http {

class RulesApi {
 public:
  // `rules` may be null (no --rules): both routes then answer with empty lists, as Prometheus does.
  explicit RulesApi(const rules::RuleManager* rules) : rules_(rules) {}

  static bool handles(std::string_view path);
  HttpResponse handle(const HttpRequest& request) const;

 private:
  HttpResponse rules(const HttpRequest& request) const;
  HttpResponse alerts() const;

  const rules::RuleManager* rules_;
};

}  // namespace gpuscope::http
