#include "cli/kubernetes_flags.h"

#include <algorithm>

#include <fmt/format.h>

#include "cli/invocation.h"

namespace gpuscope::cli {
namespace {

// A List a second is already more than any kubelet needs (pods start in seconds); an hour is the longest a
// pod's labels may lag its GPUs and still be worth having.
constexpr auto kMinKubernetesRefresh = std::chrono::seconds(1);
constexpr auto kMaxKubernetesRefresh = std::chrono::hours(1);
// The last good map outlives a failing kubelet by this many refresh intervals, and at least a minute.
constexpr int kKeepStaleRefreshes = 6;
constexpr auto kMinKeepStale = std::chrono::seconds(60);
// sockaddr_un's sun_path holds 108 bytes with the terminating NUL.
constexpr std::size_t kMaxUnixSocketPath = 107;

}  // namespace

void add_kubernetes_flags(CLI::App& app, KubernetesFlags& flags) {
  app.add_flag("--kubernetes", flags.enabled,
               "add dcgm-exporter's pod, namespace and container labels to each GPU's series, from the kubelet's "
               "pod-resources API (GPUs allocated to no container keep their series without them)");
  app.add_option("--kubernetes.pod-resources-socket", flags.socket,
                 fmt::format("the kubelet's pod-resources socket (default {})", kubernetes::kDefaultPodResourcesSocket))
      ->type_name("PATH");
  app.add_option("--kubernetes.refresh-interval", flags.refresh_interval,
                 "ask the kubelet this often, 1s to 1h (default 10s); off the reading and scrape path")
      ->type_name("DURATION");
  // dcgm-exporter's flag, so its DaemonSet arguments carry over. Both namings are matched whatever it says:
  // a UUID and a device name ("nvidia0") cannot be mistaken for each other.
  app.add_option("--kubernetes-gpu-id-type", flags.gpu_id_type,
                 "how the kubelet names GPUs: uid (NVIDIA's device plugin: GPU-/MIG- UUIDs) or device-name (GKE's: "
                 "nvidia0, nvidia0/gi2); gpuscope matches both either way")
      ->type_name("uid|device-name");
}

std::expected<std::optional<kubernetes::PodResourcesOptions>, std::string> select_kubernetes(const KubernetesFlags& flags) {
  if (!flags.gpu_id_type.empty() && flags.gpu_id_type != "uid" && flags.gpu_id_type != "device-name") {
    return std::unexpected(
        fmt::format("invalid value '{}' for --kubernetes-gpu-id-type (uid or device-name)", flags.gpu_id_type));
  }
  if (!flags.enabled) {
    if (!flags.socket.empty() || !flags.refresh_interval.empty()) {
      return std::unexpected("the --kubernetes.* flags need --kubernetes");
    }
    return std::nullopt;
  }
  kubernetes::PodResourcesOptions o;
  if (!flags.socket.empty()) {
    // A path only; whether the kubelet is there is the watcher's to find out, and to keep finding out.
    if (flags.socket.front() != '/' || flags.socket.find('\0') != std::string::npos ||
        flags.socket.size() > kMaxUnixSocketPath) {
      return std::unexpected(fmt::format(
          "invalid value '{}' for --kubernetes.pod-resources-socket (an absolute path, at most {} bytes)", flags.socket,
          kMaxUnixSocketPath));
    }
    o.socket_path = flags.socket;
  }
  if (!flags.refresh_interval.empty()) {
    auto d = parse_duration(flags.refresh_interval);
    if (!d || *d < kMinKubernetesRefresh || *d > kMaxKubernetesRefresh) {
      return std::unexpected(
          fmt::format("invalid value '{}' for --kubernetes.refresh-interval (1s to 1h, e.g. 10s)", flags.refresh_interval));
    }
    o.refresh_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  }
  o.keep_stale = std::max<std::chrono::milliseconds>(o.refresh_interval * kKeepStaleRefreshes, kMinKeepStale);
  return o;
}

}  // namespace gpuscope::cli
