// AgentConfig: everything `gpuscope serve` is told, as one plain value. The CLI turns flags into it;
// the Agent builds and wires its parts from it and from nothing else.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/fabric_collector.h"
#include "agent/metadata_endpoint.h"
#include "agent/preemption_watcher.h"
#include "analysis/thresholds.h"
#include "analysis/training_findings.h"
#include "analysis/training_jobs.h"
#include "export/gpu_metrics.h"
#include "kubernetes/pod_resources_watcher.h"
#include "model/clock.h"
#include "model/price_catalog.h"
#include "promql/engine.h"
#include "promql/query_limiter.h"
#include "remote_write/receiver_config.h"

namespace gpuscope::agent {

struct AgentConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 9400;
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  std::chrono::nanoseconds counter_interval = std::chrono::seconds(10);
  std::chrono::nanoseconds process_utilization_interval = std::chrono::seconds(5);
  bool count_nvml_calls = false;  // export gpuscope_nvml_calls_total (serve --nvml-call-counts)
  std::string collectors_file;      // empty: the built-in set
  std::string hpc_job_mapping_dir;  // empty: no hpc_job label
  exporter::GpuMetricsOptions metrics;
  unsigned max_connections = 256;
  std::chrono::seconds http_timeout{10};
  std::string route_prefix;  // "/gpuscope": every route answered below it (normalized); empty: none
  // --web.config.file: exporter-toolkit's web config (TLS, client certificates, basic auth, headers),
  // read at load and again when it or a file it names changes. Empty: plain HTTP, no auth.
  std::string web_config_file;
  // History: the exported series recorded under data_dir, kept for `retention`, written every
  // `flush_interval` (at most that much is lost to a kill -9).
  bool history = true;
  std::string data_dir;
  std::chrono::milliseconds retention = std::chrono::hours(24 * 15);
  std::chrono::milliseconds flush_interval = std::chrono::seconds(60);
  // PromQL's limits, for the query API and the rules alike (as Prometheus's --query.* flags).
  std::chrono::milliseconds query_timeout = promql::kDefaultQueryTimeout;
  std::size_t query_max_samples = promql::kDefaultMaxSamples;
  std::size_t query_max_concurrency = promql::QueryLimiter::kDefaultMaxConcurrency;
  // Prometheus rule files (files, directories, globs) evaluated against the history; groups without
  // an interval use evaluation_interval. External labels and URL are what templates see.
  std::vector<std::string> rule_specs;
  std::chrono::milliseconds evaluation_interval = std::chrono::minutes(1);
  std::vector<std::pair<std::string, std::string>> external_labels;
  std::string external_url;
  // Where alerts go (Alertmanager, webhook, Slack, PagerDuty, email) and the remediation actions.
  std::string notify_config;
  // The catalog and tier behind gpuscope_gpu_hourly_price_dollars (no catalog: no such series).
  std::optional<model::PriceCatalog> price_catalog;
  model::PriceTier price_tier = model::PriceTier::kOnDemand;
  // Reads the catalog again as the flags named it (SIGHUP; no catalog: no prices), in the same tier: the
  // new prices count from the next reading on. Empty: the prices stay as they started.
  std::function<std::expected<std::optional<model::PriceCatalog>, std::string>()> reload_price_catalog;
  // The diagnosis (a verdict per GPU), evaluated on a thread of its own over the recent readings the
  // history recorder keeps for it (store::RecentWindow, with or without history) and written back to the
  // history, where there is one, as gpuscope_diagnosis_info.
  bool diagnosis = true;
  std::chrono::milliseconds diagnosis_interval{0};  // 0: the reading interval
  std::chrono::milliseconds diagnosis_window = std::chrono::seconds(30);
  analysis::Thresholds diagnosis_thresholds;
  // Training events: the Unix datagram socket training processes send to (empty: the default place,
  // see default_events_socket_path; "none": no socket, POST /api/v1/events only), the group that may send
  // (mode 0660), the limits on what the jobs may make the agent hold, and when a job counts as stalled
  // or a rank as a straggler.
  std::string events_socket;
  std::string events_group;
  analysis::TrainingLimits training_limits;
  analysis::TrainingThresholds training_thresholds;
  // Spot/preemptible VMs (--preemption-notice): the cloud's preemption notice, polled on a thread of its
  // own every preemption_poll_interval, each request cut at preemption_timeout. The run's first notice is
  // logged, sets gpuscope_preemption_notice, goes out as a GpuNodePreempted alert through the notifier
  // (with --config) and sends preemption_signal to the GPUs' processes, or only to the pid in
  // preemption_pidfile. No source: nothing is polled.
  std::optional<PreemptionSource> preemption_source;
  std::string preemption_metadata_url;  // empty: the provider's own address (tests: a loopback server)
  std::chrono::milliseconds preemption_poll_interval = kDefaultPreemptionPollInterval;
  std::chrono::milliseconds preemption_timeout = kDefaultMetadataTimeout;
  std::optional<int> preemption_signal = SIGTERM;  // nullopt: --preemption-signal none
  std::string preemption_pidfile;                  // empty: the GPUs' compute processes
  // The fabric collector (serve --fabric-interval, --sysfs-root): the node's RDMA ports and physical network
  // interfaces read from sysfs below fabric_sysfs_root (empty: no collector) every fabric_interval, on a
  // thread of its own, exported as gpuscope_fabric_* next to the GPU families.
  std::string fabric_sysfs_root;
  std::chrono::milliseconds fabric_interval = kDefaultFabricInterval;
  // With no root named: the simulated driver's tree of the scenario's `fabric:` (--simulate), if it has one.
  bool fabric_from_simulator = false;
  // serve --kubernetes: the kubelet's pod-resources API asked on a thread of its own; each GPU's series get
  // the pod, namespace and container holding it. Nullopt: no such labels, no kubelet asked.
  std::optional<kubernetes::PodResourcesOptions> kubernetes;
  // Prometheus remote-write receivers (serve --remote-write, --remote-write.config): the history pushed to
  // each on a thread of its own, from a cursor kept in data_dir (needs the history). external_labels are
  // added to what is sent, as Prometheus adds its global external labels.
  std::vector<remote_write::ReceiverConfig> remote_write;
  std::string version;  // /api/v1/status/buildinfo and the index page
  // Every part keeps time on this clock; it must outlive the agent.
  const model::Clock* clock = &model::system_clock();
};

}  // namespace gpuscope::agent
