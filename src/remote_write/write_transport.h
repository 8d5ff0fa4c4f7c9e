// WriteTransport: how a request body reaches a receiver. CurlWriteTransport POSTs it with libcurl
// (loaded on first use, as notifications load it) over one kept-alive connection; tests put a fake in.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "remote_write/receiver_config.h"

namespace gpuscope::remote_write {

struct PostResult {
  int status = 0;       // the HTTP status; 0: no response (connection refused, timeout, ...)
  std::string error;    // one line, no credentials: libcurl's message or the first bytes of the body
  std::optional<std::chrono::milliseconds> retry_after;  // a 429's or 503's Retry-After (seconds form)
};

class WriteTransport {
 public:
  virtual ~WriteTransport() = default;
  // Sends one snappy-compressed WriteRequest; blocks for at most the receiver's remote_timeout.
  virtual PostResult post(const std::string& body) = 0;
};

// `abort` (may be null) cuts a request in flight short from another thread (the agent stopping).
std::unique_ptr<WriteTransport> make_curl_transport(const ReceiverConfig& receiver, std::string user_agent,
                                                    const std::atomic<bool>* abort);

}  // namespace gpuscope::remote_write
