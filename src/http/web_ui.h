// WebUi: the agent's web dashboard, `/` and `/static/*`: the page and its scripts and styles as embedded
// at build time (web_assets.h), gzip on request, revalidated by ETag. The page reads the agent's own APIs
// (/api/v1/gpus, query_range, diagnosis, alerts) with relative URLs, so it works behind a route prefix
// or a proxy's path; nothing here reads NVML or changes state.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "http/http_server.h"
#include "http/web_assets.h"

namespace gpuscope::http {

class WebUi {
 public:
  static bool handles(std::string_view path) { return path == "/" || path.starts_with("/static/"); }

  HttpResponse handle(const HttpRequest& request);

  // The Content-Security-Policy every dashboard file is sent with: scripts, styles and API calls from the
  // agent only (uPlot sets element styles from script, which CSP allows; no inline <script>).
  static constexpr const char* kContentSecurityPolicy =
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
      "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

 private:
  // A file's gzip, made on its first request that accepts gzip and kept.
  std::shared_ptr<const std::string> compressed(const EmbeddedFile& file);

  std::mutex mu_;
  std::unordered_map<std::string_view, std::shared_ptr<const std::string>> gzip_;
};

// The embedded file `name`, or nullptr.
const EmbeddedFile* find_web_file(std::string_view name);

}  // namespace gpuscope::http
