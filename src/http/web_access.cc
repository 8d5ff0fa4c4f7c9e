#include "http/web_access.h"

#include <fmt/format.h>

namespace gpuscope::http {
namespace {

Refusal refusal_of(AuthRefusal r) {
  switch (r) {
    case AuthRefusal::kMissingCredentials: return Refusal::kMissingCredentials;
    case AuthRefusal::kMalformedCredentials: return Refusal::kMalformedCredentials;
    case AuthRefusal::kUnknownUser: return Refusal::kUnknownUser;
    case AuthRefusal::kWrongPassword:
    case AuthRefusal::kNone: break;
  }
  return Refusal::kWrongPassword;
}

}  // namespace

std::string_view refusal_name(Refusal r) {
  switch (r) {
    case Refusal::kMissingCredentials: return "missing_credentials";
    case Refusal::kMalformedCredentials: return "malformed_credentials";
    case Refusal::kUnknownUser: return "unknown_user";
    case Refusal::kWrongPassword: return "wrong_password";
    case Refusal::kTlsHandshake: return "tls_handshake";
    case Refusal::kCount: break;
  }
  return "?";
}

WebAccess::WebAccess(const WebConfig& config, std::string route_prefix, log::Logger& log)
    : route_prefix_(std::move(route_prefix)), log_(log) {
  apply(config);
}

void WebAccess::apply(const WebConfig& config) {
  auto rules = std::make_shared<Rules>();
  rules->headers = config.headers;
  for (const auto& p : config.auth_excluded_paths) {
    rules->excluded_paths.push_back(p);
    if (!route_prefix_.empty()) rules->excluded_paths.push_back(route_prefix_ + p);
  }
  rules->users = config.basic_auth_users;
  if (!config.basic_auth_users.empty()) {
    const auto previous = rules_.load();
    // The same users and hashes keep their authenticator and so its cache: a reload for a certificate
    // does not make every scraper pay a bcrypt again.
    if (previous && previous->auth && previous->users == config.basic_auth_users) {
      rules->auth = previous->auth;
    } else {
      rules->auth = std::make_shared<BasicAuthenticator>(config.basic_auth_users);
    }
  }
  rules_.store(std::move(rules));
}

HttpHandler WebAccess::wrap(HttpHandler inner) {
  return [this, inner = std::move(inner)](const HttpRequest& r) { return handle(inner, r); };
}

HttpResponse WebAccess::handle(const HttpHandler& inner, const HttpRequest& request) {
  const auto rules = rules_.load();
  HttpResponse response;
  bool excluded = false;
  for (const auto& p : rules->excluded_paths) excluded = excluded || request.path() == p;
  AuthOutcome outcome;
  if (rules->auth && !excluded) outcome = rules->auth->check(request.header("Authorization"));
  if (outcome.ok()) {
    response = inner(request);
  } else {
    const Refusal reason = refusal_of(outcome.refusal);
    count(reason);
    // The user as sent (it may be a typo of a real one); the password never.
    log_.warn("request refused", {{"reason", std::string(refusal_name(reason))},
                                  {"user", outcome.user},
                                  {"path", std::string(request.path())},
                                  {"remote", request.remote_address()}});
    response.status = 401;
    response.body = "401 Unauthorized\n";
    response.headers.emplace_back("WWW-Authenticate", fmt::format("Basic realm=\"{}\", charset=\"UTF-8\"", kRealm));
  }
  for (const auto& h : rules->headers) response.headers.push_back(h);
  return response;
}

void WebAccess::refused_connection(Refusal reason, std::string_view remote, std::string_view detail) {
  count(reason);
  log_.warn("connection refused", {{"reason", std::string(refusal_name(reason))},
                                   {"remote", std::string(remote)},
                                   {"detail", std::string(detail)}});
}

void WebAccess::write_metrics(exporter::ExpositionWriter& w) const {
  w.family("gpuscope_http_requests_refused_total", model::MetricType::kCounter,
           "Requests and connections the web config refused, by reason: missing_credentials, malformed_credentials, "
           "unknown_user, wrong_password (basic auth, answered 401), tls_handshake (plain HTTP to the TLS port, a "
           "missing or unverified client certificate, no common TLS version or cipher).");
  for (std::size_t i = 0; i < static_cast<std::size_t>(Refusal::kCount); ++i) {
    exporter::LabelSet l;
    l.add("reason", refusal_name(static_cast<Refusal>(i)));
    w.sample("gpuscope_http_requests_refused_total", l.text(), static_cast<double>(refused_[i].load()));
  }
  w.family("gpuscope_web_config_reloads_total", model::MetricType::kCounter,
           "Re-reads of --web.config.file after it or a file it names changed, by result (failure: the previous "
           "settings stay).");
  for (const auto& [result, count] : {std::pair{"success", &reloads_ok_}, std::pair{"failure", &reloads_failed_}}) {
    exporter::LabelSet l;
    l.add("result", result);
    w.sample("gpuscope_web_config_reloads_total", l.text(), static_cast<double>(count->load()));
  }
  w.family("gpuscope_web_config_last_reload_successful", model::MetricType::kGauge,
           "1 when the last re-read of --web.config.file succeeded (or there was none), 0 when the agent serves with "
           "the settings before it.");
  w.sample("gpuscope_web_config_last_reload_successful", "", last_reload_ok_.load() ? 1 : 0);
}

}  // namespace gpuscope::http
