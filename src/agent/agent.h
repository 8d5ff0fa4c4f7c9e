// Agent: the node agent `gpuscope serve` runs. It owns every part (sampler, history store and recorder,
// rules loop, notifier, HTTP server and routes), builds them from one AgentConfig, starts them in order,
// reloads on request and stops them in reverse order. Optional parts exist or not; nothing uses a part
// whose presence was checked somewhere else.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "agent/data_dir_lock.h"
#include "agent/diagnosis_loop.h"
#include "agent/fabric_collector.h"
#include "agent/metadata_endpoint.h"
#include "agent/preemption_response.h"
#include "agent/preemption_watcher.h"
#include "agent/gpu_reader.h"
#include "agent/history_recorder.h"
#include "agent/rule_evaluation_loop.h"
#include "agent/training_tracker.h"
#include "agent/web_config_watcher.h"
#include "analysis/cost_meter.h"
#include "export/metric_set.h"
#include "http/agent_routes.h"
#include "http/diagnosis_api.h"
#include "http/http_server.h"
#include "http/query_api.h"
#include "http/rules_api.h"
#include "http/check_api.h"
#include "http/training_api.h"
#include "http/web_access.h"
#include "http/web_config.h"
#include "http/web_ui.h"
#include "kubernetes/pod_resources_watcher.h"
#include "log/logger.h"
#include "notify/notifier.h"
#include "nvml/nvml_backend.h"
#include "promql/engine.h"
#include "promql/query_limiter.h"
#include "remote_write/remote_writer.h"
#include "rules/alert_state_file.h"
#include "rules/rule_manager.h"
#include "sampler/sampler.h"
#include "store/recent_window.h"
#include "store/series_set.h"
#include "store/tsdb.h"
#include "store/tsdb_flusher.h"

namespace gpuscope::agent {

// Why the agent could not load or start, one problem a line: a bad file or flag (kConfig, the CLI's
// usage error) or the host (kRuntime: the data directory in use, the port taken).
struct AgentError {
  enum class Kind { kConfig, kRuntime };
  Kind kind = Kind::kRuntime;
  std::vector<std::string> lines;
};

class Agent {
 public:
  // The port opens after the first reading, so the first scrape and /healthz already see the GPUs; a
  // driver that hangs on that reading keeps it closed no longer than this (the least staleness /healthz
  // allows), and then /healthz says why it is 503.
  static constexpr std::chrono::seconds kFirstReadingWait{10};
  // The port also waits for the first diagnosis (/api/v1/diagnosis answers from the first request), for
  // no longer than this: a diagnosis of the history is milliseconds.
  static constexpr std::chrono::milliseconds kFirstDiagnosisWait{1000};
  // The port waits this long at most for the fabric collector's first reading (sysfs reads take
  // microseconds; a stuck driver read must not keep the port closed).
  static constexpr std::chrono::milliseconds kFirstFabricReadingWait{1000};
  // How often the wait for the first reading asks whether to stop, so a stop still ends it within a second.
  static constexpr std::chrono::milliseconds kStopPoll{100};
  // Stopping must end the agent within 1 s: a sampler stuck in a driver call gets this long to return,
  // and the history's last flush this long on a stuck disk.
  static constexpr std::chrono::milliseconds kStopGrace{600};
  static constexpr std::chrono::milliseconds kFlushGrace{300};
  // The diagnosis' evaluations without --diagnosis.interval (or the reading interval, if longer).
  static constexpr std::chrono::seconds kDefaultDiagnosisInterval{5};
  // How long the rules and diagnosis loops wait for the first reading before they start anyway.
  static constexpr std::chrono::seconds kFirstReadingForLoops{30};

  // Reads what the config names (collectors file, rule files, notification config) before anything
  // starts: a bad file stops the agent with every problem listed. `log` must outlive the agent.
  static std::expected<std::unique_ptr<Agent>, AgentError> load(AgentConfig config, log::Logger& log);
  ~Agent();  // stop()
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  enum class Started { kServing, kStopRequested };
  // Starts the parts in order over an opened NVML backend: the history (data directory locked, store
  // opened), the sampler and its first reading (`stop_requested` is asked every kStopPoll meanwhile),
  // the HTTP server, the rules loop, the diagnosis loop.
  std::expected<Started, AgentError> start(std::unique_ptr<nvml::NvmlBackend> backend,
                                           const std::function<bool()>& stop_requested);
  // Re-reads the collectors and rule files (SIGHUP); a file that no longer loads keeps the previous one.
  void reload();
  // Stops in reverse order and writes the history's last flush. False when a reading is still inside an
  // NVML call after kStopGrace: the process should then exit without waiting for the driver.
  bool stop();

  // The port the HTTP server listens on (the chosen one for port 0); 0 before start().
  std::uint16_t port() const;

 private:
  Agent(AgentConfig config, log::Logger& log) : config_(std::move(config)), clock_(*config_.clock), log_(log) {}

  std::expected<void, AgentError> open_history();
  void start_rules();
  // The diagnosis loop over the recent window, or the reason there is none (logged once).
  void create_diagnosis();
  http::PublishedDiagnosis published_diagnosis() const;
  std::expected<void, AgentError> start_http();
  // What /metrics and the history add to the routes' own status: rule groups, notifications, the store.
  void extend_status(exporter::AgentStatus& status) const;
  // The cost counters' meter, continued from the history's last recorded values where there is one.
  void start_cost_meter();
  // USD per GPU-hour of each GPU the catalog prices, by GPU index, in the configured tier.
  std::map<unsigned, double> hourly_prices(const model::PriceCatalog& catalog) const;
  // SIGHUP: the catalog read again; the prices apply from the next reading on, a bad file keeps the old ones.
  void reload_prices();
  exporter::CostCounters cost_counters() const;
  model::Snapshot read_and_record();
  // The training jobs' part: built before the sampler (the recorder writes its families), started after
  // the first reading; the events socket in the configured (or default) place.
  void create_training();
  // The fabric collector over config_.fabric_sysfs_root, started (none without a root).
  void start_fabric();
  // What the routes and the history add to the GPU families: the training jobs', the fabric's.
  void write_extra_families(exporter::ExpositionWriter& writer) const;
  // --remote-write: one writer per receiver over the history, made before the sampler starts (its threads
  // start once the port is open): the list never changes while readings record the writers' series.
  void create_remote_writers();
  // --preemption-notice: the endpoint, the response and the watcher's thread.
  void start_preemption_watcher();
  std::expected<void, AgentError> start_training();
  // The rules and diagnosis loops' start: the first reading, 30 s at most, or until stop() begins.
  void wait_for_first_reading() const;

  const AgentConfig config_;
  const model::Clock& clock_;
  log::Logger& log_;
  bool started_ = false;
  bool stopped_ = false;
  std::atomic<bool> stopping_{false};  // set as stop() begins: the loops' waits end

  // One limiter for the query API and the rules: one concurrency bound, and cancel_all() at stop ends
  // both (a long query never holds up a stop).
  std::unique_ptr<promql::QueryLimiter> query_limiter_;
  promql::EngineOptions engine_options_;

  // Loaded from files by load().
  std::shared_ptr<const exporter::MetricSet> metric_set_;
  std::unique_ptr<rules::RuleManager> rule_manager_;  // with --rules
  std::unique_ptr<notify::Notifier> notifier_;        // with --config
  std::optional<http::WebConfig> web_config_;         // with --web.config.file
  std::optional<http::TlsMaterial> tls_material_;     // with its tls_server_config

  // Started by start(), in this order; stopped in the reverse one.
  std::unique_ptr<nvml::NvmlBackend> backend_;
  model::SystemInfo system_;
  exporter::GpuMetricsOptions metrics_;
  std::mutex data_dir_lock_mutex_;              // the flusher takes the lock again after a deletion
  std::unique_ptr<DataDirLock> data_dir_lock_;  // with history
  std::unique_ptr<store::Tsdb> tsdb_;           // with history
  std::unique_ptr<store::TsdbFlusher> flusher_;  // with history: writes it on a thread of its own
  std::unique_ptr<HistoryRecorder> recorder_;   // with history or the diagnosis
  store::SeriesSet no_history_;                 // what the query API reads without history
  std::unique_ptr<analysis::CostMeter> cost_meter_;
  // The prices as the sampler thread reads them at each reading; a reload swaps them.
  std::atomic<std::shared_ptr<const std::map<unsigned, double>>> hourly_prices_;
  std::atomic<bool> energy_priced_{false};  // the catalog has an energy price
  // With --kubernetes: started before the sampler, whose readings take the pod labels from its latest map.
  std::unique_ptr<kubernetes::PodResourcesWatcher> pod_resources_;
  std::unique_ptr<GpuReader> reader_;
  std::unique_ptr<sampler::Sampler> sampler_;
  std::unique_ptr<http::AgentRoutes> routes_;
  std::unique_ptr<http::QueryApi> query_api_;
  std::unique_ptr<http::RulesApi> rules_api_;
  std::unique_ptr<rules::AlertStateFile> alert_state_;  // with --rules
  std::unique_ptr<RuleEvaluationLoop> rule_loop_;        // with --rules
  // With the diagnosis: the recent readings it evaluates (fed by the recorder, history or not), the
  // history it looks further back in for "idle since" (the recent window without history), and where
  // its verdict series go (nowhere without history).
  std::unique_ptr<store::RecentWindow> recent_window_;
  // The fabric's series the network verdict reads, over its lookback (only with a fabric collector).
  std::unique_ptr<store::RecentWindow> fabric_window_;
  std::unique_ptr<analysis::StoreSource> fabric_source_;
  std::unique_ptr<analysis::StoreSource> diagnosis_source_;
  std::unique_ptr<analysis::StoreSource> diagnosis_history_;
  std::unique_ptr<rules::SampleAppender> diagnosis_appender_;
  std::unique_ptr<DiagnosisLoop> diagnosis_loop_;
  std::string diagnosis_off_;  // why there is no diagnosis loop
  std::unique_ptr<http::DiagnosisApi> diagnosis_api_;
  // With a sysfs root: the fabric's reader, on its own thread; its families go out with the training ones.
  std::unique_ptr<FabricCollector> fabric_;
  std::unique_ptr<TrainingTracker> training_;
  std::unique_ptr<http::TrainingApi> training_api_;
  std::unique_ptr<http::CheckApi> check_api_;
  http::WebUi web_ui_;
  std::unique_ptr<http::WebAccess> web_access_;  // with --web.config.file: in front of every route
  std::unique_ptr<http::HttpServer> server_;
  std::unique_ptr<WebConfigWatcher> web_config_watcher_;  // with --web.config.file, once the server runs
  // With --preemption-notice: started after the sampler (the response reads its latest reading's
  // processes), stopped before it and before the notifier it sends through.
  std::unique_ptr<MetadataEndpoint> preemption_endpoint_;
  std::unique_ptr<PreemptionResponse> preemption_response_;
  std::unique_ptr<PreemptionWatcher> preemption_watcher_;
  // With --remote-write (and history): started once the port is open, stopped first.
  std::vector<std::unique_ptr<remote_write::RemoteWriter>> remote_writers_;
};

// Loads a dcgm-exporter collectors file (empty `path`: the built-in set), logging the lines it skips.
std::expected<std::shared_ptr<const exporter::MetricSet>, std::string> load_metric_set(const std::string& path,
                                                                                       log::Logger& log);

}  // namespace gpuscope::agent
