#include "cli/serve_verb.h"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "agent/agent.h"
#include "cli/kubernetes_flags.h"
#include "analysis/thresholds.h"
#include "http/diagnosis_api.h"
#include "http/http_server.h"
#include "http/route_prefix.h"
#include "promql/parser.h"
#include "remote_write/receiver_config.h"
#include "store/labels.h"
#include "store/tsdb.h"

namespace gpuscope::cli {
namespace {

constexpr auto kMinInterval = std::chrono::milliseconds(100);
constexpr auto kMaxInterval = std::chrono::seconds(60);
// --query.max-concurrency: each query may hold --query.max-samples; a thousand is already far past sane.
constexpr long long kMaxQueryConcurrency = 1000;

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

std::expected<ServeOptions, ParseExit> parse_serve_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "serve",
      "Run the node agent: read every GPU once per --interval and serve the readings over HTTP.\n"
      "  /              the web dashboard: a card per GPU, live charts by failure mode, processes, alerts, cost\n"
      "  /metrics       Prometheus text (OpenMetrics when asked), dcgm-exporter's metric names and labels\n"
      "  /healthz       200 while readings are fresh (also /health, dcgm-exporter's path)\n"
      "  /api/v1/gpus   GPUs and their latest values as JSON\n"
      "  /api/v1/query, /api/v1/query_range, /api/v1/series, /api/v1/labels, /api/v1/label/NAME/values\n"
      "                 PromQL over the recorded history, Prometheus's HTTP API (Grafana can use it as a\n"
      "                 Prometheus data source)\n"
      "  /api/v1/rules, /api/v1/alerts   the --rules groups and their alerts, as Prometheus shows them\n"
      "  /api/v1/diagnosis   each GPU's verdict (why it is slow or wasted), re-evaluated every 5 s\n"
      "  /api/v1/events (POST), /api/v1/training, /api/v1/summary   training jobs' step events, what the\n"
      "                 agent found (stalled, straggler, memory kept between epochs), a GPU's figures over a span\n"
      "  /api/v1/check  the health gate of `gpuscope check` over the latest reading\n"
      "It listens on 127.0.0.1:9400 by default; --listen :9400 listens on every interface (what Prometheus on\n"
      "another host needs). SIGTERM/SIGINT stop it; SIGHUP reloads --collectors, --rules and the price\n"
      "catalog (a bad file keeps the old one).\n"
      "Logs go to stderr in logfmt.",
      "  gpuscope serve --listen :9400 --interval 1s\n"
      "  gpuscope serve --collectors /etc/dcgm-exporter/default-counters.csv --hostname-label hostname\n"
      "  gpuscope --simulate serve & curl -s --retry 5 --retry-connrefused 127.0.0.1:9400/metrics\n"
      "  gpuscope serve --preemption-notice gce --preemption-pidfile /run/train.pid --config notify.yml");
  ServeOptions o;
  std::string listen = "127.0.0.1:9400", interval = "1s", hostname_label = "Hostname", log_level = "info";
  std::string max_processes = "64", max_connections = "256", http_timeout = "10s", counter_interval = "10s",
              process_interval = "5s";
  bool no_hostname = false;
  bool no_history = false;
  std::string retention = "15d", flush_interval = "60s", query_timeout = "2m";
  app->add_option("--listen", listen, "address and port to listen on (default 127.0.0.1:9400; ':9400' for all)")
      ->type_name("ADDR:PORT");
  app->add_option("--interval", interval, "time between GPU readings, 100ms to 60s (default 1s)")
      ->type_name("DURATION");
  app->add_option("--counter-interval", counter_interval,
                  "read the cumulative counters (energy, violation times, ECC, remapped rows, PCIe replays) and the "
                  "rarely changing gauges (power limits, current PCIe link, BAR1) this often, 0s to 1h (default 10s; "
                  "0s: every reading): they cost ms of CPU per GPU on a real driver")
      ->type_name("DURATION");
  app->add_option("--process-utilization-interval", process_interval,
                  "ask each process's SM and memory utilization this often, and at once when a process appears, "
                  "0s to 1h (default 5s; 0s: every reading): the driver answers the average since the last "
                  "ask, so nothing is missed, and a call costs ~1 ms of CPU per GPU on a real driver")
      ->type_name("DURATION");
  app->add_flag("--nvml-call-counts", o.count_nvml_calls,
                "export gpuscope_nvml_calls_total{function}: the calls made to each NVML function (to see what a "
                "reading costs the driver)");
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
  std::string route_prefix;
  app->add_option("--web.route-prefix", route_prefix,
                  "answer every route below this path (/gpuscope/metrics, /gpuscope/ for the dashboard), for a "
                  "reverse proxy that forwards one path of a shared host (default: none)")
      ->type_name("PATH");
  app->add_option("--web.config.file", o.web_config_file,
                  "TLS, client certificates, basic auth and response headers, in the Prometheus exporter-toolkit's "
                  "web config format (see docs/security.md); re-read when it or a file it names changes")
      ->type_name("FILE");
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
  std::vector<std::string> remote_write_urls;
  std::string remote_write_config;
  app->add_option("--remote-write", remote_write_urls,
                  "push the history to this Prometheus remote-write receiver (e.g. "
                  "http://prometheus:9090/api/v1/write), resuming after outages and restarts; repeatable "
                  "(see docs/remote-write.md)")
      ->type_name("URL");
  app->add_option("--remote-write.config", remote_write_config,
                  "remote-write receivers with auth, headers, write_relabel_configs and queue settings, in "
                  "Prometheus's remote_write format (see docs/remote-write.md)")
      ->type_name("FILE");
  app->add_option("--config", o.notify_config,
                  "where alerts are sent and which actions they run: Alertmanagers, receivers (webhook, Slack, "
                  "PagerDuty, email) routed by labels, remediation commands (see deploy/notify.example.yml)")
      ->type_name("FILE");
  app->add_flag("--no-history", no_history,
                "record no history (no data directory; the query API answers from nothing; the diagnosis keeps only "
                "its window, and diagnoses no other)");
  bool no_diagnosis = false;
  std::string diagnosis_interval, diagnosis_window = "30s";
  std::vector<std::string> thresholds;
  app->add_option("--diagnosis.interval", diagnosis_interval,
                  "how often each GPU's verdict is evaluated, 100ms to 1h (default 5s, or --interval if longer)")
      ->type_name("DURATION");
  app->add_option("--diagnosis.window", diagnosis_window, "the readings each verdict is drawn from, 1s to 1h (default 30s)")
      ->type_name("DURATION");
  app->add_option("--threshold", thresholds,
                  "set one of the diagnosis' thresholds (see `gpuscope diagnose --help`); repeatable")
      ->type_name("NAME=VALUE");
  app->add_flag("--no-diagnosis", no_diagnosis, "evaluate no verdicts (no gpuscope_diagnosis_info series)");
  std::string stall_after = "5m", straggler_cv = "0.1", max_jobs = "64";
  app->add_option("--events-socket", o.events_socket,
                  "the Unix datagram socket training processes send step events to (default "
                  "$RUNTIME_DIRECTORY/events.sock, /run/gpuscope/events.sock or $XDG_RUNTIME_DIR/gpuscope/events.sock; "
                  "none: POST /api/v1/events only)")
      ->type_name("PATH");
  app->add_option("--events-group", o.events_group, "the group that may send to the events socket (mode 0660)")
      ->type_name("GROUP");
  app->add_option("--training.stall-after", stall_after,
                  "a job with no step for this long while its processes live is stalled, 10s to 24h (default 5m)")
      ->type_name("DURATION");
  app->add_option("--training.straggler-cv", straggler_cv,
                  "std/mean of the ranks' step times above which the slowest rank is a straggler (default 0.1)")
      ->type_name("RATIO");
  app->add_option("--training.max-jobs", max_jobs, "training jobs the agent follows at once, 1 to 10000 (default 64)")
      ->type_name("N");
  std::string preemption_notice, preemption_metadata_url, preemption_poll_interval = "5s", preemption_signal = "TERM";
  app->add_option("--preemption-notice", preemption_notice,
                  "on a spot/preemptible VM, poll the cloud's preemption notice: gce, aws (IMDSv2), or an http(s) URL "
                  "(404, an empty body, FALSE or 0: no notice; any other 200 body is the notice). On the first: a log "
                  "line, gpuscope_preemption_notice 1, a GpuNodePreempted alert to --config's receivers at once, and "
                  "--preemption-signal to the processes on the GPUs")
      ->type_name("gce|aws|URL");
  app->add_option("--preemption-poll-interval", preemption_poll_interval,
                  "how often the preemption notice is polled, 100ms to 30s (default 5s)")
      ->type_name("DURATION");
  app->add_option("--preemption-signal", preemption_signal,
                  "the signal a notice sends: TERM (default), INT, HUP, QUIT, USR1, USR2, KILL, ABRT, ALRM, CONT, or "
                  "none. Signalling needs root, the job's user or CAP_KILL (in Kubernetes also hostPID)")
      ->type_name("NAME");
  app->add_option("--preemption-pidfile", o.preemption_pidfile,
                  "signal only the pid in this file (read when the notice comes), not the GPUs' processes")
      ->type_name("FILE");
  app->add_option("--preemption-metadata-url", preemption_metadata_url,
                  "the metadata service's address in place of the provider's (its paths and headers kept), e.g. "
                  "http://127.0.0.1:8080 for a test server")
      ->type_name("URL");
  std::string fabric_interval = "10s";
  bool no_fabric = false;
  app->add_option("--fabric-interval", fabric_interval,
                  "read the node's RDMA ports (InfiniBand, RoCE, EFA) and physical network interfaces from sysfs this "
                  "often, 1s to 1h, or 0 for never (default 10s): gpuscope_fabric_* series")
      ->type_name("DURATION");
  app->add_flag("--no-fabric", no_fabric, "read no fabric counters (as --fabric-interval 0)");
  // For tests and containers that mount the host's /sys elsewhere; GPUSCOPE_SYSFS_ROOT says the same. Under
  // --simulate the fabric is read only from a root named so (the host's NICs are not the simulated GPUs').
  app->add_option("--sysfs-root", o.fabric_sysfs_root, "where sysfs is mounted (default /sys)")
      ->type_name("DIR")
      ->group("");
  PriceFlags price_flags;
  add_price_flags(*app, price_flags);
  KubernetesFlags kubernetes_flags;
  add_kubernetes_flags(*app, kubernetes_flags);
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  if (o.fabric_sysfs_root.empty()) {
    if (const char* root = std::getenv("GPUSCOPE_SYSFS_ROOT"); root != nullptr) o.fabric_sysfs_root = root;
  }
  auto fab = fabric_interval == "0" ? std::optional(std::chrono::nanoseconds(0)) : parse_duration(fabric_interval);
  if (!fab || (fab->count() != 0 && (*fab < agent::kMinFabricInterval || *fab > agent::kMaxFabricInterval))) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --fabric-interval (1s to 1h, or 0 for never)", fabric_interval)));
  }
  o.fabric_interval = no_fabric ? std::chrono::milliseconds(0) : std::chrono::duration_cast<std::chrono::milliseconds>(*fab);
  auto kubernetes = select_kubernetes(kubernetes_flags);
  if (!kubernetes) return std::unexpected(usage(kubernetes.error()));
  o.kubernetes = std::move(*kubernetes);
  auto prices = select_prices(price_flags);
  if (!prices) return std::unexpected(usage(prices.error()));
  o.price_catalog = std::move(prices->catalog);
  o.price_tier = prices->tier;
  // SIGHUP reads the same flags again: an edited catalog file (or a default one installed since) prices
  // the GPUs from the next reading on.
  o.reload_price_catalog = [price_flags]() -> std::expected<std::optional<model::PriceCatalog>, std::string> {
    auto reloaded = select_prices(price_flags);
    if (!reloaded) return std::unexpected(reloaded.error());
    return std::move(reloaded->catalog);
  };
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
  o.diagnosis = !no_diagnosis;
  if (!diagnosis_interval.empty()) {
    auto di = parse_duration(diagnosis_interval);
    if (!di || *di < kMinInterval || *di > std::chrono::hours(1)) {
      return std::unexpected(
          usage(fmt::format("invalid value '{}' for --diagnosis.interval (100ms to 1h, e.g. 1s, 10s)", diagnosis_interval)));
    }
    o.diagnosis_interval = std::chrono::duration_cast<std::chrono::milliseconds>(*di);
  }
  auto dw = parse_duration(diagnosis_window);
  if (!dw || *dw < http::kMinDiagnosisWindow || *dw > http::kMaxDiagnosisWindow) {
    return std::unexpected(
        usage(fmt::format("invalid value '{}' for --diagnosis.window (1s to 1h, e.g. 30s, 5m)", diagnosis_window)));
  }
  o.diagnosis_window = std::chrono::duration_cast<std::chrono::milliseconds>(*dw);
  for (const std::string& t : thresholds) {
    if (auto set = analysis::set_threshold(o.diagnosis_thresholds, t); !set) {
      return std::unexpected(usage(fmt::format("--threshold: {}", set.error())));
    }
  }
  auto sa = parse_duration(stall_after);
  if (!sa || *sa < std::chrono::seconds(10) || *sa > std::chrono::hours(24)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --training.stall-after (10s to 24h, e.g. 5m)", stall_after)));
  }
  o.training_thresholds.stall_after = std::chrono::duration_cast<std::chrono::milliseconds>(*sa);
  {
    double cv = 0;
    const auto [end, ec] = std::from_chars(straggler_cv.data(), straggler_cv.data() + straggler_cv.size(), cv);
    if (ec != std::errc() || end != straggler_cv.data() + straggler_cv.size() || !(cv >= 0.01) || cv > 10) {
      return std::unexpected(usage(fmt::format("invalid value '{}' for --training.straggler-cv (0.01 to 10, e.g. 0.1)", straggler_cv)));
    }
    o.training_thresholds.straggler_cv = cv;
  }
  auto mj = positive_integer(max_jobs);
  if (!mj || *mj < 1 || *mj > 10000) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --training.max-jobs (1 to 10000)", max_jobs)));
  }
  o.training_limits.max_jobs = static_cast<std::size_t>(*mj);
  if (!preemption_notice.empty()) {
    auto source = agent::parse_preemption_notice(preemption_notice);
    if (!source) return std::unexpected(usage(source.error()));
    o.preemption_source = *source;
  } else if (!preemption_metadata_url.empty() || !o.preemption_pidfile.empty() ||
             app->count("--preemption-poll-interval") > 0 || app->count("--preemption-signal") > 0) {
    return std::unexpected(usage("the --preemption-* flags need --preemption-notice (gce, aws or a URL)"));
  }
  if (!preemption_metadata_url.empty()) {
    auto base = agent::parse_metadata_base_url(preemption_metadata_url);
    if (!base) return std::unexpected(usage(base.error()));
    o.preemption_metadata_url = *base;
  }
  auto ppi = agent::parse_preemption_poll_interval(preemption_poll_interval);
  if (!ppi) return std::unexpected(usage(ppi.error()));
  o.preemption_poll_interval = *ppi;
  auto psig = agent::parse_signal_name(preemption_signal);
  if (!psig) return std::unexpected(usage(psig.error()));
  o.preemption_signal = *psig;
  // A preemption notice alone may have receivers: --config then needs no --rules.
  if (!o.notify_config.empty() && o.rule_specs.empty() && !o.preemption_source) {
    return std::unexpected(usage("--config sends the alerts of --rules (or of --preemption-notice): give --rules too"));
  }
  if (!o.rule_specs.empty() && no_history) {
    return std::unexpected(usage("--rules needs the history that --no-history turns off: rules query it"));
  }
  for (const std::string& url : remote_write_urls) {
    auto receiver = remote_write::receiver_from_url(url);
    if (!receiver) return std::unexpected(usage(fmt::format("--remote-write: {}", receiver.error())));
    o.remote_write.push_back(std::move(*receiver));
  }
  if (!remote_write_config.empty()) {
    auto receivers = remote_write::load_receivers_file(remote_write_config);
    if (!receivers) return std::unexpected(usage(fmt::format("--remote-write.config: {}", receivers.error())));
    for (auto& r : *receivers) o.remote_write.push_back(std::move(r));
  }
  if (!o.remote_write.empty() && no_history) {
    return std::unexpected(usage("--remote-write sends the history that --no-history turns off: drop one"));
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
  auto pi = parse_duration(process_interval);
  if (!pi || *pi > std::chrono::hours(1)) {
    return std::unexpected(
        usage(fmt::format("invalid value '{}' for --process-utilization-interval (0s to 1h, e.g. 5s)", process_interval)));
  }
  o.process_utilization_interval = *pi;
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
  auto prefix = http::normalize_route_prefix(route_prefix);
  if (!prefix) return std::unexpected(usage(prefix.error()));
  o.route_prefix = std::move(*prefix);
  return o;
}

int run_serve(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_serve_args(args);
  if (!options) return finish(options.error(), inv);
  const ServeOptions& o = *options;
  log::Logger log(inv.err, o.log_level);
  auto print = [&inv](const agent::AgentError& e) {
    for (const std::string& line : e.lines) inv.err << "gpuscope: " << line << '\n';
    inv.err.flush();
    return e.kind == agent::AgentError::Kind::kConfig ? kExitUsage : kExitRuntime;
  };

  // The signals are taken by this thread with sigwaitinfo, so every thread the agent starts inherits a
  // mask that blocks them (the notifier's senders start as its file is loaded: before this, a SIGHUP
  // could land on one of them and end the process).
  sigset_t signals, stop_signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (inv.handle_signals) pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // One malloc arena for the agent's threads: glibc gives each thread that allocates an arena of its own
  // (up to 8 a core), and memory freed in one stays resident. The threads allocate little and seldom at
  // once; one arena kept 1.3 MiB less resident with the diagnosis' thread (bench/agent_footprint.sh).
  // A MALLOC_ARENA_MAX the user set still decides.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);

  // Files are read before anything starts: a bad one stops the agent with every problem listed.
  agent::AgentConfig config = o;
  if (config.fabric_interval.count() == 0) {
    config.fabric_sysfs_root.clear();
  } else if (config.fabric_sysfs_root.empty()) {
    // Under --simulate the host's NICs have nothing to do with the simulated GPUs: the scenario's are read.
    config.fabric_from_simulator = inv.global.simulate;
    if (!inv.global.simulate) config.fabric_sysfs_root = "/sys";
  }
  config.version = GPUSCOPE_VERSION;
  auto loaded = agent::Agent::load(std::move(config), log);
  if (!loaded) return print(loaded.error());
  agent::Agent& agent = **loaded;


  nvml::BackendOptions reading;
  reading.watch_events = true;           // XIDs and ECC events as they happen
  reading.read_pcie_throughput = false;  // 2 x ~20 ms per GPU on a real driver; /metrics uses GPM's PCIe bytes
  reading.counter_interval = o.counter_interval;
  reading.process_utilization_interval = o.process_utilization_interval;
  reading.count_calls = o.count_nvml_calls;
  auto opened = open_backend(inv, reading);
  if (!opened) return opened.error();
  log.info("NVML loaded", {{"library", (*opened)->system().library_path},
                           {"driver", (*opened)->system().driver_version},
                           {"gpus", std::to_string((*opened)->gpus().size())}});

  // A hung NVML call must not keep the agent from stopping: joining would wait for the driver.
  auto stop_agent = [&](int code) {
    if (!agent.stop() && inv.handle_signals) {
      inv.err.flush();
      std::_Exit(code);
    }
    return code;
  };
  // While the agent waits for its first reading only a stop request ends the wait; SIGHUP stays pending.
  auto stop_requested = [&] {
    if (inv.stop.load(std::memory_order_relaxed)) return true;
    if (!inv.handle_signals) return false;
    const timespec now{0, 0};
    const int sig = sigtimedwait(&stop_signals, nullptr, &now);
    if (sig != SIGINT && sig != SIGTERM) return false;
    log.info("stopping before the first reading", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
    return true;
  };
  auto started = agent.start(std::move(*opened), stop_requested);
  if (!started) {
    const int code = print(started.error());
    return stop_agent(code);
  }
  if (*started == agent::Agent::Started::kStopRequested) return stop_agent(kExitOk);

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
    if (sig == SIGHUP) agent.reload();
  }
  return stop_agent(kExitOk);
}

}  // namespace gpuscope::cli
