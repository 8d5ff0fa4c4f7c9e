// FabricCollector: the agent's reader of the node's fabric (RDMA ports, physical network interfaces) from
// sysfs, on a thread and cadence of its own, off the sampler's GPU path: a reading of an InfiniBand
// port's counters asks the adapter's firmware (a PMA query per file), so it neither delays a GPU reading
// nor runs at the GPUs' 1 s. Scrapes and the history read the latest published state, never sysfs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "export/agent_metrics.h"
#include "export/exposition_writer.h"
#include "fabric/fabric_counters.h"
#include "fabric/pci_locality.h"
#include "fabric/sysfs_ports.h"
#include "log/logger.h"
#include "model/clock.h"
#include "model/gpu_info.h"

namespace gpuscope::agent {

// Every 10 s by default: the cadence of the GPUs' cumulative counters (--counter-interval), frequent
// enough for the rules' 5-minute rates (30 points), and a tenth of the firmware queries a 1 s cadence
// would make on an 8-port node (about 300 attribute reads a reading).
inline constexpr std::chrono::milliseconds kDefaultFabricInterval{10'000};
inline constexpr std::chrono::milliseconds kMinFabricInterval{1'000};
inline constexpr std::chrono::milliseconds kMaxFabricInterval{3'600'000};

struct FabricCollectorOptions {
  std::filesystem::path sysfs_root = "/sys";
  std::chrono::milliseconds interval = kDefaultFabricInterval;
  std::string host_label = "Hostname";  // empty: none
  std::string hostname;
};

class FabricCollector {
 public:
  // `clock` and `log` must outlive the collector. Nothing runs until start().
  FabricCollector(FabricCollectorOptions options, std::span<const model::GpuInfo> gpus, const model::Clock& clock,
                  log::Logger& log);
  ~FabricCollector();  // stop()
  FabricCollector(const FabricCollector&) = delete;
  FabricCollector& operator=(const FabricCollector&) = delete;

  // Called before each reading, set before start(): the simulator brings its sysfs tree to the simulated
  // time (--simulate with a scenario's `fabric:`). None on a host.
  void set_refresh(std::function<void()> refresh) { refresh_ = std::move(refresh); }

  // Reads at once, then every interval on the clock.
  void start();
  void stop();
  // One reading, published (the thread's body; tests and the bench call it directly).
  void collect();

  // The latest reading's families (nothing before the first reading, or on a node without ports).
  void write_metrics(exporter::ExpositionWriter& writer) const;
  // gpuscope_collector_*{collector="fabric"}: the latest reading's duration and whether every file read;
  // nullopt before the first reading or while no port has been seen.
  std::optional<exporter::CollectorResult> collector_result() const;
  std::shared_ptr<const fabric::FabricState> latest() const { return latest_.load(); }
  std::uint64_t readings() const;
  // Waits (real time, at most `limit`) until `n` readings are published; tests step the clock with it.
  bool wait_for_readings(std::uint64_t n, std::chrono::milliseconds limit) const;

 private:
  void run();

  const FabricCollectorOptions options_;
  const model::Clock& clock_;
  log::Logger& log_;
  const fabric::SysfsPortReader reader_;
  const fabric::PciLocality locality_;
  fabric::FabricCounters counters_;  // the collecting thread's only
  std::function<void()> refresh_;
  std::atomic<std::shared_ptr<const fabric::FabricState>> latest_;
  std::atomic<double> last_duration_seconds_{0};
  std::atomic<bool> last_success_{true};
  bool logged_empty_ = false;     // "no fabric ports" said once
  bool logged_problems_ = false;  // unreadable files warned about once until they read again
  std::size_t ports_logged_ = 0;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stop_requested_ = false;
  std::uint64_t readings_ = 0;
  std::thread thread_;
};

}  // namespace gpuscope::agent
