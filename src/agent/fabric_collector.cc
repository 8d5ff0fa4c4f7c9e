#include "agent/fabric_collector.h"

#include <fmt/format.h>

#include "fabric/fabric_metrics.h"

namespace gpuscope::agent {

FabricCollector::FabricCollector(FabricCollectorOptions options, std::span<const model::GpuInfo> gpus,
                                 const model::Clock& clock, log::Logger& log)
    : options_(std::move(options)),
      clock_(clock),
      log_(log),
      reader_(options_.sysfs_root),
      locality_(options_.sysfs_root, gpus) {}

FabricCollector::~FabricCollector() { stop(); }

void FabricCollector::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void FabricCollector::stop() {
  {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FabricCollector::run() {
  for (;;) {
    const auto started = clock_.steady();
    collect();
    std::unique_lock lock(mu_);
    if (clock_.wait_until(lock, cv_, started + options_.interval, [this] { return stop_requested_; })) return;
  }
}

void FabricCollector::collect() {
  // Real time, not the clock's: this is what the reading cost, which a virtual clock does not measure.
  const auto t0 = std::chrono::steady_clock::now();
  if (refresh_) refresh_();
  fabric::SysfsScan scan = reader_.read();
  for (auto& p : scan.ports) {
    if (!p.pci_path.empty()) p.near_gpus = locality_.near_gpus(p.pci_path);
  }
  const std::size_t present = scan.ports.size();
  counters_.update(std::move(scan.ports));
  latest_.store(std::make_shared<const fabric::FabricState>(counters_.state()));
  last_duration_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  last_success_ = scan.problems.empty();

  // Logged once each: a node without a fabric (most workstations), the ports found (and again when their
  // number changes), files that fail to read (until they read again).
  if (counters_.ports_known() == 0 && !logged_empty_) {
    logged_empty_ = true;
    log_.info("fabric: no RDMA ports or physical network interfaces found; no fabric series",
              {{"sysfs", options_.sysfs_root.string()}});
  } else if (present != ports_logged_ && present > 0) {
    ports_logged_ = present;
    log_.info("fabric ports", {{"ports", std::to_string(present)},
                               {"gpus_located", std::to_string(locality_.gpus_found())},
                               {"interval", fmt::format("{}ms", options_.interval.count())}});
  }
  if (!scan.problems.empty() && !logged_problems_) {
    logged_problems_ = true;
    log_.warn("fabric: sysfs files not read (their series hold their last value)",
              {{"files", std::to_string(scan.problems.size())}, {"first", scan.problems.front()}});
  } else if (scan.problems.empty() && logged_problems_) {
    logged_problems_ = false;
    log_.info("fabric: every sysfs file read again");
  }
  {
    std::lock_guard lock(mu_);
    ++readings_;
  }
  cv_.notify_all();
}

void FabricCollector::write_metrics(exporter::ExpositionWriter& writer) const {
  const auto state = latest_.load();
  if (!state) return;
  fabric::write_fabric_metrics(writer, {state.get(), options_.host_label, options_.hostname});
}

std::optional<exporter::CollectorResult> FabricCollector::collector_result() const {
  const auto state = latest_.load();
  if (!state || state->ports.empty()) return std::nullopt;
  return exporter::CollectorResult{"fabric", last_duration_seconds_.load(), last_success_.load()};
}

std::uint64_t FabricCollector::readings() const {
  std::lock_guard lock(mu_);
  return readings_;
}

bool FabricCollector::wait_for_readings(std::uint64_t n, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, limit, [&] { return readings_ >= n; });
}

}  // namespace gpuscope::agent
