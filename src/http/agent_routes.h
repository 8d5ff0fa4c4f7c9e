// AgentRoutes: what `gpuscope serve` answers over HTTP: /metrics (Prometheus text or OpenMetrics,
// gzip on request), /healthz and /health, /api/v1/gpus (inventory and latest values as JSON); the
// dashboard at / is WebUi's. Every answer is built from the sampler's latest publication; no handler calls NVML.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "export/agent_metrics.h"
#include "export/cost_metrics.h"
#include "export/exposition_writer.h"
#include "export/gpu_metrics.h"
#include "export/metric_set.h"
#include "http/http_server.h"
#include "model/gpu_info.h"
#include "sampler/sampler.h"

namespace gpuscope::http {

class AgentRoutes {
 public:
  // Sample ages are measured on `clock`, the sampler's (it must outlive the routes).
  AgentRoutes(const sampler::Sampler& sampler, std::vector<model::GpuInfo> gpus, model::SystemInfo system,
              exporter::GpuMetricsOptions options, std::string version,
              const model::Clock& clock = model::system_clock());

  HttpResponse handle(const HttpRequest& request);

  // A reloaded price catalog: the GPU families (the price series) use these options from the next
  // reading on; the reading already rendered keeps the prices it was rendered with.
  void set_options(exporter::GpuMetricsOptions options) {
    options_.store(std::make_shared<const exporter::GpuMetricsOptions>(std::move(options)));
  }

  // A collectors file (re)load: the new set is used from the next scrape on.
  void set_metric_set(std::shared_ptr<const exporter::MetricSet> set);
  // A reload that failed: the old set stays, gpuscope_config_last_reload_successful says 0.
  void reload_failed();

  // The agent's own state as /metrics shows it now (sample age and cost, collectors, reload state,
  // the process's CPU and memory); history records it with each reading.
  exporter::AgentStatus agent_status() const;
  // Adds what other parts of the agent report (rule groups) to agent_status(); set before serving.
  // Called on the sampler and HTTP threads: it must not wait for a lock a slow part holds.
  void set_status_extension(std::function<void(exporter::AgentStatus&)> extension) { extension_ = std::move(extension); }

  // Where the cost counters come from (the agent's CostMeter); set before serving. Called on the HTTP
  // threads as a reading's GPU families are rendered: it must only copy what it is given.
  void set_cost_counters(std::function<exporter::CostCounters()> counters) { cost_counters_ = std::move(counters); }

  // Families other parts of the agent export (the training jobs'), written at each scrape after the GPU
  // families; set before serving. Called on the HTTP threads: it must not wait for a slow part.
  void set_extra_families(std::function<void(exporter::ExpositionWriter&)> write) { extra_families_ = std::move(write); }

  // The /metrics body as a scrape with this Accept header would get it (uncompressed), rendered now.
  std::string render_metrics(exporter::ExpositionFormat format);

  // Under load, scrapes within this long of each other share one rendered body (and one gzip of it),
  // so the agent's own series (sample age, CPU) are at most this old.
  static constexpr std::chrono::milliseconds kBodyReuse{100};

 private:
  HttpResponse metrics(const HttpRequest& request);
  HttpResponse health() const;
  HttpResponse gpus_json() const;
  // The GPU families for (publication, metric set, format), rendered once and shared by the scrapes.
  std::shared_ptr<const std::string> gpu_text(const std::shared_ptr<const sampler::Publication>& pub,
                                              const std::shared_ptr<const exporter::MetricSet>& set,
                                              exporter::ExpositionFormat format);

  const sampler::Sampler& sampler_;
  const model::Clock& clock_;
  const std::vector<model::GpuInfo> gpus_;
  const model::SystemInfo system_;
  std::atomic<std::shared_ptr<const exporter::GpuMetricsOptions>> options_;
  const std::string version_;
  std::function<void(exporter::AgentStatus&)> extension_;
  std::function<exporter::CostCounters()> cost_counters_;
  std::function<void(exporter::ExpositionWriter&)> extra_families_;

  std::atomic<std::shared_ptr<const exporter::MetricSet>> set_;
  std::atomic<bool> reload_ok_{true};
  std::atomic<double> reload_time_{0};
  std::atomic<std::uint64_t> config_generation_{0};  // bumped by every (failed) reload

  struct CacheEntry {
    std::shared_ptr<const sampler::Publication> pub;
    std::shared_ptr<const exporter::MetricSet> set;
    std::shared_ptr<const std::string> text;
  };
  std::mutex cache_mu_;
  CacheEntry cache_[2];  // by format

  struct BodyEntry {
    std::shared_ptr<const sampler::Publication> pub;
    std::shared_ptr<const exporter::MetricSet> set;
    std::uint64_t generation = 0;
    std::chrono::steady_clock::time_point built;
    std::shared_ptr<const std::string> text;
    std::shared_ptr<const std::string> gzip;  // made on the first gzip scrape
  };
  std::mutex body_mu_;
  BodyEntry body_[2];  // by format
};

}  // namespace gpuscope::http
