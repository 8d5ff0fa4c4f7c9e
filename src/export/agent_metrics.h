// The agent's own part of /metrics: how fresh and how costly the GPU readings are, each collector's
// duration and success, the collectors file's reload state, build info and the process's own CPU,
// memory and file descriptors (the standard process_* series).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "export/exposition_writer.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

struct CollectorResult {
  std::string_view name;
  double duration_seconds = 0;
  bool success = true;
  double cpu_seconds_total = 0;  // since the agent started
};

struct ProcessUsage {
  double cpu_seconds = 0;
  double resident_memory_bytes = 0;
  double virtual_memory_bytes = 0;
  double start_time_seconds = 0;  // Unix time
  double open_fds = 0;
  double max_fds = 0;
};

// One rule group's evaluation record (serve --rules), named as Prometheus's rule manager names its own.
struct RuleGroupStatus {
  std::string rule_group;  // "FILE;GROUP", Prometheus's rule_group label value
  double interval_seconds = 0;
  double last_evaluation_timestamp_seconds = 0;  // 0 before the first evaluation
  double last_duration_seconds = 0;
  double rules = 0;
  std::uint64_t iterations_total = 0;
  std::uint64_t iterations_missed_total = 0;
  std::uint64_t evaluations_total = 0;
  std::uint64_t evaluation_failures_total = 0;
};

// Alert notifications (serve --config): deliveries per receiver and integration, the queue, actions.
struct NotificationStatus {
  struct Integration {
    std::string receiver;
    std::string integration;  // alertmanager, webhook, slack, pagerduty, email
    std::uint64_t total = 0;
    std::uint64_t failed = 0;
    std::uint64_t retries = 0;
  };
  std::vector<Integration> integrations;
  std::uint64_t dropped = 0;
  double queue_length = 0;
  double alert_groups = 0;
  // Remediation actions by outcome: started, succeeded, failed, timed_out, dry_run, skipped_cooldown, dropped.
  std::vector<std::pair<std::string, std::uint64_t>> actions;
};

// The history store's health (serve with history), filled from store::TsdbStats at each scrape.
struct TsdbStatus {
  double head_series = 0;
  std::uint64_t head_samples_appended_total = 0;
  std::uint64_t samples_rejected_out_of_order_total = 0;
  std::uint64_t samples_rejected_duplicate_total = 0;
  std::uint64_t flushes_total = 0;           // successful
  std::uint64_t flush_failures_total = 0;
  double flush_duration_seconds_sum = 0;     // every flush, failed ones included
  std::uint64_t flush_duration_seconds_count = 0;
  double last_successful_flush_timestamp_seconds = 0;  // Unix time (the agent's start counts as one)
  std::uint64_t chunks_corrupt_total = 0;
  std::uint64_t unflushed_samples_dropped_total = 0;
  std::uint64_t databases_moved_aside_total = 0;  // damaged at start
  std::uint64_t databases_recreated_total = 0;    // deleted under the running agent
  double disk_bytes = 0;
  std::optional<double> oldest_sample_timestamp_seconds;  // absent while the store holds no sample
};

// The diagnosis loop (serve without --no-diagnosis): its evaluations, and each GPU's current verdict.
struct DiagnosisStatus {
  double interval_seconds = 0;
  double window_seconds = 0;
  std::uint64_t evaluations_total = 0;
  std::uint64_t evaluation_failures_total = 0;
  double last_duration_seconds = 0;
  double last_evaluation_timestamp_seconds = 0;  // 0 before the first evaluation
  // gpuscope_diagnosis_info{<GPU labels>,verdict} 1 and gpuscope_diagnosis_changes_total{<GPU labels>}.
  // The history never records these from here: the loop writes them itself at each evaluation's time,
  // with a staleness marker when a verdict ends, so a reading's copy would be a second writer.
  struct Sample {
    std::string name;
    std::vector<std::pair<std::string, std::string>> labels;
    double value = 0;
  };
  std::vector<Sample> series;
};

// Preemption notices (serve --preemption-notice): what the watcher's polls of the cloud's metadata
// endpoint said, and whether (and for when) it announced this VM's preemption.
struct PreemptionStatus {
  std::string provider;  // gce, aws, url
  std::uint64_t polls_notice_total = 0;
  std::uint64_t polls_none_total = 0;
  std::uint64_t polls_error_total = 0;  // refused, timed out, 5xx, an answer that is neither
  bool noticed = false;                 // a notice came during this run
  // When noticed: the provider's time for the action (AWS), else when the agent saw the notice.
  double notice_timestamp_seconds = 0;
};

struct AgentStatus {
  std::optional<double> sample_age_seconds;  // absent before the first reading
  double sample_duration_seconds = 0;
  double interval_seconds = 0;
  std::uint64_t samples_total = 0;
  std::uint64_t overruns_total = 0;
  std::vector<CollectorResult> collectors;
  std::vector<std::pair<std::string_view, std::uint64_t>> nvml_calls;  // serve --nvml-call-counts
  bool config_reload_success = true;
  double config_reload_timestamp_seconds = 0;
  std::string version;
  std::optional<ProcessUsage> process;
  std::vector<RuleGroupStatus> rule_groups;  // empty without --rules
  std::optional<NotificationStatus> notifications;  // absent without --config
  std::optional<TsdbStatus> tsdb;                   // absent with --no-history
  std::optional<DiagnosisStatus> diagnosis;         // absent when the diagnosis is off
  std::optional<PreemptionStatus> preemption;       // absent without --preemption-notice
};

// Each collector's time and whether it read without an NVML error on every GPU that is up (a lost GPU
// fails the device collector).
std::vector<CollectorResult> collector_results(const model::Snapshot& snapshot);

void write_agent_metrics(ExpositionWriter& writer, const AgentStatus& status);

}  // namespace gpuscope::exporter
