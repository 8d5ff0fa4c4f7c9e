// A simulator scenario run through the agent's reading path into an in-memory store on a virtual clock,
// as fast as the CPU allows: what `backtest` evaluates its rules and diagnosis over and what
// `diagnose --simulate` diagnoses. One code path, so both see the readings an agent would record.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>

#include "agent/fabric_collector.h"
#include "agent/history_recorder.h"
#include "cli/invocation.h"
#include "cli/price_flags.h"
#include "log/logger.h"
#include "nvml/nvml_backend.h"
#include "store/head.h"

namespace gpuscope::cli {

class SimulatedHistory {
 public:
  // Opens the simulator on `scenario` ("" for its default GPUs) frozen at the scenario's t = 0. On
  // failure the simulator's error has been printed; the exit code.
  static std::expected<std::unique_ptr<SimulatedHistory>, int> open(const Invocation& inv, const std::string& scenario,
                                                                   const PriceSelection& prices = {});

  // The scenario's t = 0, Unix ms.
  std::int64_t start_ms() const { return start_ms_; }
  // Moves the virtual clock to `t_ms` and records one reading there (with the scenario's fabric, read
  // through the fabric collector every kDefaultFabricInterval of virtual time); a one-line error when the
  // simulator refused the time.
  std::expected<void, std::string> record_at(std::int64_t t_ms);

  store::Head& head() { return head_; }
  const nvml::NvmlBackend& backend() const { return *backend_; }

 private:
  SimulatedHistory(const Invocation& inv, std::unique_ptr<nvml::NvmlBackend> backend, const PriceSelection& prices);

  std::unique_ptr<nvml::NvmlBackend> backend_;
  log::Logger log_;
  store::Head head_;
  agent::HistoryRecorder recorder_;
  std::int64_t start_ms_ = 0;
  // The scenario's `fabric:` (none without), read from the simulated driver's sysfs tree as the agent
  // reads a host's. Its clock only paces a thread that is never started.
  model::SystemClock fabric_clock_;
  std::unique_ptr<agent::FabricCollector> fabric_;
  std::int64_t next_fabric_ms_ = 0;
};

}  // namespace gpuscope::cli
