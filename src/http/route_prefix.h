// --web.route-prefix: every route of the agent answered below a path prefix ("/gpuscope/metrics"), as
// Prometheus's flag of that name does, for a reverse proxy that forwards a path of a shared host.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "http/http_server.h"

namespace gpuscope::http {

// "/gpuscope", "/gpuscope/" or "gpuscope" → "/gpuscope"; "" and "/" → "" (no prefix). A one-line error for
// a prefix a URL path cannot hold as is (spaces, '?', '#', '%', "..", empty segments).
std::expected<std::string, std::string> normalize_route_prefix(std::string_view text);

// `inner` answered below `prefix` (normalized, non-empty): PREFIX/x reaches `inner` as /x; `/` and PREFIX
// redirect to PREFIX/ (where the dashboard's relative links resolve); anything else is a 404 that
// names the prefix.
HttpHandler with_route_prefix(std::string prefix, HttpHandler inner);

}  // namespace gpuscope::http
