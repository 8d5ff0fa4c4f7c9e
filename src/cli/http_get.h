// A plain HTTP GET for the verbs that ask a running agent or a Prometheus (eval, diagnose --url):
// libcurl (loaded when first needed), one time limit for connecting and reading, and a printable
// excerpt of an answer that is not what was expected.
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <string_view>

namespace gpuscope::cli {

// What came back over HTTP.
struct HttpAnswer {
  long status = 0;
  std::string content_type;
  std::string body;
};

// GETs `url` within `timeout` (connecting included); the answer, whatever its status, or a one-line
// transport error that names the URL.
std::expected<HttpAnswer, std::string> http_get(const std::string& url, std::chrono::milliseconds timeout);

// At most 120 bytes of a body on one line, every byte outside printable ASCII escaped: enough to tell an
// HTML error page or a proxy's message from an API answer without dumping it.
std::string body_excerpt(std::string_view body);

}  // namespace gpuscope::cli
