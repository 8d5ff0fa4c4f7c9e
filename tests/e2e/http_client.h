// A minimal HTTP/1.1 client for the e2e tests, over loopback only: one request per connection
// (Connection: close), the raw request available for malformed-input tests.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace gpuscope::e2e {

struct HttpResult {
  int status = 0;  // 0: no response (connection failed, closed or timed out)
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  double seconds = 0;  // connect to last byte
};

// A TCP connection to 127.0.0.1:port (the caller closes it), or -1.
int connect_loopback(int port);

// Sends `raw` as is to 127.0.0.1:port and reads until the server closes or `timeout` passes.
HttpResult http_raw(int port, const std::string& raw, std::chrono::milliseconds timeout = std::chrono::seconds(10));

HttpResult http_get(int port, const std::string& path, const std::map<std::string, std::string>& headers = {},
                    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Decompresses a gzip body; empty on error.
std::string gunzip(const std::string& data);

}  // namespace gpuscope::e2e
