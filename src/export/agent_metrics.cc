#include "export/agent_metrics.h"

#include <chrono>

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::MetricType;

bool is_gpm_field(FieldId id) { return id >= FieldId::kGrEngineActive && id <= FieldId::kNvlinkRxBytes; }

// Named after Prometheus's own prometheus_tsdb_* series where one matches, so dashboards and alerts
// written for a Prometheus carry over.
void write_tsdb_metrics(ExpositionWriter& w, const TsdbStatus& t) {
  auto one = [&](const char* name, MetricType type, const char* help, double value) {
    w.family(name, type, help);
    w.sample(name, {}, value);
  };
  one("gpuscope_tsdb_head_series", MetricType::kGauge, "Series in the history store's in-memory head.", t.head_series);
  one("gpuscope_tsdb_head_samples_appended_total", MetricType::kCounter,
      "Samples appended to the history store (staleness markers included).",
      static_cast<double>(t.head_samples_appended_total));
  w.family("gpuscope_tsdb_samples_rejected_total", MetricType::kCounter,
           "Samples the history store refused: not after the series' last sample (out_of_order) or at the same "
           "time (duplicate); a clock that stepped back.");
  for (const auto& [reason, count] : {std::pair{"out_of_order", t.samples_rejected_out_of_order_total},
                                      std::pair{"duplicate", t.samples_rejected_duplicate_total}}) {
    LabelSet l;
    l.add("reason", reason);
    w.sample("gpuscope_tsdb_samples_rejected_total", l.text(), static_cast<double>(count));
  }
  one("gpuscope_tsdb_flushes_total", MetricType::kCounter, "Flushes of the history to the data directory that succeeded.",
      static_cast<double>(t.flushes_total));
  one("gpuscope_tsdb_flush_failures_total", MetricType::kCounter,
      "Flushes of the history that failed (disk full, read-only, I/O error); the samples stay in memory and the "
      "flush is retried with backoff.",
      static_cast<double>(t.flush_failures_total));
  w.family("gpuscope_tsdb_flush_duration_seconds", MetricType::kSummary,
           "Time spent flushing the history to disk, failed flushes included.");
  w.sample("gpuscope_tsdb_flush_duration_seconds_sum", {}, t.flush_duration_seconds_sum);
  w.sample("gpuscope_tsdb_flush_duration_seconds_count", {}, static_cast<double>(t.flush_duration_seconds_count));
  one("gpuscope_tsdb_last_successful_flush_timestamp_seconds", MetricType::kGauge,
      "Unix time of the last successful flush of the history (the agent's start counts as one).",
      t.last_successful_flush_timestamp_seconds);
  one("gpuscope_tsdb_chunks_corrupt_total", MetricType::kCounter,
      "Chunks of history skipped because they failed their CRC or did not decode, each counted once.",
      static_cast<double>(t.chunks_corrupt_total));
  one("gpuscope_tsdb_unflushed_samples_dropped_total", MetricType::kCounter,
      "Samples dropped from memory without reaching disk because flushes failed for longer than memory keeps them.",
      static_cast<double>(t.unflushed_samples_dropped_total));
  one("gpuscope_tsdb_databases_moved_aside_total", MetricType::kCounter,
      "History databases found damaged at start, moved aside (chunks.sqlite.corrupt-<ms>) and started anew.",
      static_cast<double>(t.databases_moved_aside_total));
  one("gpuscope_tsdb_databases_recreated_total", MetricType::kCounter,
      "History databases deleted under the running agent and recreated with what memory held.",
      static_cast<double>(t.databases_recreated_total));
  one("gpuscope_tsdb_disk_bytes", MetricType::kGauge, "Size of the history database and its write-ahead log.", t.disk_bytes);
  if (t.oldest_sample_timestamp_seconds) {
    one("gpuscope_tsdb_oldest_sample_timestamp_seconds", MetricType::kGauge,
        "Unix time of the oldest sample the history store holds, in memory or on disk.",
        *t.oldest_sample_timestamp_seconds);
  }
}

void write_diagnosis_metrics(ExpositionWriter& w, const DiagnosisStatus& d) {
  auto one = [&](const char* name, MetricType type, const char* help, double value) {
    w.family(name, type, help);
    w.sample(name, {}, value);
  };
  one("gpuscope_diagnosis_interval_seconds", MetricType::kGauge, "Time between the diagnosis' evaluations.",
      d.interval_seconds);
  one("gpuscope_diagnosis_window_seconds", MetricType::kGauge, "The window of readings each diagnosis reads.",
      d.window_seconds);
  one("gpuscope_diagnosis_evaluations_total", MetricType::kCounter, "Diagnosis evaluations since the agent started.",
      static_cast<double>(d.evaluations_total));
  one("gpuscope_diagnosis_evaluation_failures_total", MetricType::kCounter,
      "Diagnosis evaluations that failed (the history could not be read or written).",
      static_cast<double>(d.evaluation_failures_total));
  one("gpuscope_diagnosis_last_duration_seconds", MetricType::kGauge, "How long the latest diagnosis evaluation took.",
      d.last_duration_seconds);
  one("gpuscope_diagnosis_last_evaluation_timestamp_seconds", MetricType::kGauge,
      "Unix time of the latest diagnosis evaluation (0: not yet evaluated).", d.last_evaluation_timestamp_seconds);
  // Families in a fixed order whatever order the samples come in; a family without samples is left out.
  static constexpr std::pair<const char*, const char*> kSeries[] = {
      {"gpuscope_diagnosis_info",
       "The diagnosis' verdict for each GPU (why it is slow or wasted: idle, transfer_bound, launch_bound, "
       "input_starved, no_tensor_cores, memory_bound, compute_bound, network_bound, unhealthy, unknown); always 1."},
      {"gpuscope_diagnosis_changes_total", "Changes of each GPU's diagnosis verdict since the agent started."},
  };
  for (const auto& [name, help] : kSeries) {
    bool written = false;
    for (const DiagnosisStatus::Sample& s : d.series) {
      if (s.name != name) continue;
      if (!written) {
        w.family(name, std::string_view(name).ends_with("_total") ? MetricType::kCounter : MetricType::kGauge, help);
        written = true;
      }
      LabelSet l;
      for (const auto& [k, v] : s.labels) l.add(k, v);
      w.sample(name, l.text(), s.value);
    }
  }
}

void write_preemption_metrics(ExpositionWriter& w, const PreemptionStatus& p) {
  w.family("gpuscope_preemption_polls_total", MetricType::kCounter,
           "Polls of the cloud's preemption notice endpoint by result: notice, none, or error (refused, timed "
           "out, 5xx, an answer that is neither).");
  for (const auto& [result, count] : {std::pair<const char*, std::uint64_t>{"notice", p.polls_notice_total},
                                      {"none", p.polls_none_total},
                                      {"error", p.polls_error_total}}) {
    LabelSet l;
    l.add("provider", p.provider);
    l.add("result", result);
    w.sample("gpuscope_preemption_polls_total", l.text(), static_cast<double>(count));
  }
  LabelSet provider;
  provider.add("provider", p.provider);
  w.family("gpuscope_preemption_notice", MetricType::kGauge,
           "1 once the cloud has announced this VM's preemption during this run, else 0.");
  w.sample("gpuscope_preemption_notice", provider.text(), p.noticed ? 1 : 0);
  if (p.noticed) {
    w.family("gpuscope_preemption_notice_timestamp_seconds", MetricType::kGauge,
             "Unix time of the announced preemption: the provider's time for it (AWS), else when the notice was seen.");
    w.sample("gpuscope_preemption_notice_timestamp_seconds", provider.text(), p.notice_timestamp_seconds);
  }
}

}  // namespace

std::vector<CollectorResult> collector_results(const model::Snapshot& snapshot) {
  std::array<bool, model::kCollectorCount> ok;
  ok.fill(true);
  for (const auto& g : snapshot.gpus) {
    if (!g.up) {
      ok[static_cast<std::size_t>(model::Collector::kDevice)] = false;
      continue;
    }
    for (const auto& f : model::FieldCatalog::all()) {
      if (g[f.id].status != model::ValueStatus::kError) continue;
      ok[static_cast<std::size_t>(is_gpm_field(f.id) ? model::Collector::kGpm : model::Collector::kDevice)] = false;
    }
    if (g.processes_error_code) ok[static_cast<std::size_t>(model::Collector::kProcesses)] = false;
  }
  std::vector<CollectorResult> out;
  for (std::size_t c = 0; c < model::kCollectorCount; ++c) {
    out.push_back({model::kCollectorNames[c], std::chrono::duration<double>(snapshot.collector_durations[c]).count(),
                   ok[c], std::chrono::duration<double>(snapshot.collector_cpu_total[c]).count()});
  }
  return out;
}

void write_agent_metrics(ExpositionWriter& w, const AgentStatus& s) {
  if (s.sample_age_seconds) {
    w.family("gpuscope_sample_age_seconds", MetricType::kGauge,
             "Seconds since the latest GPU reading started; grows when the driver hangs.");
    w.sample("gpuscope_sample_age_seconds", {}, *s.sample_age_seconds);
    w.family("gpuscope_sample_duration_seconds", MetricType::kGauge, "How long the latest GPU reading took.");
    w.sample("gpuscope_sample_duration_seconds", {}, s.sample_duration_seconds);
  }
  w.family("gpuscope_sample_interval_seconds", MetricType::kGauge, "The configured time between GPU readings.");
  w.sample("gpuscope_sample_interval_seconds", {}, s.interval_seconds);
  w.family("gpuscope_samples_total", MetricType::kCounter, "GPU readings completed since the agent started.");
  w.sample("gpuscope_samples_total", {}, static_cast<double>(s.samples_total));
  w.family("gpuscope_sample_overruns_total", MetricType::kCounter,
           "GPU readings that took longer than the interval (the next ones were skipped).");
  w.sample("gpuscope_sample_overruns_total", {}, static_cast<double>(s.overruns_total));

  if (!s.collectors.empty()) {
    w.family("gpuscope_collector_duration_seconds", MetricType::kGauge,
             "Time the latest reading spent in each collector, over all GPUs.");
    for (const auto& c : s.collectors) {
      LabelSet l;
      l.add("collector", c.name);
      w.sample("gpuscope_collector_duration_seconds", l.text(), c.duration_seconds);
    }
    w.family("gpuscope_collector_cpu_seconds_total", MetricType::kCounter,
             "CPU time the reading thread spent in each collector since the agent started, over all GPUs: on a "
             "real driver mostly the driver's own work inside NVML.");
    for (const auto& c : s.collectors) {
      LabelSet l;
      l.add("collector", c.name);
      w.sample("gpuscope_collector_cpu_seconds_total", l.text(), c.cpu_seconds_total);
    }
    w.family("gpuscope_collector_success", MetricType::kGauge,
             "Whether each collector read every GPU without an NVML error at the latest reading (1) or not (0).");
    for (const auto& c : s.collectors) {
      LabelSet l;
      l.add("collector", c.name);
      w.sample("gpuscope_collector_success", l.text(), c.success ? 1 : 0);
    }
  }

  if (!s.nvml_calls.empty()) {
    w.family("gpuscope_nvml_calls_total", MetricType::kCounter,
             "Calls the agent made to each NVML function since it started (serve --nvml-call-counts).");
    for (const auto& [function, count] : s.nvml_calls) {
      LabelSet l;
      l.add("function", function);
      w.sample("gpuscope_nvml_calls_total", l.text(), static_cast<double>(count));
    }
  }

  w.family("gpuscope_config_last_reload_successful", MetricType::kGauge,
           "Whether the last load of the collectors file succeeded (1) or kept the previous one (0).");
  w.sample("gpuscope_config_last_reload_successful", {}, s.config_reload_success ? 1 : 0);
  w.family("gpuscope_config_last_reload_success_timestamp_seconds", MetricType::kGauge,
           "Unix time of the last successful load of the collectors file.");
  w.sample("gpuscope_config_last_reload_success_timestamp_seconds", {}, s.config_reload_timestamp_seconds);

  if (!s.rule_groups.empty()) {
    struct Family {
      const char* name;
      MetricType type;
      const char* help;
      double (*value)(const RuleGroupStatus&);
    };
    static constexpr Family kFamilies[] = {
        {"gpuscope_rule_group_rules", MetricType::kGauge, "Rules in each rule group.",
         [](const RuleGroupStatus& g) { return g.rules; }},
        {"gpuscope_rule_group_interval_seconds", MetricType::kGauge, "Each rule group's evaluation interval.",
         [](const RuleGroupStatus& g) { return g.interval_seconds; }},
        {"gpuscope_rule_group_last_evaluation_timestamp_seconds", MetricType::kGauge,
         "Unix time of each rule group's latest evaluation (0: not yet evaluated).",
         [](const RuleGroupStatus& g) { return g.last_evaluation_timestamp_seconds; }},
        {"gpuscope_rule_group_last_duration_seconds", MetricType::kGauge, "How long each rule group's latest evaluation took.",
         [](const RuleGroupStatus& g) { return g.last_duration_seconds; }},
        {"gpuscope_rule_group_iterations_total", MetricType::kCounter, "Evaluations of each rule group.",
         [](const RuleGroupStatus& g) { return static_cast<double>(g.iterations_total); }},
        {"gpuscope_rule_group_iterations_missed_total", MetricType::kCounter,
         "Evaluation slots of each rule group skipped because an evaluation came late.",
         [](const RuleGroupStatus& g) { return static_cast<double>(g.iterations_missed_total); }},
        {"gpuscope_rule_evaluations_total", MetricType::kCounter, "Rule evaluations in each rule group.",
         [](const RuleGroupStatus& g) { return static_cast<double>(g.evaluations_total); }},
        {"gpuscope_rule_evaluation_failures_total", MetricType::kCounter,
         "Rule evaluations in each rule group that failed (query error, duplicate labels, limit, store).",
         [](const RuleGroupStatus& g) { return static_cast<double>(g.evaluation_failures_total); }},
    };
    for (const Family& f : kFamilies) {
      w.family(f.name, f.type, f.help);
      for (const RuleGroupStatus& g : s.rule_groups) {
        LabelSet l;
        l.add("rule_group", g.rule_group);
        w.sample(f.name, l.text(), f.value(g));
      }
    }
  }

  if (s.notifications) {
    const NotificationStatus& n = *s.notifications;
    auto per_integration = [&](const char* name, MetricType type, const char* help,
                               std::uint64_t NotificationStatus::Integration::*field) {
      w.family(name, type, help);
      for (const auto& i : n.integrations) {
        LabelSet l;
        l.add("receiver", i.receiver);
        l.add("integration", i.integration);
        w.sample(name, l.text(), static_cast<double>(i.*field));
      }
    };
    per_integration("gpuscope_notifications_total", MetricType::kCounter,
                    "Notifications finished (delivered or given up) per receiver and integration.",
                    &NotificationStatus::Integration::total);
    per_integration("gpuscope_notifications_failed_total", MetricType::kCounter,
                    "Notifications given up after their retries, or refused for good, per receiver and integration.",
                    &NotificationStatus::Integration::failed);
    per_integration("gpuscope_notification_retries_total", MetricType::kCounter,
                    "Delivery attempts after the first, per receiver and integration.",
                    &NotificationStatus::Integration::retries);
    w.family("gpuscope_notifications_dropped_total", MetricType::kCounter,
             "Notifications dropped: pushed out of the full queue, or still queued at stop.");
    w.sample("gpuscope_notifications_dropped_total", {}, static_cast<double>(n.dropped));
    w.family("gpuscope_notification_queue_length", MetricType::kGauge, "Notifications waiting to be delivered.");
    w.sample("gpuscope_notification_queue_length", {}, n.queue_length);
    w.family("gpuscope_notification_alert_groups", MetricType::kGauge, "Alert groups the router is tracking.");
    w.sample("gpuscope_notification_alert_groups", {}, n.alert_groups);
    if (!n.actions.empty()) {
      w.family("gpuscope_actions_total", MetricType::kCounter, "Remediation actions by outcome.");
      for (const auto& [outcome, count] : n.actions) {
        LabelSet l;
        l.add("outcome", outcome);
        w.sample("gpuscope_actions_total", l.text(), static_cast<double>(count));
      }
    }
  }

  if (s.tsdb) write_tsdb_metrics(w, *s.tsdb);
  if (s.diagnosis) write_diagnosis_metrics(w, *s.diagnosis);
  if (s.preemption) write_preemption_metrics(w, *s.preemption);

  w.family("gpuscope_build_info", MetricType::kGauge, "gpuscope's version; always 1.");
  LabelSet build;
  build.add("version", s.version);
  w.sample("gpuscope_build_info", build.text(), 1);

  if (s.process) {
    const auto& p = *s.process;
    w.family("process_cpu_seconds_total", MetricType::kCounter, "Total user and system CPU time spent in seconds.");
    w.sample("process_cpu_seconds_total", {}, p.cpu_seconds);
    w.family("process_resident_memory_bytes", MetricType::kGauge, "Resident memory size in bytes.");
    w.sample("process_resident_memory_bytes", {}, p.resident_memory_bytes);
    w.family("process_virtual_memory_bytes", MetricType::kGauge, "Virtual memory size in bytes.");
    w.sample("process_virtual_memory_bytes", {}, p.virtual_memory_bytes);
    w.family("process_start_time_seconds", MetricType::kGauge,
             "Start time of the process since unix epoch in seconds.");
    w.sample("process_start_time_seconds", {}, p.start_time_seconds);
    w.family("process_open_fds", MetricType::kGauge, "Number of open file descriptors.");
    w.sample("process_open_fds", {}, p.open_fds);
    w.family("process_max_fds", MetricType::kGauge, "Maximum number of open file descriptors.");
    w.sample("process_max_fds", {}, p.max_fds);
  }
}

}  // namespace gpuscope::exporter
