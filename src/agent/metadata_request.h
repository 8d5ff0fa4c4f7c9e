// One HTTP request to a cloud's instance metadata service, through the libcurl the notifier opens with
// dlopen: a GET or PUT with headers, a hard timeout, a bounded body, and a cancel that ends it from another
// thread at once, so a silent endpoint never holds up the agent's stop.
#pragma once

#include <atomic>
#include <chrono>
#include <expected>
#include <mutex>
#include <string>
#include <vector>

namespace gpuscope::agent {

// Ends the requests made with it, now and later. A request blocked on a silent endpoint would otherwise
// notice a flag only at libcurl's next progress call (up to a second away): its sockets are shut down,
// which wakes it at once.
class RequestCancel {
 public:
  void cancel();
  bool cancelled() const { return cancelled_.load(); }

  // For the request: a socket it opened (false: cancelled already, do not use it) and closes.
  bool opened(int fd);
  void closing(int fd);

 private:
  std::mutex mu_;
  std::atomic<bool> cancelled_{false};
  std::vector<int> sockets_;
};

// A metadata service answers in milliseconds; one that takes longer is as good as down, and a poll must
// never keep the agent's stop waiting.
inline constexpr std::chrono::milliseconds kDefaultMetadataTimeout{2000};

struct MetadataRequest {
  std::string method = "GET";  // GET or PUT (a PUT sends no body: IMDSv2's token request has none)
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::chrono::milliseconds timeout = kDefaultMetadataTimeout;  // connecting included
};

struct MetadataResponse {
  long status = 0;
  std::string body;  // at most kMaxMetadataBodyBytes; the rest is discarded
};

// Metadata answers are a word, a token or a small JSON object; a larger one is cut, never buffered.
inline constexpr std::size_t kMaxMetadataBodyBytes = 4096;

// The response, whatever its status, or one line saying why there was none ("Connection refused",
// "Operation timed out after 2001 milliseconds ...", "cancelled", "libcurl is not installed (...)").
// Never goes through a proxy from the environment: metadata services are link-local or in the cluster.
// Redirects are not followed. Blocks for at most the timeout; `cancel` (may be null) ends it sooner.
std::expected<MetadataResponse, std::string> perform_metadata_request(const MetadataRequest& request,
                                                                      RequestCancel* cancel);

}  // namespace gpuscope::agent
