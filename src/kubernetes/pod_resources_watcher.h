// PodResourcesWatcher: serve --kubernetes' view of which container holds each GPU. A thread of its own asks
// the kubelet (pod-resources List, cut at a deadline) every refresh interval and swaps in a new immutable
// map; readers (each GPU reading, each scrape) only load the latest map, so a kubelet that is slow, hung
// or gone never delays a reading or a scrape. While List fails the last map is kept for `keep_stale`, then
// dropped (no pod labels rather than wrong ones); each change of state is logged once and counted.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "export/exposition_writer.h"
#include "kubernetes/pod_allocation.h"
#include "kubernetes/pod_resources_client.h"
#include "log/logger.h"
#include "model/clock.h"

namespace gpuscope::kubernetes {

inline constexpr std::string_view kDefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";
// How long the agent's start waits for the first answer, so that the first reading (and scrape) already has
// the labels: a List is a fraction of a millisecond; a hung kubelet delays the start by this much at most.
inline constexpr std::chrono::milliseconds kFirstRefreshWait{1000};

struct PodResourcesOptions {
  std::string socket_path{kDefaultPodResourcesSocket};
  // dcgm-exporter asks at every scrape (15 s in most setups); pods start in seconds, so 10 s keeps the
  // labels of a new pod about one scrape late, at one List a refresh.
  std::chrono::milliseconds refresh_interval = std::chrono::seconds(10);
  // One List on a healthy kubelet is a millisecond (bench/); two seconds is a kubelet in trouble.
  std::chrono::milliseconds deadline = std::chrono::seconds(2);
  // How long the last good map outlives a failing kubelet. A kubelet restart takes seconds and pods keep
  // their GPUs meanwhile; past a minute the map may name pods long gone.
  std::chrono::milliseconds keep_stale = std::chrono::seconds(60);
};

struct PodResourcesStats {
  std::uint64_t refreshes = 0;  // List calls made
  std::uint64_t failures = 0;   // of which failed
  std::optional<std::chrono::system_clock::time_point> last_success;
  std::chrono::nanoseconds last_duration{0};  // the last List round trip and map build
  std::size_t pods = 0;                       // pods holding an NVIDIA device, in the map in use
  std::string last_error;                     // empty while the last refresh succeeded
};

class PodResourcesWatcher {
 public:
  // Clock and logger must outlive the watcher.
  PodResourcesWatcher(PodResourcesOptions options, const model::Clock& clock, log::Logger& log);
  ~PodResourcesWatcher();  // stop()
  PodResourcesWatcher(const PodResourcesWatcher&) = delete;
  PodResourcesWatcher& operator=(const PodResourcesWatcher&) = delete;

  // The thread: a refresh at once, then one every refresh interval.
  void start();
  // Cancels a List in flight (a hung kubelet does not hold up a stop) and joins the thread.
  void stop();
  // One refresh on the caller's thread: the thread's step (and the tests'). True when List answered.
  bool refresh();
  // Blocks until `n` refreshes (successful or not) have been made in all, or `timeout` (wall clock) passed.
  bool wait_for_refreshes(std::uint64_t n, std::chrono::milliseconds timeout) const;

  // The latest map (empty before the first answer and once a stale one is dropped). Never waits on the kubelet.
  std::shared_ptr<const DevicePodMap> current() const { return map_.load(); }
  PodResourcesStats stats() const;
  // gpuscope_kubernetes_*: refreshes, failures, the last success's time, the last refresh's duration, pods.
  void write_metrics(exporter::ExpositionWriter& writer) const;

 private:
  void run();

  const PodResourcesOptions options_;
  const model::Clock& clock_;
  log::Logger& log_;
  PodResourcesClient client_;
  std::atomic<std::shared_ptr<const DevicePodMap>> map_;
  mutable std::mutex mutex_;  // guards stats_, last_success_steady_, stopping_ (and the thread's wait)
  mutable std::condition_variable changed_;
  PodResourcesStats stats_;
  std::optional<model::Clock::SteadyTime> last_success_steady_;
  bool failing_ = false;  // the refresh thread's own state, for logging a change once
  bool dropped_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuscope::kubernetes
