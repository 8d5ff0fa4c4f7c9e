// CurlSender: sends one prepared notification with libcurl, an HTTP POST or an SMTP mail, under a hard
// per-request timeout, and says whether a failure is worth retrying. Errors never contain the URL.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <string>
#include <variant>
#include <vector>

#include "notify/notify_config.h"

namespace gpuscope::notify {

struct HttpPost {
  Secret url;  // webhook URLs are credentials
  std::string body;
  std::string content_type = "application/json";
  std::int64_t timeout_ms = 10'000;
};

struct SmtpMail {
  std::string url;  // smtp://host:port[/hello] or smtps://
  std::string from;
  std::vector<std::string> to;
  std::string username;  // empty: no AUTH
  Secret password;
  bool require_tls = true;
  std::string message;  // headers and body, CRLF line ends
  std::int64_t timeout_ms = 30'000;
};

using OutgoingRequest = std::variant<HttpPost, SmtpMail>;

struct SendError {
  std::string message;  // one line: "HTTP 500: <first bytes of the body>", "Timeout was reached", ...
  bool retryable = true;  // 4xx (but 408 and 429) is not: the same request would fail again
};

// Blocks for at most the request's timeout; `abort` (may be null) cuts it short from another thread.
// Loads libcurl on first use (curl_library.h); when it cannot be loaded, a failure not worth retrying.
std::expected<void, SendError> send_request(const OutgoingRequest& request, const std::atomic<bool>* abort);

}  // namespace gpuscope::notify
