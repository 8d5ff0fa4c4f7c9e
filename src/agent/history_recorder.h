// HistoryRecorder: at every reading, the series /metrics shows (the GPU families and the agent's own,
// as the exporter writes them) appended to the agent's store, so queries see what a Prometheus
// scraping it would.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "export/agent_metrics.h"
#include "export/cost_metrics.h"
#include "export/gpu_metrics.h"
#include "export/metric_set.h"
#include "log/logger.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"
#include "store/tsdb.h"

namespace gpuscope::agent {

class HistoryRecorder {
 public:
  HistoryRecorder(store::Tsdb& tsdb, std::vector<model::GpuInfo> gpus, model::SystemInfo system,
                  exporter::GpuMetricsOptions options, log::Logger& log);
  // Into a bare in-memory head, never flushed (a backtest on a virtual clock).
  HistoryRecorder(store::Head& head, std::vector<model::GpuInfo> gpus, model::SystemInfo system,
                  exporter::GpuMetricsOptions options, log::Logger& log);
  // Into no store: each reading only goes to the listener (--no-history, where the diagnosis still
  // keeps its recent window).
  HistoryRecorder(std::vector<model::GpuInfo> gpus, model::SystemInfo system, exporter::GpuMetricsOptions options,
                  log::Logger& log);

  // Told of every reading once it is appended, on the sampler thread: its time, its series and values,
  // and a layout number that changes whenever any position of the reading holds another series than
  // in the one before (so a store::RecentWindow reads no labels while it stays the same).
  using ReadingListener =
      std::function<void(std::int64_t t_ms, std::span<const store::LabeledValue> values, std::uint64_t layout)>;
  // Set before the sampler starts.
  void set_reading_listener(ReadingListener listener) { listener_ = std::move(listener); }

  // The metric set to record from the next reading on (set at start and on each collectors reload).
  void set_metric_set(std::shared_ptr<const exporter::MetricSet> set) { set_.store(std::move(set)); }
  // Where the agent's own series (sample age, collectors, process_*) come from; set before the
  // sampler starts. Without it only the GPU families are recorded.
  void set_agent_status(std::function<exporter::AgentStatus()> status) { agent_status_ = std::move(status); }
  // A reloaded price catalog's prices, recorded from the next reading on (any thread).
  void set_options(exporter::GpuMetricsOptions options) {
    options_.store(std::make_shared<const exporter::GpuMetricsOptions>(std::move(options)));
  }
  // Where the cost counters come from (the agent's CostMeter, updated before each reading is recorded);
  // set before the sampler starts. Without it they are not recorded.
  void set_cost_counters(std::function<exporter::CostCounters()> counters) { cost_counters_ = std::move(counters); }
  // Families other parts of the agent export (the training jobs'), recorded with each reading; set before
  // the sampler starts.
  void set_extra_families(std::function<void(exporter::ExpositionWriter&)> write) { extra_families_ = std::move(write); }
  // Appends one reading to memory (on the sampler thread); a TsdbFlusher writes it to disk.
  void record(const model::Snapshot& snapshot);

 private:
  store::Tsdb* tsdb_ = nullptr;  // one of the two, or neither (the listener only)
  store::Head* head_ = nullptr;
  ReadingListener listener_;
  const std::vector<model::GpuInfo> gpus_;
  const model::SystemInfo system_;
  std::atomic<std::shared_ptr<const exporter::GpuMetricsOptions>> options_;
  log::Logger& log_;
  std::atomic<std::shared_ptr<const exporter::MetricSet>> set_;
  std::function<exporter::AgentStatus()> agent_status_;
  std::function<exporter::CostCounters()> cost_counters_;
  std::function<void(exporter::ExpositionWriter&)> extra_families_;
  std::vector<store::LabeledValue> values_;  // this reading's series and values, reused between readings
  std::vector<std::string> keys_;            // each one's exposition text (name, labels), to spot changes
  std::uint64_t layout_ = 1;                 // bumped when values_ holds other series than before (0: unknown)
  bool append_failing_ = false;
};

}  // namespace gpuscope::agent
