#include "export/agent_metrics.h"

#include <gtest/gtest.h>

#include "export/exposition_parser.h"
#include "export/sample_gpus.h"
#include "export/exposition_test_support.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::FieldValue;

struct Success {
  bool device, gpm, processes;
  bool operator==(const Success&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Success& s) {
  return os << "{device " << s.device << ", gpm " << s.gpm << ", processes " << s.processes << "}";
}

Success success_of(const model::Snapshot& snapshot) {
  const auto r = collector_results(snapshot);
  EXPECT_EQ(r.size(), 3u);
  if (r.size() != 3) return {};
  return {r[0].success, r[1].success, r[2].success};
}

model::Snapshot two_gpus() {
  model::Snapshot s;
  s.gpus = {testing::h100_sample(0), testing::h100_sample(1)};
  return s;
}

// --- collector_results ---

TEST(CollectorResults, NamesDurationsInCollectorOrder) {
  model::Snapshot s = two_gpus();
  s.collector_durations = {std::chrono::microseconds(1500), std::chrono::milliseconds(2), std::chrono::nanoseconds(250)};
  const auto r = collector_results(s);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name, "device");
  EXPECT_EQ(r[1].name, "gpm");
  EXPECT_EQ(r[2].name, "processes");
  EXPECT_DOUBLE_EQ(r[0].duration_seconds, 0.0015);
  EXPECT_DOUBLE_EQ(r[1].duration_seconds, 0.002);
  EXPECT_DOUBLE_EQ(r[2].duration_seconds, 250e-9);
  EXPECT_EQ(success_of(s), (Success{true, true, true}));
}

TEST(CollectorResults, NoGpusAllSucceed) {
  EXPECT_EQ(success_of(model::Snapshot{}), (Success{true, true, true}));
}

TEST(CollectorResults, UnsupportedIsNotAFailure) {
  model::Snapshot s = two_gpus();
  for (auto& g : s.gpus) g.fields.fill(FieldValue::unsupported());
  EXPECT_EQ(success_of(s), (Success{true, true, true}));
}

TEST(CollectorResults, ADeviceFieldErrorFailsTheDeviceCollector) {
  model::Snapshot s = two_gpus();
  s.gpus[1][FieldId::kGpuTemp] = FieldValue::error(999);
  EXPECT_EQ(success_of(s), (Success{false, true, true}));
}

TEST(CollectorResults, AGpmFieldErrorFailsTheGpmCollector) {
  model::Snapshot s = two_gpus();
  s.gpus[0][FieldId::kSmActive] = FieldValue::error(3);
  EXPECT_EQ(success_of(s), (Success{true, false, true}));
}

TEST(CollectorResults, GpmFieldsAreExactlyTheProfilingRange) {
  // The first and last GPM fields, and their neighbours on either side, which the device collector reads.
  const std::pair<FieldId, Success> cases[] = {
      {FieldId::kNvlinkBandwidthTotal, {false, true, true}},
      {FieldId::kGrEngineActive, {true, false, true}},
      {FieldId::kPipeFp16Active, {true, false, true}},
      {FieldId::kNvlinkRxBytes, {true, false, true}},
      {FieldId::kPcieTxThroughput, {false, true, true}},
      {FieldId::kClocksEventReasons, {false, true, true}},
      {FieldId::kSmClock, {false, true, true}},
  };
  for (const auto& [id, expected] : cases) {
    model::Snapshot s = two_gpus();
    s.gpus[0][id] = FieldValue::error(999);
    EXPECT_EQ(success_of(s), expected) << model::FieldCatalog::get(id).key;
  }
}

TEST(CollectorResults, AProcessListErrorFailsTheProcessesCollector) {
  model::Snapshot s = two_gpus();
  s.gpus[1].processes_error_code = 999;
  EXPECT_EQ(success_of(s), (Success{true, true, false}));
}

TEST(CollectorResults, ADownGpuFailsOnlyTheDeviceCollector) {
  model::Snapshot s = two_gpus();
  s.gpus[1].up = false;
  EXPECT_EQ(success_of(s), (Success{false, true, true}));
  // What a down GPU's sample still holds is not looked at.
  s.gpus[1][FieldId::kSmActive] = FieldValue::error(15);
  s.gpus[1].processes_error_code = 15;
  EXPECT_EQ(success_of(s), (Success{false, true, true}));
}

TEST(CollectorResults, ErrorsOnSeveralCollectorsAtOnce) {
  model::Snapshot s = two_gpus();
  s.gpus[0][FieldId::kDramActive] = FieldValue::error(999);
  s.gpus[0].processes_error_code = 999;
  s.gpus[1][FieldId::kPowerUsage] = FieldValue::error(999);
  EXPECT_EQ(success_of(s), (Success{false, false, false}));
}

// --- write_agent_metrics ---

AgentStatus sample_status() {
  AgentStatus s;
  s.sample_age_seconds = 0.25;
  s.sample_duration_seconds = 0.0125;
  s.interval_seconds = 1;
  s.samples_total = 3600;
  s.overruns_total = 2;
  s.collectors = {{"device", 0.01, true, 12.5}, {"gpm", 0.002, false, 4.25}, {"processes", 0.0005, true, 0.75}};
  s.config_reload_success = true;
  s.config_reload_timestamp_seconds = 1767226200;
  s.version = "0.3.0 \"dev\"";
  return s;
}

constexpr std::string_view kSampleStatusText =
    "# HELP gpuscope_sample_age_seconds Seconds since the latest GPU reading started; grows when the driver hangs.\n"
    "# TYPE gpuscope_sample_age_seconds gauge\n"
    "gpuscope_sample_age_seconds 0.25\n"
    "# HELP gpuscope_sample_duration_seconds How long the latest GPU reading took.\n"
    "# TYPE gpuscope_sample_duration_seconds gauge\n"
    "gpuscope_sample_duration_seconds 0.0125\n"
    "# HELP gpuscope_sample_interval_seconds The configured time between GPU readings.\n"
    "# TYPE gpuscope_sample_interval_seconds gauge\n"
    "gpuscope_sample_interval_seconds 1\n"
    "# HELP gpuscope_samples_total GPU readings completed since the agent started.\n"
    "# TYPE gpuscope_samples_total counter\n"
    "gpuscope_samples_total 3600\n"
    "# HELP gpuscope_sample_overruns_total GPU readings that took longer than the interval (the next ones were "
    "skipped).\n"
    "# TYPE gpuscope_sample_overruns_total counter\n"
    "gpuscope_sample_overruns_total 2\n"
    "# HELP gpuscope_collector_duration_seconds Time the latest reading spent in each collector, over all GPUs.\n"
    "# TYPE gpuscope_collector_duration_seconds gauge\n"
    "gpuscope_collector_duration_seconds{collector=\"device\"} 0.01\n"
    "gpuscope_collector_duration_seconds{collector=\"gpm\"} 0.002\n"
    "gpuscope_collector_duration_seconds{collector=\"processes\"} 0.0005\n"
    "# HELP gpuscope_collector_cpu_seconds_total CPU time the reading thread spent in each collector since the "
    "agent started, over all GPUs: on a real driver mostly the driver's own work inside NVML.\n"
    "# TYPE gpuscope_collector_cpu_seconds_total counter\n"
    "gpuscope_collector_cpu_seconds_total{collector=\"device\"} 12.5\n"
    "gpuscope_collector_cpu_seconds_total{collector=\"gpm\"} 4.25\n"
    "gpuscope_collector_cpu_seconds_total{collector=\"processes\"} 0.75\n"
    "# HELP gpuscope_collector_success Whether each collector read every GPU without an NVML error at the latest "
    "reading (1) or not (0).\n"
    "# TYPE gpuscope_collector_success gauge\n"
    "gpuscope_collector_success{collector=\"device\"} 1\n"
    "gpuscope_collector_success{collector=\"gpm\"} 0\n"
    "gpuscope_collector_success{collector=\"processes\"} 1\n"
    "# HELP gpuscope_config_last_reload_successful Whether the last load of the collectors file succeeded (1) or "
    "kept the previous one (0).\n"
    "# TYPE gpuscope_config_last_reload_successful gauge\n"
    "gpuscope_config_last_reload_successful 1\n"
    "# HELP gpuscope_config_last_reload_success_timestamp_seconds Unix time of the last successful load of the "
    "collectors file.\n"
    "# TYPE gpuscope_config_last_reload_success_timestamp_seconds gauge\n"
    "gpuscope_config_last_reload_success_timestamp_seconds 1767226200\n"
    "# HELP gpuscope_build_info gpuscope's version; always 1.\n"
    "# TYPE gpuscope_build_info gauge\n"
    "gpuscope_build_info{version=\"0.3.0 \\\"dev\\\"\"} 1\n";

TEST(WriteAgentMetrics, NvmlCallCountsAreACounterPerFunctionOnlyWhenCounted) {
  AgentStatus s = sample_status();
  EXPECT_EQ(testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText).find("gpuscope_nvml_calls_total"),
            std::string::npos);
  s.nvml_calls = {{"nvmlDeviceGetPowerUsage", 120}, {"nvmlGpmMetricsGet", 60}};
  const std::string text = testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText);
  EXPECT_NE(text.find("# TYPE gpuscope_nvml_calls_total counter\n"
                      "gpuscope_nvml_calls_total{function=\"nvmlDeviceGetPowerUsage\"} 120\n"
                      "gpuscope_nvml_calls_total{function=\"nvmlGpmMetricsGet\"} 60\n"),
            std::string::npos)
      << text;
}

TEST(WriteAgentMetrics, FullTextExposition) {
  EXPECT_EQ(testing::render_agent_metrics(sample_status(), ExpositionFormat::kPrometheusText), kSampleStatusText);
}

TEST(WriteAgentMetrics, OpenMetricsCountersDropTotalInTheFamilyAndEndWithEof) {
  const std::string om = testing::render_agent_metrics(sample_status(), ExpositionFormat::kOpenMetrics);
  EXPECT_NE(om.find("# HELP gpuscope_samples GPU readings completed since the agent started.\n"
                    "# TYPE gpuscope_samples counter\n"
                    "gpuscope_samples_total 3600\n"),
            std::string::npos)
      << om;
  EXPECT_NE(om.find("# TYPE gpuscope_sample_overruns counter\ngpuscope_sample_overruns_total 2\n"), std::string::npos)
      << om;
  EXPECT_TRUE(om.ends_with("gpuscope_build_info{version=\"0.3.0 \\\"dev\\\"\"} 1\n# EOF\n")) << om;
  auto p = testing::parse_exposition(om, true);
  ASSERT_TRUE(p.has_value()) << p.error() << "\n" << om;
  EXPECT_EQ(p->value("gpuscope_build_info", {{"version", "0.3.0 \"dev\""}}), 1);
}

TEST(WriteAgentMetrics, NoAgeOrDurationBeforeTheFirstReading) {
  AgentStatus s = sample_status();
  s.sample_age_seconds.reset();
  const std::string text = testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText);
  EXPECT_EQ(text.find("gpuscope_sample_age_seconds"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpuscope_sample_duration_seconds"), std::string::npos) << text;
  EXPECT_TRUE(text.starts_with("# HELP gpuscope_sample_interval_seconds ")) << text;
}

TEST(WriteAgentMetrics, NoCollectorFamiliesWithoutCollectors) {
  AgentStatus s = sample_status();
  s.collectors.clear();
  const std::string text = testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText);
  EXPECT_EQ(text.find("gpuscope_collector_"), std::string::npos) << text;
}

TEST(WriteAgentMetrics, RuleGroupsOnlyWithRulesAndOneSeriesPerGroup) {
  AgentStatus s = sample_status();
  EXPECT_EQ(testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText).find("gpuscope_rule"), std::string::npos);
  RuleGroupStatus a;
  a.rule_group = "/etc/gpuscope/gpu.rules.yml;gpu-health";
  a.interval_seconds = 60;
  a.last_evaluation_timestamp_seconds = 1767226200.5;
  a.last_duration_seconds = 0.004;
  a.rules = 12;
  a.iterations_total = 30;
  a.iterations_missed_total = 1;
  a.evaluations_total = 360;
  a.evaluation_failures_total = 2;
  RuleGroupStatus b = a;
  b.rule_group = "/etc/gpuscope/gpu.rules.yml;gpu-waste";
  b.evaluation_failures_total = 0;
  s.rule_groups = {a, b};
  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    const bool om = format == ExpositionFormat::kOpenMetrics;
    auto p = testing::parse_exposition(testing::render_agent_metrics(s, format), om);
    ASSERT_TRUE(p.has_value()) << p.error();
    const auto* failures = p->family("gpuscope_rule_evaluation_failures");
    if (!om) failures = p->family("gpuscope_rule_evaluation_failures_total");
    ASSERT_NE(failures, nullptr);
    EXPECT_EQ(failures->type, "counter");
    auto health = p->samples("gpuscope_rule_evaluation_failures_total", {{"rule_group", a.rule_group}});
    ASSERT_EQ(health.size(), 1u);
    EXPECT_EQ(health[0]->value, 2);
    auto waste = p->samples("gpuscope_rule_evaluation_failures_total", {{"rule_group", b.rule_group}});
    ASSERT_EQ(waste.size(), 1u);
    EXPECT_EQ(waste[0]->value, 0);
    EXPECT_EQ(p->samples("gpuscope_rule_group_rules").size(), 2u);
    EXPECT_EQ(p->samples("gpuscope_rule_group_last_evaluation_timestamp_seconds", {{"rule_group", a.rule_group}})[0]->value,
              1767226200.5);
    EXPECT_EQ(p->samples("gpuscope_rule_group_iterations_missed_total", {{"rule_group", a.rule_group}})[0]->value, 1);
  }
}

TEST(WriteAgentMetrics, FailedReloadIsZero) {
  AgentStatus s = sample_status();
  s.config_reload_success = false;
  auto p = testing::parse_exposition(testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText), false);
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->value("gpuscope_config_last_reload_successful"), 0);
  EXPECT_EQ(p->value("gpuscope_config_last_reload_success_timestamp_seconds"), 1767226200);
}

TEST(WriteAgentMetrics, LargeCountersAreWrittenExactly) {
  AgentStatus s = sample_status();
  s.samples_total = 123456789012ULL;
  auto p = testing::parse_exposition(testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText), false);
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->value("gpuscope_samples_total"), 123456789012.0);
  EXPECT_NE(testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText).find("gpuscope_samples_total 123456789012\n"),
            std::string::npos);
}

TEST(WriteAgentMetrics, ProcessSeriesAreTheStandardOnes) {
  AgentStatus s = sample_status();
  s.process = ProcessUsage{12.5, 31457280, 1073741824, 1767226000.5, 17, 1048576};
  const std::string text = testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText);
  ASSERT_TRUE(text.starts_with(kSampleStatusText)) << text;
  EXPECT_EQ(text.substr(kSampleStatusText.size()),
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
            "# TYPE process_cpu_seconds_total counter\n"
            "process_cpu_seconds_total 12.5\n"
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
            "# TYPE process_resident_memory_bytes gauge\n"
            "process_resident_memory_bytes 31457280\n"
            "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
            "# TYPE process_virtual_memory_bytes gauge\n"
            "process_virtual_memory_bytes 1073741824\n"
            "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
            "# TYPE process_start_time_seconds gauge\n"
            "process_start_time_seconds 1767226000.5\n"
            "# HELP process_open_fds Number of open file descriptors.\n"
            "# TYPE process_open_fds gauge\n"
            "process_open_fds 17\n"
            "# HELP process_max_fds Maximum number of open file descriptors.\n"
            "# TYPE process_max_fds gauge\n"
            "process_max_fds 1048576\n");
  const std::string om = testing::render_agent_metrics(s, ExpositionFormat::kOpenMetrics);
  EXPECT_NE(om.find("# TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total 12.5\n"), std::string::npos) << om;
}

TEST(WriteAgentMetrics, CollectorResultsFlowIntoTheSuccessSeries) {
  model::Snapshot snap = two_gpus();
  snap.gpus[0].processes_error_code = 999;
  AgentStatus s = sample_status();
  s.collectors = collector_results(snap);
  auto p = testing::parse_exposition(testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText), false);
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->value("gpuscope_collector_success", {{"collector", "device"}}), 1);
  EXPECT_EQ(p->value("gpuscope_collector_success", {{"collector", "gpm"}}), 1);
  EXPECT_EQ(p->value("gpuscope_collector_success", {{"collector", "processes"}}), 0);
  EXPECT_EQ(p->value("gpuscope_collector_duration_seconds", {{"collector", "gpm"}}), 0);
}

TEST(WriteAgentMetrics, PreemptionSeriesOnlyWithTheWatcherAndTheirTimestampOnlyOnceNoticed) {
  AgentStatus s = sample_status();
  EXPECT_EQ(testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText).find("gpuscope_preemption"),
            std::string::npos);
  PreemptionStatus watching;
  watching.provider = "aws";
  watching.polls_none_total = 120;
  watching.polls_error_total = 3;
  s.preemption = watching;
  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    const bool om = format == ExpositionFormat::kOpenMetrics;
    const std::string text = testing::render_agent_metrics(s, format);
    auto p = testing::parse_exposition(text, om);
    ASSERT_TRUE(p.has_value()) << p.error() << "\n" << text;
    EXPECT_EQ(p->value("gpuscope_preemption_polls_total", {{"provider", "aws"}, {"result", "none"}}), 120);
    EXPECT_EQ(p->value("gpuscope_preemption_polls_total", {{"provider", "aws"}, {"result", "error"}}), 3);
    EXPECT_EQ(p->value("gpuscope_preemption_polls_total", {{"provider", "aws"}, {"result", "notice"}}), 0);
    EXPECT_EQ(p->value("gpuscope_preemption_notice", {{"provider", "aws"}}), 0);
    EXPECT_EQ(text.find("gpuscope_preemption_notice_timestamp_seconds"), std::string::npos) << text;
  }
  s.preemption->noticed = true;
  s.preemption->polls_notice_total = 2;
  s.preemption->notice_timestamp_seconds = 1795767720;  // 2026-11-27T08:22:00Z
  const std::string text = testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText);
  EXPECT_NE(text.find("# TYPE gpuscope_preemption_notice gauge\n"
                      "gpuscope_preemption_notice{provider=\"aws\"} 1\n"
                      "# HELP gpuscope_preemption_notice_timestamp_seconds "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpuscope_preemption_notice_timestamp_seconds{provider=\"aws\"} 1795767720\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace gpuscope::exporter
