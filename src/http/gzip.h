// gzip for HTTP responses (zlib): scrapes that send Accept-Encoding: gzip get a compressed body.
#pragma once

#include <string>
#include <string_view>

#include "http/http_server.h"

namespace gpuscope::http {

// Whether an Accept-Encoding header accepts gzip (and does not refuse it with q=0).
bool accepts_gzip(std::string_view accept_encoding);

// The gzip member (RFC 1952) of `data`; level 1: /metrics compresses ~10x at that level already.
std::string gzip_compress(std::string_view data);

// A JSON answer of 1 KiB or more, not already encoded, gzipped when `request` accepts it (the API's
// answers: a dashboard's first 15-minute query_range is megabytes of JSON, ~10x less compressed).
void gzip_json_if_accepted(const HttpRequest& request, HttpResponse& response);

}  // namespace gpuscope::http
