// A client of the kubelet's pod-resources API (gRPC over its Unix socket): one List call, cut at a deadline
// and cancellable from another thread. The gRPC part is a plugin loaded on first use
// (pod_resources_backend.h), so only an agent with --kubernetes maps gRPC's libraries.
#pragma once

#include <chrono>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kubernetes/pod_allocation.h"
#include "kubernetes/pod_resources_backend.h"

namespace gpuscope::kubernetes {

// list()'s error once cancel() was called: a stop, not a kubelet failure worth a log line.
inline constexpr std::string_view kListCancelled = "cancelled";

// Where the plugin is: env GPUSCOPE_POD_RESOURCES_LIB, else next to the running executable (build tree:
// <dir>/kubernetes/ or <dir>/../kubernetes/; installed: <dir>/../lib/gpuscope/). Empty when not found.
std::string pod_resources_plugin_path();

// Loads the plugin once per process (it stays loaded: gRPC's threads outlive any one client). The error
// names the file and dlopen's reason, in one line.
std::expected<MakePodResourcesBackend, std::string> load_pod_resources_plugin();

class PodResourcesClient {
 public:
  // `socket_path`: the kubelet's socket, e.g. /var/lib/kubelet/pod-resources/kubelet.sock. Nothing is
  // connected until the first list().
  explicit PodResourcesClient(std::string socket_path);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // The kubelet's List, given up after `deadline`: the pods, each container with its NVIDIA devices only.
  // The error says what failed ("deadline exceeded", "connect failed", the plugin that did not load, ...)
  // in one line. One call at a time.
  std::expected<std::vector<PodAllocation>, std::string> list(std::chrono::milliseconds deadline);
  // Ends a list() in flight on another thread at once (it returns "cancelled"), and every later one: for a
  // stop that must not wait out a hung kubelet.
  void cancel();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpuscope::kubernetes
