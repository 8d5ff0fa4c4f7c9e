#include "kubernetes/pod_resources_watcher.h"

#include <fmt/format.h>

namespace gpuscope::kubernetes {

PodResourcesWatcher::PodResourcesWatcher(PodResourcesOptions options, const model::Clock& clock, log::Logger& log)
    : options_(std::move(options)),
      clock_(clock),
      log_(log),
      client_(options_.socket_path),
      map_(std::make_shared<const DevicePodMap>()) {}

PodResourcesWatcher::~PodResourcesWatcher() { stop(); }

void PodResourcesWatcher::start() {
  if (thread_.joinable()) return;
  log_.info("kubernetes: reading pod GPU allocations from the kubelet",
            {{"socket", options_.socket_path},
             {"refresh_interval", fmt::format("{}ms", options_.refresh_interval.count())}});
  thread_ = std::thread([this] { run(); });
}

void PodResourcesWatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  client_.cancel();
  if (thread_.joinable()) thread_.join();
}

void PodResourcesWatcher::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    refresh();
    lock.lock();
    clock_.wait_for(lock, changed_, options_.refresh_interval, [this] { return stopping_; });
  }
}

bool PodResourcesWatcher::refresh() {
  const auto started = std::chrono::steady_clock::now();
  auto pods = client_.list(options_.deadline);
  std::shared_ptr<const DevicePodMap> built;
  if (pods) built = std::make_shared<const DevicePodMap>(DevicePodMap::build(*pods));
  const auto took = std::chrono::steady_clock::now() - started;

  bool drop = false;
  {
    std::lock_guard lock(mutex_);
    ++stats_.refreshes;
    stats_.last_duration = took;
    if (built) {
      stats_.last_success = clock_.wall();
      last_success_steady_ = clock_.steady();
      stats_.pods = built->pods();
      stats_.last_error.clear();
      map_.store(built);
    } else {
      ++stats_.failures;
      stats_.last_error = pods.error();
      // Dropped once the last answer is older than keep_stale (or there never was one: nothing to drop).
      drop = !dropped_ && last_success_steady_ && clock_.steady() - *last_success_steady_ > options_.keep_stale;
      if (drop) {
        stats_.pods = 0;
        map_.store(std::make_shared<const DevicePodMap>());
      }
    }
  }
  changed_.notify_all();

  if (built) {
    if (failing_) log_.info("kubernetes: the kubelet answers again; pod labels are current");
    failing_ = false;
    dropped_ = false;
    return true;
  }
  if (!failing_ && pods.error() != kListCancelled) {
    log_.warn("kubernetes: pod-resources List failed; keeping the last pod labels for a while",
              {{"socket", options_.socket_path},
               {"err", pods.error()},
               {"keep_stale", fmt::format("{}s", options_.keep_stale.count() / 1000.0)}});
  }
  failing_ = true;
  if (drop) {
    dropped_ = true;
    log_.warn("kubernetes: no answer from the kubelet for too long; pod labels dropped until it answers",
              {{"err", pods.error()}});
  }
  return false;
}

bool PodResourcesWatcher::wait_for_refreshes(std::uint64_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return stats_.refreshes >= n; });
}

PodResourcesStats PodResourcesWatcher::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void PodResourcesWatcher::write_metrics(exporter::ExpositionWriter& w) const {
  const PodResourcesStats s = stats();
  using model::MetricType;
  w.family("gpuscope_kubernetes_refreshes_total", MetricType::kCounter,
           "pod-resources List calls made to the kubelet (serve --kubernetes).");
  w.sample("gpuscope_kubernetes_refreshes_total", "", static_cast<double>(s.refreshes));
  w.family("gpuscope_kubernetes_refresh_failures_total", MetricType::kCounter,
           "pod-resources List calls that failed (kubelet gone, hung past the deadline, refused).");
  w.sample("gpuscope_kubernetes_refresh_failures_total", "", static_cast<double>(s.failures));
  w.family("gpuscope_kubernetes_last_refresh_success_timestamp_seconds", MetricType::kGauge,
           "When the kubelet last answered List (Unix seconds; 0: never).");
  w.sample("gpuscope_kubernetes_last_refresh_success_timestamp_seconds", "",
           s.last_success ? std::chrono::duration<double>(s.last_success->time_since_epoch()).count() : 0.0);
  w.family("gpuscope_kubernetes_refresh_duration_seconds", MetricType::kGauge,
           "How long the last List round trip and map build took.");
  w.sample("gpuscope_kubernetes_refresh_duration_seconds", "", std::chrono::duration<double>(s.last_duration).count());
  w.family("gpuscope_kubernetes_pods", MetricType::kGauge,
           "Pods holding an NVIDIA GPU or MIG device, in the map the labels come from.");
  w.sample("gpuscope_kubernetes_pods", "", static_cast<double>(s.pods));
}

}  // namespace gpuscope::kubernetes
