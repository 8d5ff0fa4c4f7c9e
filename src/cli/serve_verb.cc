#include "cli/serve_verb.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ctime>
#include <memory>
#include <optional>
#include <ostream>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/history_recorder.h"
#include "cli/rule_evaluation_loop.h"
#include "export/metric_set.h"
#include "http/agent_routes.h"
#include "http/http_server.h"
#include "http/query_api.h"
#include "http/rules_api.h"
#include "notify/notifier.h"
#include "promql/parser.h"
#include "sampler/hpc_job_map.h"
#include "sampler/sampler.h"
#include "store/series_set.h"
#include "store/tsdb.h"

namespace gpuscope::cli {
namespace {

constexpr auto kMinInterval = std::chrono::milliseconds(100);
constexpr auto kMaxInterval = std::chrono::seconds(60);
// --query.max-concurrency: each query may hold --query.max-samples; a thousand is already far past sane.
constexpr long long kMaxQueryConcurrency = 1000;
// SIGTERM must end the agent within 1 s; a sampler stuck in a driver call gets this long to return.
constexpr auto kStopGrace = std::chrono::milliseconds(600);
// The port opens after the first reading, so the first scrape and /healthz already see the GPUs; a
// driver that hangs on that reading keeps it closed no longer than this (the least staleness /healthz
// allows), and then /healthz says why it is 503.
constexpr auto kFirstReadingWait = std::chrono::seconds(10);
// How often that wait looks for SIGTERM/SIGINT, so they still stop the agent within a second.
constexpr auto kSignalPoll = std::chrono::milliseconds(100);

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Creates the data directory and takes its lock file; the descriptor stays open for the process's life.
std::expected<int, std::string> lock_data_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return std::unexpected(fmt::format("cannot create it: {}", ec.message()));
  const std::string path = dir + "/lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {0};
    const auto n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    std::string who = n > 0 ? std::string(pid, static_cast<std::size_t>(n)) : std::string("?");
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    return std::unexpected(fmt::format("in use by another gpuscope serve (pid {}); give each agent its own --data-dir", who));
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
  return fd;
}

// Loads the collectors file, logging the lines it skips.
std::expected<std::shared_ptr<const exporter::MetricSet>, std::string> load_set(const ServeOptions& o,
                                                                                log::Logger& log) {
  if (o.collectors_file.empty()) return std::make_shared<const exporter::MetricSet>(exporter::default_metric_set());
  auto loaded = exporter::load_metric_set(o.collectors_file);
  if (!loaded) return std::unexpected(loaded.error());
  for (const auto& w : loaded->warnings) log.warn("collectors file line skipped", {{"detail", w}});
  log.info("collectors file loaded", {{"file", o.collectors_file}, {"fields", std::to_string(loaded->set.fields.size())}});
  return std::make_shared<const exporter::MetricSet>(std::move(loaded->set));
}

}  // namespace

std::string default_data_dir() {
  // systemd's StateDirectory= (the unit in deploy/ sets it) names the place for a service's state.
  if (const char* state = std::getenv("STATE_DIRECTORY"); state != nullptr && *state == '/') {
    std::string dir(state);
    if (auto colon = dir.find(':'); colon != std::string::npos) dir.resize(colon);  // several: the first
    return dir;
  }
  if (geteuid() == 0) return std::string(store::kDefaultDataDir);
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state == '/') {
    return std::string(state) + "/gpuscope";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.local/state/gpuscope";
  }
  return std::string(store::kDefaultDataDir);
}

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

}  // namespace

std::expected<ServeOptions, ParseExit> parse_serve_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "serve",
      "Run the node agent: read every GPU once per --interval and serve the readings over HTTP.\n"
      "  /metrics       Prometheus text (OpenMetrics when asked), dcgm-exporter's metric names and labels\n"
      "  /healthz       200 while readings are fresh (also /health, dcgm-exporter's path)\n"
      "  /api/v1/gpus   GPUs and their latest values as JSON\n"
      "  /api/v1/query, /api/v1/query_range, /api/v1/series, /api/v1/labels, /api/v1/label/NAME/values\n"
      "                 PromQL over the recorded history, Prometheus's HTTP API (Grafana can use it as a\n"
      "                 Prometheus data source)\n"
      "  /api/v1/rules, /api/v1/alerts   the --rules groups and their alerts, as Prometheus shows them\n"
      "It listens on 127.0.0.1:9400 by default; --listen :9400 listens on every interface (what Prometheus on\n"
      "another host needs). SIGTERM/SIGINT stop it; SIGHUP reloads --collectors and --rules (a bad file keeps the\n"
      "old one).\n"
      "Logs go to stderr in logfmt.",
      "  gpuscope serve --listen :9400 --interval 1s\n"
      "  gpuscope serve --collectors /etc/dcgm-exporter/default-counters.csv --hostname-label hostname\n"
      "  gpuscope --simulate serve & curl -s --retry 5 --retry-connrefused 127.0.0.1:9400/metrics");
  ServeOptions o;
  std::string listen = "127.0.0.1:9400", interval = "1s", hostname_label = "Hostname", log_level = "info";
  std::string max_processes = "64", max_connections = "256", http_timeout = "10s", counter_interval = "10s";
  bool no_hostname = false;
  bool no_history = false;
  std::string retention = "15d", flush_interval = "60s", query_timeout = "2m";
  app->add_option("--listen", listen, "address and port to listen on (default 127.0.0.1:9400; ':9400' for all)")
      ->type_name("ADDR:PORT");
  app->add_option("--interval", interval, "time between GPU readings, 100ms to 60s (default 1s)")
      ->type_name("DURATION");
  app->add_option("--counter-interval", counter_interval,
                  "read the cumulative counters (energy, violation times, ECC, remapped rows, PCIe replays) this "
                  "often, 0s to 1h (default 10s; 0s: every reading): they cost ms of CPU per GPU on a real driver")
      ->type_name("DURATION");
  app->add_option("--collectors", o.collectors_file,
                  "which DCGM fields to export: a dcgm-exporter collectors CSV (FIELD, type, help)")
      ->type_name("FILE");
  app->add_option("--hpc-job-mapping-dir", o.hpc_job_mapping_dir,
                  "add an hpc_job label from this directory: one file per GPU, named by its index, one job ID per "
                  "line (what dcgm-exporter reads; written by the scheduler's prolog/epilog)")
      ->type_name("DIR");
  app->add_option("--hostname-label", hostname_label,
                  "name of the host label: Hostname (dcgm-exporter before 4.8, default) or hostname")
      ->type_name("NAME");
  app->add_flag("--no-hostname", no_hostname, "leave the host label out (as dcgm-exporter's --no-hostname)");
  app->add_option("--max-processes", max_processes,
                  "per GPU, export per-process series for at most this many processes (default 64)")
      ->type_name("N");
  app->add_option("--log-level", log_level, "debug, info (default), warn or error")->type_name("LEVEL");
  app->add_option("--max-connections", max_connections, "concurrent HTTP connections (default 256)")
      ->type_name("N");
  app->add_option("--http-timeout", http_timeout,
                  "a request's headers must arrive within this; also the keep-alive idle limit (default 10s)")
      ->type_name("DURATION");
  app->add_option("--data-dir", o.data_dir,
                  "where the history is kept (created if missing; default $STATE_DIRECTORY under systemd, "
                  "/var/lib/gpuscope for root, else ~/.local/state/gpuscope)")
      ->type_name("DIR");
  app->add_option("--retention", retention, "how long history is kept (default 15d)")->type_name("DURATION");
  app->add_option("--flush-interval", flush_interval,
                  "how often history is written to disk, 1s to 10m; at most this much is lost to a crash (default 60s)")
      ->type_name("DURATION");
  app->add_option("--query-timeout", query_timeout, "longest a PromQL query may run (default 2m)")->type_name("DURATION");
  std::string max_samples = std::to_string(o.query_max_samples), max_concurrency = std::to_string(o.query_max_concurrency);
  app->add_option("--query.max-samples", max_samples,
                  "most samples one PromQL query may hold in memory at once, 16 bytes each (default 1000000)")
      ->type_name("N");
  app->add_option("--query.max-concurrency", max_concurrency,
                  "PromQL queries (API and rules) evaluated at once; the others wait their turn (default 4)")
      ->type_name("N");
  app->add_flag("--metrics-timestamps", o.metrics.timestamps,
               "write each GPU sample's reading time into /metrics, so Prometheus stores the agent's sample times "
               "(no staleness markers for them then, as Prometheus's rule for timestamped samples)");
  std::string evaluation_interval = "1m";
  std::vector<std::string> external_labels;
  app->add_option("--rules", o.rule_specs,
                  "Prometheus rule file, directory of *.yml/*.yaml, or glob; repeatable. Recording rules write to the "
                  "history, alerts show in ALERTS, /api/v1/alerts and /api/v1/rules (e.g. rules/gpu.rules.yml)")
      ->type_name("FILE|DIR|GLOB");
  app->add_option("--evaluation-interval", evaluation_interval,
                  "how often rule groups without their own interval are evaluated, 1s to 1h (default 1m)")
      ->type_name("DURATION");
  app->add_option("--external-label", external_labels,
                  "NAME=VALUE seen by rule templates as $externalLabels (e.g. cluster=prod); repeatable")
      ->type_name("NAME=VALUE");
  app->add_option("--external-url", o.external_url, "the URL rule templates see as $externalURL")->type_name("URL");
  app->add_option("--config", o.notify_config,
                  "where alerts are sent and which actions they run: Alertmanagers, receivers (webhook, Slack, "
                  "PagerDuty, email) routed by labels, remediation commands (see deploy/notify.example.yml)")
      ->type_name("FILE");
  app->add_flag("--no-history", no_history, "record no history (no data directory; the query API answers from nothing)");
  PriceFlags price_flags;
  add_price_flags(*app, price_flags);
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  auto prices = select_prices(price_flags);
  if (!prices) return std::unexpected(usage(prices.error()));
  o.prices = std::move(*prices);
  o.history = !no_history;
  if (o.data_dir.empty()) o.data_dir = default_data_dir();
  auto ret = promql::parse_duration(retention);  // PromQL's durations: 15d and 2w work too
  if (!ret || *ret < 60 * 1000) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --retention (at least 1m, e.g. 15d, 36h)", retention)));
  }
  o.retention = std::chrono::milliseconds(*ret);
  auto fi = parse_duration(flush_interval);
  if (!fi || *fi < std::chrono::seconds(1) || *fi > std::chrono::minutes(10)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --flush-interval (1s to 10m)", flush_interval)));
  }
  o.flush_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*fi);
  auto qt = parse_duration(query_timeout);
  if (!qt || *qt < std::chrono::milliseconds(100) || *qt > std::chrono::hours(1)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --query-timeout (100ms to 1h)", query_timeout)));
  }
  o.query_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*qt);
  auto qms = positive_integer(max_samples);
  if (!qms || *qms < promql::kMinMaxSamples || *qms > promql::kMaxMaxSamples) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --query.max-samples ({} to {})", max_samples,
                                             promql::kMinMaxSamples, promql::kMaxMaxSamples)));
  }
  o.query_max_samples = static_cast<std::size_t>(*qms);
  auto qmc = positive_integer(max_concurrency);
  if (!qmc || *qmc > kMaxQueryConcurrency) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --query.max-concurrency (1 to {})", max_concurrency,
                                             kMaxQueryConcurrency)));
  }
  o.query_max_concurrency = static_cast<std::size_t>(*qmc);
  auto ei = parse_duration(evaluation_interval);
  if (!ei || *ei < std::chrono::seconds(1) || *ei > std::chrono::hours(1)) {
    return std::unexpected(
        usage(fmt::format("invalid value '{}' for --evaluation-interval (1s to 1h, e.g. 30s, 1m)", evaluation_interval)));
  }
  o.evaluation_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*ei);
  for (const std::string& l : external_labels) {
    const auto eq = l.find('=');
    const std::string name = l.substr(0, eq);
    if (eq == std::string::npos || name.empty() || !store::is_valid_label_name(name) || name == "__name__") {
      return std::unexpected(usage(fmt::format("invalid value '{}' for --external-label (NAME=VALUE)", l)));
    }
    o.external_labels.emplace_back(name, l.substr(eq + 1));
  }
  if (!o.notify_config.empty() && o.rule_specs.empty()) {
    return std::unexpected(usage("--config sends the alerts of --rules: give --rules too"));
  }
  if (!o.rule_specs.empty() && no_history) {
    return std::unexpected(usage("--rules needs the history that --no-history turns off: rules query it"));
  }

  auto address = http::parse_listen_address(listen);
  if (!address) return std::unexpected(usage(fmt::format("{} in --listen", address.error())));
  std::tie(o.host, o.port) = *address;
  auto d = parse_duration(interval);
  if (!d || *d < kMinInterval || *d > kMaxInterval) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --interval (100ms to 60s, e.g. 1s, 500ms)", interval)));
  }
  o.interval = *d;
  auto ci = parse_duration(counter_interval);
  if (!ci || *ci > std::chrono::hours(1)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --counter-interval (0s to 1h, e.g. 10s)", counter_interval)));
  }
  o.counter_interval = *ci;
  if (hostname_label == "Hostname") {
    o.metrics.hostname_label = exporter::HostnameLabel::kHostname;
  } else if (hostname_label == "hostname") {
    o.metrics.hostname_label = exporter::HostnameLabel::kLowercase;
  } else {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --hostname-label (Hostname or hostname)", hostname_label)));
  }
  if (no_hostname) o.metrics.hostname_label = exporter::HostnameLabel::kNone;
  auto mp = positive_integer(max_processes);
  if (max_processes == "0") mp = 0;
  if (!mp || *mp > 100000) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --max-processes (0 to 100000)", max_processes)));
  }
  o.metrics.max_processes_per_gpu = static_cast<std::size_t>(*mp);
  auto level = log::parse_level(log_level);
  if (!level) return std::unexpected(usage(fmt::format("invalid value '{}' for --log-level (debug, info, warn, error)", log_level)));
  o.log_level = *level;
  auto mc = positive_integer(max_connections);
  if (!mc || *mc > 65536) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --max-connections (1 to 65536)", max_connections)));
  }
  o.max_connections = static_cast<unsigned>(*mc);
  auto ht = parse_duration(http_timeout);
  if (!ht || *ht < std::chrono::seconds(1) || *ht > std::chrono::hours(1)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --http-timeout (1s to 1h)", http_timeout)));
  }
  o.http_timeout = std::chrono::duration_cast<std::chrono::seconds>(*ht);
  return o;
}

int run_serve(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_serve_args(args);
  if (!options) return finish(options.error(), inv);
  const auto& o = *options;
  log::Logger log(inv.err, o.log_level);
  // One limiter for the query API and the rules: one concurrency bound, and cancel_all() ends both.
  promql::QueryLimiter query_limiter(o.query_max_concurrency);
  promql::EngineOptions engine_options;
  engine_options.timeout = o.query_timeout;
  engine_options.max_samples = o.query_max_samples;
  engine_options.limiter = &query_limiter;

  auto set = load_set(o, log);
  if (!set) return usage_error(inv.err, set.error());
  // Rules are read before anything starts: a bad rule file stops the agent with every problem listed.
  std::unique_ptr<rules::RuleManager> rule_manager;
  if (!o.rule_specs.empty()) {
    auto groups = load_rules(o.rule_specs);
    if (!groups) {
      for (const std::string& e : groups.error()) inv.err << "gpuscope: " << e << '\n';
      return kExitUsage;
    }
    rules::RuleManagerOptions ro;
    ro.default_interval_ms = o.evaluation_interval.count();
    std::vector<store::Label> external;
    for (const auto& [k, v] : o.external_labels) external.push_back({k, v});
    ro.external_labels = store::Labels(std::move(external));
    ro.external_url = o.external_url;
    ro.engine = engine_options;
    ro.engine.default_subquery_step_ms = o.evaluation_interval.count();
    std::size_t rule_count = 0;
    for (const auto& g : *groups) rule_count += g.rules.size();
    log.info("rules loaded", {{"groups", std::to_string(groups->size())}, {"rules", std::to_string(rule_count)}});
    rule_manager = std::make_unique<rules::RuleManager>(std::move(*groups), std::move(ro));
  }
  std::unique_ptr<notify::Notifier> notifier;
  if (!o.notify_config.empty()) {
    auto config = notify::load_notify_config(o.notify_config);
    if (!config) {
      for (const std::string& e : config.error()) inv.err << "gpuscope: " << e << '\n';
      return kExitUsage;
    }
    notify::NotifierOptions no;
    no.external_url = o.external_url;
    no.external_labels = rule_manager->options().external_labels;
    auto created = notify::Notifier::create(std::move(*config), log, std::move(no));
    if (!created) return usage_error(inv.err, fmt::format("--config {}: {}", o.notify_config, created.error()));
    notifier = std::move(*created);
    log.info("notifications configured", {{"file", o.notify_config}});
  }

  // The signals are taken by this thread with sigtimedwait, so every thread started below inherits a
  // mask that blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  if (inv.handle_signals) pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  nvml::BackendOptions reading;
  reading.watch_events = true;           // XIDs and ECC events as they happen
  reading.read_pcie_throughput = false;  // 2 x ~20 ms per GPU on a real driver; /metrics uses GPM's PCIe bytes
  reading.counter_interval = o.counter_interval;
  auto opened = open_backend(inv, reading);
  if (!opened) return opened.error();
  auto& backend = **opened;
  log.info("NVML loaded", {{"library", backend.system().library_path},
                           {"driver", backend.system().driver_version},
                           {"gpus", std::to_string(backend.gpus().size())}});

  // As dcgm-exporter: NODE_NAME (set from the node in a DaemonSet) names the host, since a pod's own
  // hostname is the pod's name.
  model::SystemInfo system = backend.system();
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0') system.hostname = node;

  // Prices are resolved once: the GPUs and the catalog are fixed for the agent's life.
  options->metrics.hourly_price_dollars = hourly_prices(o.prices, backend.gpus());
  options->metrics.price_tier = std::string(model::price_tier_name(o.prices.tier));
  if (o.prices.catalog) {
    const std::string& file = o.prices.catalog->source();
    log.info("price catalog", {{"file", file.empty() ? "none (--price-override only)" : file},
                               {"tier", o.metrics.price_tier},
                               {"priced_gpus", std::to_string(o.metrics.hourly_price_dollars.size())}});
  }

  // Logged once per change, not per reading: a GPU lost or back, readings slower than the interval.
  std::vector<bool> was_up(backend.gpus().size(), true);
  bool was_slow = false;
  bool first = true;
  std::optional<sampler::HpcJobMap> hpc_jobs;
  if (!o.hpc_job_mapping_dir.empty()) hpc_jobs.emplace(o.hpc_job_mapping_dir);
  std::string hpc_error;
  auto read = [&] {
    auto snapshot = backend.sample();
    if (hpc_jobs) {
      std::string error;
      hpc_jobs->label(snapshot, &error);
      // The directory may come and go with the scheduler: logged when that changes, not per reading.
      if (error != hpc_error) {
        if (error.empty()) {
          log.info("HPC job mapping directory readable", {{"dir", hpc_jobs->dir()}});
        } else {
          log.warn("HPC job mapping directory unreadable; no hpc_job labels until it is", {{"err", error}});
        }
        hpc_error = error;
      }
    }
    for (const auto& g : snapshot.gpus) {
      if (g.index >= was_up.size() || g.up == was_up[g.index]) continue;
      was_up[g.index] = g.up;
      const auto& info = backend.gpus()[g.index];
      if (g.up) {
        log.info("GPU answers again", {{"gpu", std::to_string(g.index)}, {"uuid", info.uuid}});
      } else {
        log.warn("GPU lost: its series are withdrawn until NVML answers again",
                 {{"gpu", std::to_string(g.index)}, {"uuid", info.uuid}, {"nvml_code", std::to_string(g.down_error_code)}});
      }
    }
    // The first reading waits out GPM's first window once; only later ones can be slow.
    const bool slow = !std::exchange(first, false) && snapshot.duration > o.interval;
    if (slow != was_slow) {
      was_slow = slow;
      if (slow) {
        log.warn("a GPU reading took longer than the interval; readings are skipped until it is faster",
                 {{"took", fmt::format("{}ms", std::chrono::duration_cast<std::chrono::milliseconds>(snapshot.duration).count())}});
      } else {
        log.info("GPU readings are back within the interval");
      }
    }
    return snapshot;
  };
  // History: opened before the first reading, so a bad data directory stops the agent at start.
  std::unique_ptr<store::Tsdb> tsdb;
  std::optional<HistoryRecorder> recorder;
  struct LockHolder {
    int fd = -1;
    ~LockHolder() {
      if (fd >= 0) ::close(fd);  // releases the flock (on _Exit the kernel does)
    }
  } data_dir_lock;
  store::SeriesSet no_history;
  if (o.history) {
    store::TsdbOptions so;
    so.data_dir = o.data_dir;
    so.retention_ms = o.retention.count();
    so.flush_interval_ms = o.flush_interval.count();
    // One agent per data directory: two writers would interleave readings and reject each other's.
    auto lock = lock_data_dir(o.data_dir);
    if (!lock) {
      inv.err << "gpuscope: --data-dir " << o.data_dir << ": " << lock.error() << '\n';
      return kExitRuntime;
    }
    data_dir_lock.fd = *lock;
    so.warn = [&log](std::string_view what) { log.warn("history: damaged chunk skipped", {{"detail", std::string(what)}}); };
    auto opened_store = store::Tsdb::open(std::move(so), unix_ms_now());
    if (!opened_store) {
      inv.err << "gpuscope: --data-dir " << o.data_dir << ": " << opened_store.error() << '\n';
      return kExitRuntime;
    }
    tsdb = std::move(*opened_store);
    recorder.emplace(*tsdb, backend.gpus(), system, o.metrics, log);
    recorder->set_metric_set(*set);
    log.info("history", {{"data_dir", o.data_dir},
                         {"series", std::to_string(tsdb->stats().head.series)},
                         {"retention", fmt::format("{}h", o.retention.count() / 3600000.0)}});
  }
  auto read_and_record = [&] {
    auto snapshot = read();
    if (recorder) recorder->record(snapshot);
    return snapshot;
  };
  sampler::Sampler sampler(read_and_record, o.interval);
  http::AgentRoutes routes(sampler, backend.gpus(), system, o.metrics, GPUSCOPE_VERSION);
  routes.set_metric_set(*set);
  if (recorder) recorder->set_agent_status([&routes] { return routes.agent_status(); });
  http::QueryApiOptions api_options;
  api_options.engine = engine_options;
  api_options.version = GPUSCOPE_VERSION;
  const store::Queryable& history = tsdb ? static_cast<const store::Queryable&>(*tsdb) : no_history;
  http::QueryApi api(history, api_options, unix_ms_now);
  http::RulesApi rules_api(rule_manager.get());
  std::optional<RuleEvaluationLoop> rule_loop;
  std::optional<rules::AlertStateFile> alert_state;
  if (rule_manager) {
    // Alerts carry on from where the last run left them: no second notification, `for` progress kept.
    alert_state.emplace(o.data_dir + "/alerts.json");
    if (auto restored = alert_state->restore(*rule_manager, unix_ms_now()); !restored) {
      log.warn("alert state not restored; alerts start afresh", {{"err", restored.error()}});
    } else if (*restored > 0) {
      log.info("alert state restored", {{"alerts", std::to_string(*restored)}});
    }
    rule_loop.emplace(*rule_manager, *tsdb, &*alert_state, notifier.get(), unix_ms_now, log);
    routes.set_status_extension([&rule_loop, &notifier](exporter::AgentStatus& status) {
      if (auto groups = rule_loop->status()) status.rule_groups = *groups;
      if (notifier) status.notifications = notification_status(notifier->stats());
    });
  }

  // The first reading before the port opens: a client that connects as soon as it can (`serve & curl`,
  // a Prometheus already scraping) gets GPU series and a 200 from /healthz, never an empty page.
  sampler.start();
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  for (auto waited = std::chrono::milliseconds(0); !sampler.latest(); waited += kSignalPoll) {
    if (waited >= kFirstReadingWait) {
      log.warn("no GPU reading yet; listening anyway (/healthz answers 503 until one comes)",
               {{"waited", fmt::format("{}s", kFirstReadingWait.count())}});
      break;
    }
    if (inv.stop.load(std::memory_order_relaxed)) return kExitOk;
    if (!inv.handle_signals) {
      sampler.wait_for(1, kSignalPoll);
      continue;
    }
    // SIGHUP is left pending for the loop below; only a stop request ends the wait early.
    const timespec poll{0, std::chrono::duration_cast<std::chrono::nanoseconds>(kSignalPoll).count()};
    if (const int sig = sigtimedwait(&stop_signals, nullptr, &poll); sig == SIGINT || sig == SIGTERM) {
      log.info("stopping before the first reading", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
      if (!sampler.stop(kStopGrace)) {
        inv.err.flush();
        std::_Exit(kExitOk);  // the first reading is inside a hung NVML call; do not wait for it
      }
      return kExitOk;
    }
  }

  http::HttpServerOptions http_options;
  http_options.host = o.host;
  http_options.port = o.port;
  http_options.max_connections = o.max_connections;
  http_options.header_timeout = o.http_timeout;
  auto server = http::HttpServer::start(
      http_options,
      [&routes, &api, &rules_api](const http::HttpRequest& r) {
        if (http::QueryApi::handles(r.path())) return api.handle(r);
        if (http::RulesApi::handles(r.path())) return rules_api.handle(r);
        return routes.handle(r);
      },
      log);
  if (!server) {
    inv.err << "gpuscope: " << server.error() << '\n';
    if (!sampler.stop(kStopGrace) && inv.handle_signals) {
      inv.err.flush();
      std::_Exit(kExitRuntime);
    }
    return kExitRuntime;
  }
  if (rule_loop) {
    // The first evaluation waits for the first reading, so rules never start on an empty store.
    rule_loop->start([&sampler] { sampler.wait_for(1, std::chrono::seconds(30)); });
  }
  const std::string shown_host = o.host.empty() ? "" : (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host);
  log.info("listening", {{"address", fmt::format("{}:{}", shown_host, (*server)->port())},
                         {"interval", fmt::format("{}ms", std::chrono::duration_cast<std::chrono::milliseconds>(o.interval).count())}});

  for (;;) {
    if (inv.stop.load(std::memory_order_relaxed)) break;
    if (!inv.handle_signals) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    // Blocks until a signal comes: an idle agent has no timer of its own to wake for.
    const int sig = sigwaitinfo(&signals, nullptr);
    if (sig == SIGINT || sig == SIGTERM) {
      log.info("stopping", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
      break;
    }
    if (sig == SIGHUP) {
      if (rule_manager) {
        if (auto groups = load_rules(o.rule_specs); groups) {
          log.info("rules reloaded", {{"groups", std::to_string(groups->size())}});
          rule_manager->replace(std::move(*groups));
          rule_loop->wake();
        } else {
          for (const std::string& e : groups.error()) log.error("rule file reload failed; keeping the previous rules", {{"err", e}});
        }
      }
      if (o.collectors_file.empty()) {
        if (!rule_manager) log.info("SIGHUP: no collectors or rule files to reload");
        continue;
      }
      if (auto reloaded = load_set(o, log); reloaded) {
        routes.set_metric_set(*reloaded);
        if (recorder) recorder->set_metric_set(*reloaded);
      } else {
        routes.reload_failed();
        log.error("collectors file reload failed; keeping the previous one", {{"err", reloaded.error()}});
      }
    }
  }

  (*server)->stop();
  if (rule_loop) rule_loop->stop();
  // Queued notifications (a resolve sent at the last evaluation) get a moment to go out.
  if (notifier) notifier->stop(std::chrono::seconds(2));
  if (!sampler.stop(kStopGrace)) {
    if (inv.handle_signals) {
      // Joining would wait for the driver; a hung NVML call must not keep the agent from stopping.
      log.warn("a GPU reading is still inside an NVML call; exiting without waiting for it");
      inv.err.flush();
      std::_Exit(kExitOk);
    }
    sampler.stop();
  }
  if (tsdb) {
    // What is in memory goes to disk on a clean stop; a kill -9 loses at most one flush interval.
    if (auto flushed = tsdb->flush(unix_ms_now()); !flushed) log.error("history: final flush failed", {{"err", flushed.error()}});
  }
  log.info("stopped");
  return kExitOk;
}

}  // namespace gpuscope::cli
