#include "agent/agent.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "agent/cost_history.h"
#include "agent/cost_metering.h"
#include "analysis/network_verdict.h"
#include "analysis/window_summary.h"
#include "http/crypt_library.h"
#include "http/gzip.h"
#include "http/route_prefix.h"
#include "remote_write/remote_write_metrics.h"

namespace gpuscope::agent {
namespace {

exporter::NotificationStatus notification_status(const notify::NotifyStats& stats) {
  exporter::NotificationStatus out;
  for (const auto& i : stats.integrations) out.integrations.push_back({i.receiver, i.integration, i.total, i.failed, i.retries});
  out.dropped = stats.dropped;
  out.queue_length = static_cast<double>(stats.queue_length);
  out.alert_groups = static_cast<double>(stats.alert_groups);
  const auto& a = stats.actions;
  out.actions = {{"started", a.started},   {"succeeded", a.succeeded}, {"failed", a.failed},
                 {"timed_out", a.timed_out}, {"dry_run", a.dry_runs},   {"skipped_cooldown", a.skipped_cooldown},
                 {"dropped", a.dropped}};
  return out;
}

store::Labels external_labels_of(const AgentConfig& config) {
  std::vector<store::Label> labels;
  for (const auto& [k, v] : config.external_labels) labels.push_back({k, v});
  return store::Labels(std::move(labels));
}

// The recent window keeps this much more than the diagnosis window: the window is cut at the newest
// reading's time, and an evaluation (on its own thread and grid) may read a window ending a little
// before it (a virtual clock, a reading recorded while the evaluation started).
constexpr std::int64_t kRecentWindowMarginMs = 10'000;

// Without history the verdict series have no store to go to: /metrics and the API still show them.
class DiscardedVerdictSeries : public rules::SampleAppender {
 public:
  std::expected<void, std::string> append(const store::Labels&, std::int64_t, double) override { return {}; }
};

// The host label's name as the GPU families spell it (empty: none).
std::string host_label_name(exporter::HostnameLabel label) {
  switch (label) {
    case exporter::HostnameLabel::kHostname: return "Hostname";
    case exporter::HostnameLabel::kLowercase: return "hostname";
    case exporter::HostnameLabel::kNone: return {};
  }
  return {};
}

AgentError config_error(std::vector<std::string> lines) { return {AgentError::Kind::kConfig, std::move(lines)}; }
AgentError runtime_error(std::string line) { return {AgentError::Kind::kRuntime, {std::move(line)}}; }

}  // namespace

std::expected<std::shared_ptr<const exporter::MetricSet>, std::string> load_metric_set(const std::string& path,
                                                                                       log::Logger& log) {
  if (path.empty()) return std::make_shared<const exporter::MetricSet>(exporter::default_metric_set());
  auto loaded = exporter::load_metric_set(path);
  if (!loaded) return std::unexpected(loaded.error());
  for (const auto& w : loaded->warnings) log.warn("collectors file line skipped", {{"detail", w}});
  log.info("collectors file loaded", {{"file", path}, {"fields", std::to_string(loaded->set.fields.size())}});
  return std::make_shared<const exporter::MetricSet>(std::move(loaded->set));
}

std::expected<std::unique_ptr<Agent>, AgentError> Agent::load(AgentConfig config, log::Logger& log) {
  std::unique_ptr<Agent> agent(new Agent(std::move(config), log));
  const AgentConfig& c = agent->config_;
  agent->query_limiter_ = std::make_unique<promql::QueryLimiter>(c.query_max_concurrency);
  agent->engine_options_.timeout = c.query_timeout;
  agent->engine_options_.max_samples = c.query_max_samples;
  agent->engine_options_.limiter = agent->query_limiter_.get();
  agent->engine_options_.clock = c.clock;

  auto set = load_metric_set(c.collectors_file, log);
  if (!set) return std::unexpected(config_error({set.error()}));
  agent->metric_set_ = std::move(*set);

  // Rules query the history and write to it: the one place that decides the rules loop has a store.
  if (!c.rule_specs.empty() && !c.history) {
    return std::unexpected(config_error({"--rules needs the history that --no-history turns off: rules query it"}));
  }
  if (!c.rule_specs.empty()) {
    auto groups = load_rules(c.rule_specs);
    if (!groups) return std::unexpected(config_error(std::move(groups.error())));
    rules::RuleManagerOptions ro;
    ro.default_interval_ms = c.evaluation_interval.count();
    ro.external_labels = external_labels_of(c);
    ro.external_url = c.external_url;
    ro.engine = agent->engine_options_;
    ro.engine.default_subquery_step_ms = c.evaluation_interval.count();
    for (const std::string& e : groups->empty) log.warn(e);
    log.info("rules loaded",
             {{"groups", std::to_string(groups->groups.size())}, {"rules", std::to_string(groups->rule_count)}});
    agent->rule_manager_ = std::make_unique<rules::RuleManager>(std::move(groups->groups), std::move(ro));
  }

  // gRPC is a plugin loaded for --kubernetes alone: a missing one is said now, as libcrypt is for basic
  // auth, not found out at every refresh.
  if (c.kubernetes) {
    if (auto plugin = kubernetes::load_pod_resources_plugin(); !plugin) {
      return std::unexpected(config_error({fmt::format("--kubernetes: {}", plugin.error())}));
    }
  }

  if (!c.web_config_file.empty()) {
    auto web = http::load_web_config(c.web_config_file);
    if (!web) return std::unexpected(config_error({fmt::format("--web.config.file {}", web.error())}));
    if (!web->basic_auth_users.empty()) {
      // Checked now, not at the first request: without libcrypt nobody could ever log in.
      if (auto crypt = http::crypt_api(); !crypt) {
        return std::unexpected(config_error({fmt::format("--web.config.file {}: basic_auth_users: {}", c.web_config_file,
                                                         crypt.error())}));
      }
    }
    if (web->tls) {
      auto material = http::load_tls_material(*web->tls, c.web_config_file);
      if (!material) return std::unexpected(config_error({fmt::format("--web.config.file {}", material.error())}));
      agent->tls_material_ = std::move(*material);
    }
    log.info("web config loaded", {{"file", c.web_config_file},
                                   {"tls", web->tls ? "on" : "off"},
                                   {"basic_auth_users", std::to_string(web->basic_auth_users.size())}});
    // Made now, before any thread that writes /metrics' families can ask it for its counters.
    agent->web_access_ = std::make_unique<http::WebAccess>(*web, c.route_prefix, log);
    agent->web_config_ = std::move(*web);
  }

  if (!c.notify_config.empty()) {
    auto notify_config = notify::load_notify_config(c.notify_config);
    if (!notify_config) return std::unexpected(config_error(std::move(notify_config.error())));
    notify::NotifierOptions no;
    no.external_url = c.external_url;
    no.external_labels = external_labels_of(c);
    no.delivery.clock = c.clock;  // retries back off on the agent's clock
    auto created = notify::Notifier::create(std::move(*notify_config), log, std::move(no));
    if (!created) return std::unexpected(config_error({fmt::format("--config {}: {}", c.notify_config, created.error())}));
    agent->notifier_ = std::move(*created);
    log.info("notifications configured", {{"file", c.notify_config}});
  }
  return agent;
}

Agent::~Agent() { stop(); }

std::expected<Agent::Started, AgentError> Agent::start(std::unique_ptr<nvml::NvmlBackend> backend,
                                                        const std::function<bool()>& stop_requested) {
  started_ = true;
  backend_ = std::move(backend);
  system_ = backend_->system();
  // As dcgm-exporter: NODE_NAME (set from the node in a DaemonSet) names the host, since a pod's own
  // hostname is the pod's name.
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0') system_.hostname = node;

  // Prices are resolved once: the GPUs and the catalog are fixed for the agent's life.
  metrics_ = config_.metrics;
  metrics_.price_tier = std::string(model::price_tier_name(config_.price_tier));
  if (config_.price_catalog) {
    metrics_.hourly_price_dollars = hourly_prices(*config_.price_catalog);
    const std::string& file = config_.price_catalog->source();
    log_.info("price catalog", {{"file", file.empty() ? "none (--price-override only)" : file},
                                {"tier", metrics_.price_tier},
                                {"priced_gpus", std::to_string(metrics_.hourly_price_dollars.size())}});
  }

  // History is opened before the first reading, so a bad data directory stops the agent at start.
  if (config_.history) {
    if (auto opened = open_history(); !opened) return std::unexpected(opened.error());
  }
  // Made before the sampler starts (each reading records their series, reading the list), started once
  // the port is open.
  create_remote_writers();

  // Before the first reading, which bills the time since the last recorded one.
  start_cost_meter();

  if (config_.kubernetes) {
    // Its first List runs at once on its own thread; the first reading waits a moment for it.
    pod_resources_ = std::make_unique<kubernetes::PodResourcesWatcher>(*config_.kubernetes, clock_, log_);
    pod_resources_->start();
    pod_resources_->wait_for_refreshes(1, kubernetes::kFirstRefreshWait);
  }
  reader_ = std::make_unique<GpuReader>(*backend_, config_.interval, config_.hpc_job_mapping_dir, log_,
                                        config_.clock != &model::system_clock() ? config_.clock : nullptr);
  sampler_ = std::make_unique<sampler::Sampler>([this] { return read_and_record(); }, config_.interval, clock_);
  routes_ = std::make_unique<http::AgentRoutes>(*sampler_, backend_->gpus(), system_, metrics_, config_.version, clock_);
  routes_->set_metric_set(metric_set_);
  routes_->set_status_extension([this](exporter::AgentStatus& status) { extend_status(status); });
  routes_->set_cost_counters([this] { return cost_counters(); });
  // Only the history records the agent's own series; the recorder that feeds the diagnosis alone
  // (--no-history, made later by create_diagnosis) writes the GPU families.
  if (recorder_) {
    recorder_->set_agent_status([this] {
      exporter::AgentStatus status = routes_->agent_status();
      // The diagnosis loop writes the verdict series itself, at its evaluations' times.
      if (status.diagnosis) status.diagnosis->series.clear();
      return status;
    });
  }
  http::QueryApiOptions api_options;
  api_options.engine = engine_options_;
  api_options.version = config_.version;
  const store::Queryable& history = tsdb_ ? static_cast<const store::Queryable&>(*tsdb_) : no_history_;
  query_api_ = std::make_unique<http::QueryApi>(history, api_options, [this] { return clock_.unix_ms(); });
  rules_api_ = std::make_unique<http::RulesApi>(rule_manager_.get());
  if (rule_manager_) start_rules();
  // Before the sampler: its first reading records the fabric's families with the GPUs' (the collector
  // reads at once on its own thread; the port waits for that reading below). Before the diagnosis, which
  // keeps the fabric's series for the network verdict when there is a collector.
  start_fabric();
  create_diagnosis();
  // The history records the cost counters, which the next start continues from; the recorder that only
  // feeds the diagnosis (--no-history) has no use for them.
  if (recorder_ && tsdb_) recorder_->set_cost_counters([this] { return cost_counters(); });
  http::DiagnosisApiOptions diagnosis_options;
  diagnosis_options.window = config_.diagnosis_window;
  diagnosis_options.thresholds = config_.diagnosis_thresholds;
  diagnosis_options.limiter = query_limiter_.get();
  diagnosis_options.timeout = config_.query_timeout;
  diagnosis_options.clock = &clock_;
  diagnosis_api_ = std::make_unique<http::DiagnosisApi>(tsdb_.get(), diagnosis_options,
                                                        [this] { return published_diagnosis(); });
  create_training();

  // The first reading before the port opens: a client that connects as soon as it can (`serve & curl`,
  // a Prometheus already scraping) gets GPU series and a 200 from /healthz, never an empty page.
  sampler_->start();
  for (auto waited = std::chrono::milliseconds(0); !sampler_->latest(); waited += kStopPoll) {
    if (waited >= kFirstReadingWait) {
      log_.warn("no GPU reading yet; listening anyway (/healthz answers 503 until one comes)",
                {{"waited", fmt::format("{}s", kFirstReadingWait.count())}});
      break;
    }
    if (stop_requested && stop_requested()) return Started::kStopRequested;
    sampler_->wait_for(1, kStopPoll);
  }

  if (config_.preemption_source) start_preemption_watcher();
  if (diagnosis_loop_) {
    diagnosis_loop_->start([this] { wait_for_first_reading(); });
    // One diagnosis is milliseconds of reading memory; after a missed first reading there is none to wait for.
    if (sampler_->latest()) diagnosis_loop_->wait_for_first(kFirstDiagnosisWait);
  }
  if (auto training = start_training(); !training) return std::unexpected(training.error());
  // Sysfs reads are microseconds; a driver stuck in one holds the port no longer than this.
  if (fabric_) fabric_->wait_for_readings(1, kFirstFabricReadingWait);
  if (auto listening = start_http(); !listening) return std::unexpected(listening.error());
  for (auto& w : remote_writers_) w->start();
  if (rule_loop_) {
    // The first evaluation waits for the first reading, so rules never start on an empty store.
    rule_loop_->start([this] { wait_for_first_reading(); });
  }
  return Started::kServing;
}

std::expected<void, AgentError> Agent::open_history() {
  store::TsdbOptions so;
  so.data_dir = config_.data_dir;
  so.retention_ms = config_.retention.count();
  so.flush_interval_ms = config_.flush_interval.count();
  auto lock = DataDirLock::acquire(config_.data_dir);
  if (!lock) return std::unexpected(runtime_error(fmt::format("--data-dir {}: {}", config_.data_dir, lock.error())));
  data_dir_lock_ = std::move(*lock);
  // The store reports each degraded mode (a damaged chunk, a full or read-only disk, its directory
  // deleted) once as it starts, and once as it ends.
  so.warn = [this](std::string_view what) { log_.warn("history", {{"detail", std::string(what)}}); };
  so.info = [this](std::string_view what) { log_.info("history", {{"detail", std::string(what)}}); };
  // A data directory deleted under the agent took its lock file along: taken again in the new one, so
  // a second agent still cannot start there.
  so.directory_recreated = [this] {
    auto relocked = DataDirLock::acquire(config_.data_dir);
    if (!relocked) {
      log_.warn("history: the data directory was made again but its lock could not be taken", {{"err", relocked.error()}});
      return;
    }
    std::lock_guard lock(data_dir_lock_mutex_);
    data_dir_lock_ = std::move(*relocked);
  };
  auto opened = store::Tsdb::open(std::move(so), clock_.unix_ms());
  if (!opened) return std::unexpected(runtime_error(fmt::format("--data-dir {}: {}", config_.data_dir, opened.error())));
  tsdb_ = std::move(*opened);
  // Readings only append to memory; this thread writes to disk, so a slow or stuck disk never delays one.
  flusher_ = std::make_unique<store::TsdbFlusher>(*tsdb_, clock_);
  flusher_->start();
  recorder_ = std::make_unique<HistoryRecorder>(*tsdb_, backend_->gpus(), system_, metrics_, log_);
  recorder_->set_metric_set(metric_set_);
  log_.info("history", {{"data_dir", config_.data_dir},
                        {"series", std::to_string(tsdb_->stats().head.series)},
                        {"retention", fmt::format("{}h", config_.retention.count() / 3600000.0)}});
  return {};
}

void Agent::start_rules() {
  // Alerts carry on from where the last run left them: no second notification, `for` progress kept.
  alert_state_ = std::make_unique<rules::AlertStateFile>(config_.data_dir + "/alerts.json");
  if (auto restored = alert_state_->restore(*rule_manager_, clock_.unix_ms()); !restored) {
    log_.warn("alert state not restored; alerts start afresh", {{"err", restored.error()}});
  } else if (*restored > 0) {
    log_.info("alert state restored", {{"alerts", std::to_string(*restored)}});
  }
  rule_loop_ = std::make_unique<RuleEvaluationLoop>(*rule_manager_, *tsdb_, alert_state_.get(), notifier_.get(),
                                                    clock_, log_);
}

void Agent::create_diagnosis() {
  if (!config_.diagnosis) {
    diagnosis_off_ = "the diagnosis is off (--no-diagnosis)";
    return;
  }
  DiagnosisLoopOptions o;
  // By default every kDefaultDiagnosisInterval (or every reading, when readings are further apart): a
  // verdict changes only once 3 steady readings of a new regime are in, so evaluating at every 1 s
  // reading tells nothing sooner, and would double the simulated agent's CPU (0.8 ms an evaluation).
  o.interval = config_.diagnosis_interval.count() > 0
                   ? config_.diagnosis_interval
                   : std::max(std::chrono::duration_cast<std::chrono::milliseconds>(config_.interval),
                              std::chrono::milliseconds(kDefaultDiagnosisInterval));
  o.window = config_.diagnosis_window;
  o.thresholds = config_.diagnosis_thresholds;
  // Every evaluation reads its window from memory kept for it, uncompressed, not from the history's
  // chunks: decoding them (and taking the head's lock the sampler's appends need) cost 30 times the
  // diagnosis itself.
  const std::int64_t span_ms = o.window.count() + kRecentWindowMarginMs;
  recent_window_ = std::make_unique<store::RecentWindow>(analysis::signal_names(), span_ms);
  if (tsdb_) {
    // After a restart the window starts full, as the history's is.
    const std::int64_t now = clock_.unix_ms();
    auto recent = analysis::StoreSource(*tsdb_).select(analysis::signal_name_regex(), now - span_ms, now);
    if (recent) {
      recent_window_->seed(std::move(*recent));
    } else {
      log_.warn("diagnosis: the history's recent readings not read; the first window fills from the next reading",
                {{"err", recent.error()}});
    }
  }
  if (!recorder_) {
    // --no-history: readings still go through the recorder, but only into the recent window.
    recorder_ = std::make_unique<HistoryRecorder>(backend_->gpus(), system_, metrics_, log_);
    recorder_->set_metric_set(metric_set_);
  }
  if (fabric_) {
    // The network verdict's fabric series, kept as the GPU signals are (in memory, not read back from the
    // history's chunks at each evaluation), over the fabric lookback.
    const std::int64_t fabric_span_ms = analysis::kFabricLookbackMs + kRecentWindowMarginMs;
    fabric_window_ = std::make_unique<store::RecentWindow>(analysis::fabric_series_names(), fabric_span_ms);
    if (tsdb_) {
      const std::int64_t now = clock_.unix_ms();
      if (auto recent = analysis::StoreSource(*tsdb_).select(analysis::fabric_series_regex(), now - fabric_span_ms, now)) {
        fabric_window_->seed(std::move(*recent));
      }
    }
    fabric_source_ = std::make_unique<analysis::StoreSource>(*fabric_window_);
  }
  recorder_->set_reading_listener([window = recent_window_.get(), fabric = fabric_window_.get()](
                                      std::int64_t t_ms, std::span<const store::LabeledValue> values,
                                      std::uint64_t layout) {
    window->append_reading(t_ms, values, layout);
    if (fabric != nullptr) fabric->append_reading(t_ms, values, layout);
  });
  diagnosis_source_ = std::make_unique<analysis::StoreSource>(*recent_window_);
  if (tsdb_) {
    diagnosis_history_ = std::make_unique<analysis::StoreSource>(*tsdb_);
    diagnosis_appender_ = std::make_unique<rules::StoreAppender<store::Tsdb>>(*tsdb_);
  } else {
    diagnosis_appender_ = std::make_unique<DiscardedVerdictSeries>();
  }
  const analysis::ReadingSource& history = diagnosis_history_ ? *diagnosis_history_ : *diagnosis_source_;
  diagnosis_loop_ = std::make_unique<DiagnosisLoop>(*diagnosis_source_, history, *diagnosis_appender_, o, clock_, log_);
  diagnosis_loop_->set_fabric_source(fabric_source_.get());
  log_.info("diagnosis", {{"interval", fmt::format("{}ms", o.interval.count())},
                          {"window", fmt::format("{}s", o.window.count() / 1000.0)},
                          {"history", tsdb_ ? "yes" : "no (idle since: the last window only)"}});
}

void Agent::start_preemption_watcher() {
  MetadataEndpointOptions eo;
  eo.source = *config_.preemption_source;
  eo.base_url = config_.preemption_metadata_url;
  eo.timeout = config_.preemption_timeout;
  eo.clock = &clock_;
  preemption_endpoint_ = std::make_unique<MetadataEndpoint>(std::move(eo));
  PreemptionResponseOptions ro;
  ro.signal = config_.preemption_signal;
  ro.pidfile = config_.preemption_pidfile;
  ro.hostname = system_.hostname;
  ro.notifier = notifier_.get();
  // The processes of the latest reading: at most one interval old, and read without touching NVML.
  ro.gpu_pids = [this] {
    const auto latest = sampler_->latest();
    return latest ? gpu_process_pids(latest->snapshot) : std::vector<int>{};
  };
  preemption_response_ = std::make_unique<PreemptionResponse>(std::move(ro), clock_, log_);
  const std::string provider(preemption_provider_name(config_.preemption_source->provider));
  preemption_watcher_ = std::make_unique<PreemptionWatcher>(
      *preemption_endpoint_,
      [this](const PreemptionNotice& notice, std::chrono::system_clock::time_point seen) {
        preemption_response_->respond(notice, seen);
      },
      PreemptionWatcherOptions{provider, config_.preemption_poll_interval}, clock_, log_);
  log_.info("watching for preemption notices",
            {{"provider", provider},
             {"url", notify::url_without_credentials(preemption_endpoint_->polled_url())},
             {"interval", fmt::format("{}ms", config_.preemption_poll_interval.count())},
             {"signal", config_.preemption_signal ? signal_name(*config_.preemption_signal) : "none"},
             {"target", config_.preemption_pidfile.empty() ? "gpu_processes" : config_.preemption_pidfile},
             {"notify", notifier_ ? "yes" : "no (no --config)"}});
  preemption_watcher_->start();
}

void Agent::create_training() {
  TrainingOptions o;
  o.limits = config_.training_limits;
  o.thresholds = config_.training_thresholds;
  o.host_label = host_label_name(metrics_.hostname_label);
  o.hostname = system_.hostname;
  auto latest = [this]() -> std::shared_ptr<const model::Snapshot> {
    auto pub = sampler_->latest();
    if (!pub) return nullptr;
    return std::shared_ptr<const model::Snapshot>(pub, &pub->snapshot);
  };
  training_ = std::make_unique<TrainingTracker>(std::move(o), backend_->gpus(), latest, clock_, log_);
  check_api_ = std::make_unique<http::CheckApi>(backend_->gpus(), system_, latest);
  // An epoch's verdict reads the history (or, without one, the diagnosis' recent window: the epoch's last
  // 30 seconds at most).
  const analysis::ReadingSource* verdict_source =
      diagnosis_history_ ? diagnosis_history_.get() : diagnosis_source_.get();
  if (verdict_source != nullptr) {
    training_->set_epoch_verdict([this, verdict_source](std::int64_t start_ms, std::int64_t end_ms,
                                                        unsigned gpu) -> std::optional<std::string> {
      auto verdict = analysis::span_verdict(*verdict_source, start_ms, end_ms, gpu, config_.diagnosis_thresholds);
      if (!verdict) {
        log_.warn("training epoch verdict not drawn", {{"err", verdict.error()}});
        return std::nullopt;
      }
      return *verdict;
    });
  }
  routes_->set_extra_families([this](exporter::ExpositionWriter& w) { write_extra_families(w); });
  if (recorder_ && tsdb_) recorder_->set_extra_families([this](exporter::ExpositionWriter& w) { write_extra_families(w); });
  http::TrainingApiOptions api;
  api.thresholds = config_.diagnosis_thresholds;
  api.limiter = query_limiter_.get();
  api.timeout = config_.query_timeout;
  api.clock = &clock_;
  training_api_ = std::make_unique<http::TrainingApi>(
      training_->intake(), tsdb_.get(), api, [this] { return training_->json(); },
      [this](int pid) {
        std::vector<unsigned> gpus;
        if (auto pub = sampler_->latest()) {
          for (const auto& g : pub->snapshot.gpus) {
            for (const auto& p : g.processes) {
              if (static_cast<int>(p.pid) == pid) gpus.push_back(g.index);
            }
          }
        }
        return gpus;
      });
}

void Agent::write_extra_families(exporter::ExpositionWriter& writer) const {
  training_->write_metrics(writer);
  if (fabric_) fabric_->write_metrics(writer);
  if (pod_resources_) pod_resources_->write_metrics(writer);
  if (web_access_) web_access_->write_metrics(writer);
  if (!remote_writers_.empty()) {
    std::vector<remote_write::RemoteWriteStats> stats;
    for (const auto& w : remote_writers_) stats.push_back(w->stats());
    remote_write::write_remote_write_metrics(writer, stats, clock_.unix_ms());
  }
}

void Agent::start_fabric() {
  if (config_.fabric_interval.count() <= 0) return;
  FabricCollectorOptions o;
  o.sysfs_root = config_.fabric_sysfs_root;
  if (o.sysfs_root.empty() && config_.fabric_from_simulator) {
    // The scenario's fabric: a tree the simulated driver rewrites for its clock before each reading.
    const auto root = backend_->update_sim_sysfs();
    if (!root) {
      log_.info("fabric: not read under --simulate (the scenario has no fabric:; name a fake tree with --sysfs-root "
                "or GPUSCOPE_SYSFS_ROOT)");
      return;
    }
    o.sysfs_root = *root;
  }
  if (o.sysfs_root.empty()) return;
  o.interval = config_.fabric_interval;
  o.host_label = host_label_name(metrics_.hostname_label);
  o.hostname = system_.hostname;
  const bool simulated = config_.fabric_sysfs_root.empty();
  fabric_ = std::make_unique<FabricCollector>(std::move(o), backend_->gpus(), clock_, log_);
  if (simulated) fabric_->set_refresh([this] { backend_->update_sim_sysfs(); });
  fabric_->start();
}

std::expected<void, AgentError> Agent::start_training() {
  EventSocketOptions socket;
  const bool named = !config_.events_socket.empty();
  if (config_.events_socket != "none") {
    socket.path = named ? config_.events_socket
                        : default_events_socket_path([](const char* name) { return std::getenv(name); });
  }
  if (!config_.events_group.empty() && !socket.path.empty()) {
    auto gid = parse_group(config_.events_group);
    if (!gid) return std::unexpected(config_error({gid.error()}));
    socket.group = *gid;
  }
  auto started = training_->start(socket);
  if (started) return {};
  // A socket named by the flag must open; the default place may be taken by another agent on the host
  // (or not writable), and events still come over HTTP.
  if (named) return std::unexpected(runtime_error(fmt::format("--events-socket: {}", started.error())));
  log_.warn("no events socket (training events over POST /api/v1/events only)", {{"err", started.error()}});
  if (auto plain = training_->start(EventSocketOptions{}); !plain) return std::unexpected(runtime_error(plain.error()));
  return {};
}

http::PublishedDiagnosis Agent::published_diagnosis() const {
  if (!diagnosis_loop_) return {nullptr, diagnosis_off_};
  const auto latest = diagnosis_loop_->latest();
  // An older verdict is not served as the current one once an evaluation has failed.
  if (!latest->last_error.empty()) return {nullptr, "the last diagnosis failed: " + latest->last_error};
  if (latest->diagnosis) return {latest->diagnosis, {}};
  return {nullptr, "no diagnosis yet: the first evaluation comes after the first GPU reading"};
}

void Agent::extend_status(exporter::AgentStatus& status) const {
  if (diagnosis_loop_) status.diagnosis = diagnosis_loop_->status();
  if (rule_loop_) {
    if (auto groups = rule_loop_->status()) status.rule_groups = *groups;
  }
  if (notifier_) status.notifications = notification_status(notifier_->stats());
  if (preemption_watcher_) status.preemption = preemption_watcher_->status();
  if (fabric_) {
    if (auto fabric = fabric_->collector_result()) status.collectors.push_back(*fabric);
  }
  if (tsdb_) {
    // At every reading and scrape: the counters, not a walk of every chunk in memory.
    const store::TsdbStats st = tsdb_->stats(false);
    exporter::TsdbStatus t;
    t.head_series = static_cast<double>(st.head.series);
    t.head_samples_appended_total = st.head.samples_appended;
    t.samples_rejected_out_of_order_total = st.head.out_of_order_rejected;
    t.samples_rejected_duplicate_total = st.head.duplicates_rejected;
    t.flushes_total = st.flushes;
    t.flush_failures_total = st.flush_failures;
    t.flush_duration_seconds_sum = st.flush_seconds_sum;
    t.flush_duration_seconds_count = st.flush_seconds_count;
    t.last_successful_flush_timestamp_seconds = static_cast<double>(st.last_flush_ms) / 1000.0;
    t.chunks_corrupt_total = st.damaged_chunks_skipped;
    t.unflushed_samples_dropped_total = st.head.unpersisted_samples_dropped;
    t.databases_moved_aside_total = st.databases_moved_aside;
    t.databases_recreated_total = st.databases_recreated;
    t.disk_bytes = static_cast<double>(st.disk_bytes);
    if (st.head.oldest_sample_ms) t.oldest_sample_timestamp_seconds = static_cast<double>(*st.head.oldest_sample_ms) / 1000.0;
    status.tsdb = t;
  }
}

std::expected<void, AgentError> Agent::start_http() {
  http::HttpServerOptions options;
  options.host = config_.host;
  options.port = config_.port;
  options.max_connections = config_.max_connections;
  options.header_timeout = config_.http_timeout;
  options.tls = tls_material_;
  if (web_access_) {
    options.on_tls_refused = [this](std::string_view remote, std::string_view detail) {
      web_access_->refused_connection(http::Refusal::kTlsHandshake, remote, detail);
    };
  }
  const auto route = [this](const http::HttpRequest& r) {
    if (http::QueryApi::handles(r.path())) return query_api_->handle(r);
    if (http::RulesApi::handles(r.path())) return rules_api_->handle(r);
    if (http::DiagnosisApi::handles(r.path())) return diagnosis_api_->handle(r);
    if (http::TrainingApi::handles(r.path())) return training_api_->handle(r);
    if (http::CheckApi::handles(r.path())) return check_api_->handle(r);
    if (http::WebUi::handles(r.path())) return web_ui_.handle(r);
    return routes_->handle(r);
  };
  http::HttpHandler handler = [route](const http::HttpRequest& r) {
    auto response = route(r);
    http::gzip_json_if_accepted(r, response);
    return response;
  };
  if (!config_.route_prefix.empty()) handler = http::with_route_prefix(config_.route_prefix, std::move(handler));
  if (web_access_) handler = web_access_->wrap(std::move(handler));
  auto server = http::HttpServer::start(options, std::move(handler), log_);
  if (!server) return std::unexpected(runtime_error(server.error()));
  server_ = std::move(*server);
  const std::string& host = config_.host;
  const std::string shown_host = host.empty() ? "" : (host.find(':') != std::string::npos ? "[" + host + "]" : host);
  if (web_config_) {
    auto apply = [this](const http::WebConfig& web, const std::optional<http::TlsMaterial>& tls) -> std::expected<void, std::string> {
      // The listening socket's protocol is fixed for its life: a client configured for one would fail on the other.
      if (tls.has_value() != tls_material_.has_value()) {
        return std::unexpected(tls ? "turning TLS on needs a restart" : "turning TLS off needs a restart");
      }
      if (tls && *tls != *tls_material_) {
        if (auto replaced = server_->replace_tls(*tls); !replaced) return replaced;
        tls_material_ = tls;
        log_.info("TLS settings replaced: new connections use the new certificate",
                  {{"client_auth_type", std::string(http::client_auth_name(tls->client_auth))}});
      }
      web_access_->apply(web);
      return {};
    };
    web_config_watcher_ = std::make_unique<WebConfigWatcher>(config_.web_config_file, *web_config_, std::move(apply),
                                                             [this](bool ok) { web_access_->reloaded(ok); }, log_);
  }
  if (tls_material_) {
    log_.info("TLS is on", {{"client_auth_type", std::string(http::client_auth_name(tls_material_->client_auth))},
                            {"priorities", tls_material_->priorities}});
  }
  log_.info("listening", {{"address", fmt::format("{}:{}", shown_host, server_->port())},
                          {"interval", fmt::format("{}ms", std::chrono::duration_cast<std::chrono::milliseconds>(config_.interval).count())}});
  return {};
}

void Agent::start_cost_meter() {
  analysis::CostRules rules;
  if (config_.price_catalog) rules.energy_usd_per_kwh = config_.price_catalog->energy_usd_per_kwh();
  energy_priced_ = rules.energy_usd_per_kwh.has_value();
  cost_meter_ = std::make_unique<analysis::CostMeter>(rules);
  hourly_prices_.store(std::make_shared<const std::map<unsigned, double>>(metrics_.hourly_price_dollars));
  if (!tsdb_) return;  // --no-history: the counters start at 0
  std::vector<std::string> uuids;
  for (const auto& g : backend_->gpus()) uuids.push_back(g.uuid);
  const auto seeds = read_cost_seeds(*tsdb_, uuids, metrics_.price_tier, clock_.unix_ms(), config_.retention.count(), rules);
  if (!seeds) {
    log_.warn("cost counters: the history's last values not read; they start at 0", {{"err", seeds.error()}});
    return;
  }
  std::size_t billed_since = 0;
  for (const auto& seed : *seeds) {
    cost_meter_->seed(seed);
    if (seed.last_reading) ++billed_since;
  }
  log_.info("cost counters", {{"continued_gpus", std::to_string(seeds->size())},
                              {"billed_since_last_reading", std::to_string(billed_since)},
                              {"new_gpus", std::to_string(uuids.size() - seeds->size())}});
}

exporter::CostCounters Agent::cost_counters() const {
  return agent::cost_counters(*cost_meter_->totals(), backend_->gpus(), energy_priced_);
}

model::Snapshot Agent::read_and_record() {
  auto snapshot = reader_->read();
  // The latest map, loaded without waiting: the kubelet is never asked on the reading's path.
  if (pod_resources_) kubernetes::label_gpus(snapshot, backend_->gpus(), *pod_resources_->current());
  // Microseconds of arithmetic on the reading, before it is recorded with the counters it moved.
  cost_meter_->update(std::chrono::duration_cast<std::chrono::milliseconds>(snapshot.time.time_since_epoch()).count(),
                      metered_gpus(snapshot, backend_->gpus(), *hourly_prices_.load()));
  if (recorder_) recorder_->record(snapshot);
  return snapshot;
}

std::map<unsigned, double> Agent::hourly_prices(const model::PriceCatalog& catalog) const {
  std::map<unsigned, double> out;
  for (const auto& g : backend_->gpus()) {
    if (auto p = catalog.hourly_price(g.name, config_.price_tier)) out.emplace(g.index, *p);
  }
  return out;
}

void Agent::reload_prices() {
  auto catalog = config_.reload_price_catalog();
  if (!catalog) {
    log_.error("price catalog reload failed; keeping the previous prices", {{"err", catalog.error()}});
    return;
  }
  exporter::GpuMetricsOptions options = metrics_;
  options.hourly_price_dollars = *catalog ? hourly_prices(**catalog) : std::map<unsigned, double>{};
  const std::optional<double> energy = *catalog ? (*catalog)->energy_usd_per_kwh() : std::nullopt;
  // The meter's prices first, then the exported ones: a reading taken in between is billed at the new
  // price a moment before its price series shows it, never the other way round.
  hourly_prices_.store(std::make_shared<const std::map<unsigned, double>>(options.hourly_price_dollars));
  cost_meter_->set_energy_usd_per_kwh(energy);
  energy_priced_ = energy.has_value();
  if (routes_) routes_->set_options(options);
  if (recorder_) recorder_->set_options(options);
  log_.info("price catalog reloaded", {{"file", *catalog ? (*catalog)->source() : "none"},
                                       {"priced_gpus", std::to_string(options.hourly_price_dollars.size())}});
}

void Agent::reload() {
  if (config_.reload_price_catalog && cost_meter_) reload_prices();  // none before start() reaches the meter
  if (rule_manager_) {
    if (auto groups = load_rules(config_.rule_specs); groups) {
      for (const std::string& e : groups->empty) log_.warn(e);
      log_.info("rules reloaded", {{"groups", std::to_string(groups->groups.size())}});
      rule_manager_->replace(std::move(groups->groups));
      if (rule_loop_) rule_loop_->wake();
    } else {
      for (const std::string& e : groups.error()) log_.error("rule file reload failed; keeping the previous rules", {{"err", e}});
    }
  }
  if (config_.collectors_file.empty()) {
    if (!rule_manager_ && !config_.reload_price_catalog) log_.info("SIGHUP: no collectors or rule files to reload");
    return;
  }
  if (auto reloaded = load_metric_set(config_.collectors_file, log_); reloaded) {
    metric_set_ = *reloaded;
    if (routes_) routes_->set_metric_set(*reloaded);
    if (recorder_) recorder_->set_metric_set(*reloaded);
  } else {
    if (routes_) routes_->reload_failed();
    log_.error("collectors file reload failed; keeping the previous one", {{"err", reloaded.error()}});
  }
}

void Agent::wait_for_first_reading() const {
  // In slices, so a stop does not wait for a first reading stuck in the driver: the loops that wait here
  // are joined before the sampler is given up on.
  const auto deadline = std::chrono::steady_clock::now() + kFirstReadingForLoops;
  while (!stopping_.load() && std::chrono::steady_clock::now() < deadline) {
    if (sampler_->wait_for(1, kStopPoll)) return;
  }
}

bool Agent::stop() {
  if (!started_ || stopped_) return true;  // loaded only: nothing runs yet
  stopped_ = true;
  stopping_ = true;
  // Queries still running end at their next check (Prometheus's "query was canceled"), so neither the
  // HTTP server nor the rules loop waits for one.
  query_limiter_->cancel_all();
  if (web_config_watcher_) web_config_watcher_->stop();  // it replaces the server's daemons
  if (server_) server_->stop();
  // A request in flight is cut short; its samples go with the next run (the cursor did not pass them).
  for (auto& w : remote_writers_) w->stop();
  if (rule_loop_) rule_loop_->stop();
  // Before the history's last flush, which then holds its last verdicts.
  if (diagnosis_loop_) diagnosis_loop_->stop();
  if (training_) training_->stop();
  if (fabric_) fabric_->stop();
  if (pod_resources_) pod_resources_->stop();  // a List in flight is cancelled, not waited for
  // Its poll in flight is cancelled, not waited for; stopped before the notifier its response sends through.
  if (preemption_watcher_) preemption_watcher_->stop();
  // Queued notifications (a resolve sent at the last evaluation) get a moment to go out.
  if (notifier_) notifier_->stop(std::chrono::seconds(2));
  const bool sampler_ended = !sampler_ || sampler_->stop(kStopGrace);
  // Joining a reading stuck in the driver would wait for the driver: the caller exits without waiting.
  if (!sampler_ended) log_.warn("a GPU reading is still inside an NVML call; exiting without waiting for it");
  if (flusher_) {
    // What is in memory goes to disk on a clean stop; a kill -9 loses at most one flush interval.
    auto stopped = flusher_->stop(kFlushGrace);
    if (!stopped.thread_exited) {
      log_.warn("the history's last flush is still waiting for the disk; exiting without waiting for it");
      return false;
    }
    if (!stopped.final_flush) log_.error("history: final flush failed", {{"err", stopped.final_flush.error()}});
  }
  if (sampler_ended) log_.info("stopped");
  return sampler_ended;
}

void Agent::create_remote_writers() {
  if (config_.remote_write.empty() || !tsdb_) return;
  // A reading is appended a moment after its time, a rule evaluation's or a verdict's likewise: the
  // writers read nothing younger than two reading intervals (2 s at least), so their cursors never
  // pass a sample still on its way into the store.
  const auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(config_.interval);
  for (const remote_write::ReceiverConfig& receiver : config_.remote_write) {
    remote_write::RemoteWriterOptions o;
    o.receiver = receiver;
    o.data_dir = config_.data_dir;
    o.external_labels = config_.external_labels;
    o.settle = std::max<std::chrono::milliseconds>(std::chrono::seconds(2), 2 * interval);
    o.poll = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(100), interval);
    o.retention = config_.retention;
    auto writer = std::make_unique<remote_write::RemoteWriter>(std::move(o), *tsdb_, nullptr, clock_, log_);
    writer->set_transport(remote_write::make_curl_transport(receiver, "gpuscope/" + config_.version, writer->abort_flag()));
    log_.info("remote write", {{"url", receiver.display_url},
                               {"max_samples_per_send", std::to_string(receiver.queue.max_samples_per_send)}});
    remote_writers_.push_back(std::move(writer));
  }
}

std::uint16_t Agent::port() const { return server_ ? server_->port() : 0; }

}  // namespace gpuscope::agent
