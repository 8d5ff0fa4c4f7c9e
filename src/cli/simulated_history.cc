#include "cli/simulated_history.h"

#include <cstdlib>
#include <ostream>

#include "export/metric_set.h"

namespace gpuscope::cli {

std::expected<std::unique_ptr<SimulatedHistory>, int> SimulatedHistory::open(const Invocation& inv,
                                                                             const std::string& scenario,
                                                                             const PriceSelection& prices) {
  // The simulator starts frozen at the scenario's t = 0; from then on only record_at moves its clock.
  ::setenv("GPUSCOPE_SIM_TIME", "0", 1);
  ::setenv("GPUSCOPE_SIM_QUIET", "1", 1);
  Invocation sim_inv{inv.global, inv.out, inv.err, inv.stop, false};
  sim_inv.global.simulate = true;
  sim_inv.global.scenario = scenario;
  nvml::BackendOptions reading;
  reading.watch_events = true;
  reading.poll_events = true;  // events land in the reading of the virtual time they happen at
  reading.read_pcie_throughput = false;
  auto opened = open_backend(sim_inv, reading);
  if (!opened) return std::unexpected(opened.error());
  return std::unique_ptr<SimulatedHistory>(new SimulatedHistory(inv, std::move(*opened), prices));
}

namespace {

exporter::GpuMetricsOptions metrics_options(const nvml::NvmlBackend& backend, const PriceSelection& prices) {
  exporter::GpuMetricsOptions metrics;
  metrics.hourly_price_dollars = hourly_prices(prices, backend.gpus());
  metrics.price_tier = std::string(model::price_tier_name(prices.tier));
  return metrics;
}

}  // namespace

SimulatedHistory::SimulatedHistory(const Invocation& inv, std::unique_ptr<nvml::NvmlBackend> backend,
                                   const PriceSelection& prices)
    : backend_(std::move(backend)),
      log_(inv.err, log::Level::kWarn),
      recorder_(head_, backend_->gpus(), backend_->system(), metrics_options(*backend_, prices), log_),
      start_ms_(std::chrono::duration_cast<std::chrono::milliseconds>(backend_->now().time_since_epoch()).count()) {
  recorder_.set_metric_set(std::make_shared<const exporter::MetricSet>(exporter::default_metric_set()));
  if (const auto root = backend_->update_sim_sysfs()) {
    agent::FabricCollectorOptions fabric;
    fabric.sysfs_root = *root;
    fabric.hostname = backend_->system().hostname;
    fabric_ = std::make_unique<agent::FabricCollector>(std::move(fabric), backend_->gpus(), fabric_clock_, log_);
    fabric_->set_refresh([this] { backend_->update_sim_sysfs(); });
    recorder_.set_extra_families([this](exporter::ExpositionWriter& w) { fabric_->write_metrics(w); });
  }
}

std::expected<void, std::string> SimulatedHistory::record_at(std::int64_t t_ms) {
  if (!backend_->set_sim_time(std::chrono::system_clock::time_point(std::chrono::milliseconds(t_ms)))) {
    return std::unexpected("the simulated NVML did not accept the virtual time");
  }
  if (fabric_ && t_ms >= next_fabric_ms_) {
    fabric_->collect();
    next_fabric_ms_ = t_ms + agent::kDefaultFabricInterval.count();
  }
  recorder_.record(backend_->sample());
  return {};
}

}  // namespace gpuscope::cli
