// A client of the kubelet's pod-resources API (gRPC over its Unix socket): one List call, cut at a deadline
// and cancellable from another thread. gRPC stays inside the .cc: this header is plain C++.
#pragma once

#include <chrono>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kubernetes/pod_allocation.h"

namespace gpuscope::kubernetes {

// list()'s error once cancel() was called: a stop, not a kubelet failure worth a log line.
inline constexpr std::string_view kListCancelled = "cancelled";

class PodResourcesClient {
 public:
  // `socket_path`: the kubelet's socket, e.g. /var/lib/kubelet/pod-resources/kubelet.sock. Nothing is
  // connected until the first list().
  explicit PodResourcesClient(std::string socket_path);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // The kubelet's List, given up after `deadline`. The error says what failed ("deadline exceeded",
  // "connect failed", ...) in one line. One call at a time.
  std::expected<std::vector<PodAllocation>, std::string> list(std::chrono::milliseconds deadline);
  // Ends a list() in flight on another thread at once (it returns "cancelled"), and every later one: for a
  // stop that must not wait out a hung kubelet.
  void cancel();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpuscope::kubernetes
