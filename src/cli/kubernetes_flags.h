// `serve`'s Kubernetes flags (--kubernetes, --kubernetes.pod-resources-socket, --kubernetes.refresh-interval):
// whether GPU series get dcgm-exporter's pod, namespace and container labels from the kubelet, and how it
// is asked. Checked while the arguments are parsed: a bad value is a usage error.
#pragma once

#include <expected>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "kubernetes/pod_resources_watcher.h"

namespace gpuscope::cli {

struct KubernetesFlags {
  bool enabled = false;
  std::string socket;            // empty: the kubelet's default place
  std::string refresh_interval;  // empty: the default
  std::string gpu_id_type;       // dcgm-exporter's --kubernetes-gpu-id-type: "uid", "device-name" or empty (both are matched)
};

void add_kubernetes_flags(CLI::App& app, KubernetesFlags& flags);

// No --kubernetes: nullopt. Errors are one line naming the flag and the value.
std::expected<std::optional<kubernetes::PodResourcesOptions>, std::string> select_kubernetes(const KubernetesFlags& flags);

}  // namespace gpuscope::cli
