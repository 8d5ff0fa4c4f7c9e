// What the agent asks of the pod-resources plugin (libgpuscope_pod_resources.so, src/kubernetes/grpc/):
// gRPC and the ~50 shared libraries under it (OpenSSL, Abseil, c-ares) are loaded by `serve --kubernetes`
// alone, not by every verb (a `gpuscope trace` loads no network library at all). The plugin is built with
// the binary by the same compiler, so the interface is plain C++.
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <vector>

#include "kubernetes/pod_allocation.h"

namespace gpuscope::kubernetes {

class PodResourcesBackend {
 public:
  virtual ~PodResourcesBackend() = default;
  // The kubelet's List, given up after `deadline`: every pod with every device of its containers (the
  // caller keeps the GPUs). The error is one line; kListCancelled once cancel() was called.
  virtual std::expected<std::vector<PodAllocation>, std::string> list(std::chrono::milliseconds deadline) = 0;
  // Ends a list() in flight on another thread at once, and every later one.
  virtual void cancel() = 0;
};

// The plugin's one export: a backend for the kubelet socket `socket_path`, owned by the caller.
using MakePodResourcesBackend = PodResourcesBackend* (*)(const char* socket_path);
inline constexpr const char* kMakePodResourcesBackendSymbol = "gpuscope_make_pod_resources_backend";
inline constexpr const char* kPodResourcesPluginName = "libgpuscope_pod_resources.so";

}  // namespace gpuscope::kubernetes
