// gzip for HTTP responses (zlib): scrapes that send Accept-Encoding: gzip get a compressed body.
#pragma once

#include <string>
#include <string_view>

namespace gpuscope::http {

// Whether an Accept-Encoding header accepts gzip (and does not refuse it with q=0).
bool accepts_gzip(std::string_view accept_encoding);

// The gzip member (RFC 1952) of `data`; level 1: /metrics compresses ~10x at that level already.
std::string gzip_compress(std::string_view data);

}  // namespace gpuscope::http
