// `gpuscope serve`: the node agent. A sampler thread reads every GPU once per interval; an HTTP server
// answers /metrics (dcgm-exporter's names and labels), /healthz, /api/v1/gpus from the latest reading.
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cli/invocation.h"
#include "cli/price_flags.h"
#include "export/gpu_metrics.h"
#include "log/logger.h"
#include "promql/engine.h"
#include "promql/query_limiter.h"

namespace gpuscope::cli {

struct ServeOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 9400;
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  std::chrono::nanoseconds counter_interval = std::chrono::seconds(10);
  std::string collectors_file;  // empty: the built-in set
  std::string hpc_job_mapping_dir;  // empty: no hpc_job label
  exporter::GpuMetricsOptions metrics;
  log::Level log_level = log::Level::kInfo;
  unsigned max_connections = 256;
  std::chrono::seconds http_timeout{10};
  // History: the exported series recorded under data_dir, kept for `retention`, written every
  // `flush_interval` (at most that much is lost to a kill -9).
  bool history = true;
  std::string data_dir;  // default_data_dir() when not given
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
  // The price catalog and tier behind gpuscope_gpu_hourly_price_dollars (no catalog: no such series).
  PriceSelection prices;
};

// $STATE_DIRECTORY when systemd sets it (the unit in deploy/), else /var/lib/gpuscope for root, and
// $XDG_STATE_HOME/gpuscope or ~/.local/state/gpuscope for a user running the agent on a workstation.
std::string default_data_dir();

std::expected<ServeOptions, ParseExit> parse_serve_args(std::span<const std::string> args);

int run_serve(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
