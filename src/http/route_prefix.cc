#include "http/route_prefix.h"

#include <fmt/format.h>

namespace gpuscope::http {

std::expected<std::string, std::string> normalize_route_prefix(std::string_view text) {
  std::string p(text);
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (p.empty()) return std::string();
  if (p.front() != '/') p.insert(p.begin(), '/');
  for (const char c : p) {
    if (c <= ' ' || c == '?' || c == '#' || c == '%' || c == '\\' || c == '"' || c == '<' || c == '>' ||
        static_cast<unsigned char>(c) >= 0x7f) {
      return std::unexpected(fmt::format("invalid --web.route-prefix '{}': a URL path without spaces, quotes, "
                                         "'?', '#' or '%' (such as /gpuscope)", text));
    }
  }
  if (p.find("//") != std::string::npos || p.find("/../") != std::string::npos || p.ends_with("/..") ||
      p.find("/./") != std::string::npos || p.ends_with("/.")) {
    return std::unexpected(fmt::format("invalid --web.route-prefix '{}': empty, '.' or '..' path segments", text));
  }
  return p;
}

HttpHandler with_route_prefix(std::string prefix, HttpHandler inner) {
  return [prefix = std::move(prefix), inner = std::move(inner)](const HttpRequest& request) -> HttpResponse {
    const auto path = request.path();
    if (path == "/" || path == prefix) {
      HttpResponse r{302, "text/plain; charset=utf-8", fmt::format("see {}/\n", prefix), {}, nullptr};
      r.headers.emplace_back("Location", prefix + "/");
      return r;
    }
    if (path.size() > prefix.size() && path.starts_with(prefix) && path[prefix.size()] == '/') {
      return inner(request.with_path(path.substr(prefix.size())));
    }
    return {404, "text/plain; charset=utf-8",
            fmt::format("404 not found: {} (this agent answers below {}/)\n", path, prefix), {}, nullptr};
  };
}

}  // namespace gpuscope::http
