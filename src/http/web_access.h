// WebAccess: what `serve --web.config.file` asks of every HTTP request, in front of all routes
// (/metrics, the APIs, events, the dashboard): the basic-auth check (401 with a Basic challenge, save
// for auth_excluded_paths) and the configured headers on every answer, 401s included. Refusals are
// counted by reason (gpuscope_http_requests_refused_total) and logged with the user name, never the
// password. The rules can be swapped while serving (the web config re-read); a request sees one set.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "export/exposition_writer.h"
#include "http/basic_auth.h"
#include "http/http_server.h"
#include "http/web_config.h"
#include "log/logger.h"

namespace gpuscope::http {

// Why a request or connection was refused: the `reason` label.
enum class Refusal : std::size_t {
  kMissingCredentials,
  kMalformedCredentials,
  kUnknownUser,
  kWrongPassword,
  kTlsHandshake,  // plain HTTP to the TLS port, no or a bad client certificate, no common version/cipher
  kCount,
};
std::string_view refusal_name(Refusal r);

class WebAccess {
 public:
  // The realm of the 401's challenge.
  static constexpr std::string_view kRealm = "gpuscope";

  // `route_prefix` (normalized, may be empty): auth_excluded_paths also match below it.
  WebAccess(const WebConfig& config, std::string route_prefix, log::Logger& log);

  // From now on requests are checked against `config` (a reload); a verified-password cache is kept
  // for users whose hash did not change.
  void apply(const WebConfig& config);
  // `inner` behind the checks. The WebAccess must outlive the handler.
  HttpHandler wrap(HttpHandler inner);
  // Counts a refusal seen below HTTP (the TLS layer), and logs it.
  void refused_connection(Refusal reason, std::string_view remote, std::string_view detail);

  // A re-read of the web config, for gpuscope_web_config_reloads_total and _last_reload_successful.
  void reloaded(bool success) {
    (success ? reloads_ok_ : reloads_failed_).fetch_add(1, std::memory_order_relaxed);
    last_reload_ok_.store(success, std::memory_order_relaxed);
  }

  std::uint64_t refused(Refusal reason) const { return refused_[static_cast<std::size_t>(reason)].load(); }
  void write_metrics(exporter::ExpositionWriter& w) const;

 private:
  struct Rules {
    std::shared_ptr<BasicAuthenticator> auth;  // null: no basic_auth_users
    std::vector<std::pair<std::string, std::string>> headers;
    std::vector<std::string> excluded_paths;   // with and without the route prefix
    std::vector<std::pair<std::string, std::string>> users;  // what `auth` was built from
  };
  HttpResponse handle(const HttpHandler& inner, const HttpRequest& request);
  void count(Refusal reason) { refused_[static_cast<std::size_t>(reason)].fetch_add(1, std::memory_order_relaxed); }

  std::string route_prefix_;
  log::Logger& log_;
  std::atomic<std::shared_ptr<const Rules>> rules_;
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Refusal::kCount)> refused_{};
  std::atomic<std::uint64_t> reloads_ok_{0}, reloads_failed_{0};
  std::atomic<bool> last_reload_ok_{true};
};

}  // namespace gpuscope::http
