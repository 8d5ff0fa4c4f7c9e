// ProcessResolver: who a pid on a GPU is (name, command line, user, container id), read from /proc.
// A pid outside this PID namespace is reported as not visible rather than dropped.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "model/snapshot.h"

namespace gpuscope::nvml {

class ProcessResolver {
 public:
  // `fallback` answers for pids the simulator owns (name, user): it is asked before /proc; may be empty.
  explicit ProcessResolver(std::string proc_root,
                           std::function<std::optional<model::ProcessIdentity>(unsigned)> fallback = {});

  model::ProcessIdentity resolve(unsigned pid);

  // Drops cached identities of pids not in `live` (called once per sample, so a reused pid is re-read).
  void retain_only(const std::vector<unsigned>& live);

  // The container id in a /proc/<pid>/cgroup text: the last 64-hex-digit path component (docker,
  // containerd, CRI-O, podman, kubepods), or empty.
  static std::string container_id_from_cgroup(const std::string& cgroup_text);
  // The Kubernetes pod UID in a cgroup path (the kubelet's "pod<uid>" cgroup: "/kubepods/burstable/pod<uid>/"
  // under cgroupfs, "kubepods-burstable-pod<uid with _>.slice" under systemd), with dashes; empty outside a pod.
  static std::string pod_uid_from_cgroup(const std::string& cgroup_text);

 private:
  model::ProcessIdentity read(unsigned pid) const;

  std::string proc_root_;
  std::function<std::optional<model::ProcessIdentity>(unsigned)> fallback_;
  std::unordered_map<unsigned, model::ProcessIdentity> cache_;
};

}  // namespace gpuscope::nvml
