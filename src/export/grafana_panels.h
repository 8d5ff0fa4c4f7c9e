// What gpuscope's Grafana dashboard shows: its rows "by failure mode" (health, throughput, bottlenecks, MIG,
// cost, diagnosis, training), each panel's queries, units and thresholds. Layout and Grafana's JSON are
// grafana_dashboard.h's; this file only says what to look at and why.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::exporter {

enum class PanelKind { kTimeSeries, kStat, kStateTimeline, kTable, kBarGauge };

// One Prometheus query of a panel. Instant queries answer "now" (stat, table and bar gauge panels);
// range queries draw over the dashboard's time range.
struct PanelQuery {
  std::string expr;
  std::string legend;
  bool instant = false;
  bool table = false;  // Grafana's "table" format: one row per series, labels as columns
};

PanelQuery range_query(std::string expr, std::string legend);
PanelQuery instant_query(std::string expr, std::string legend);
PanelQuery table_query(std::string expr);

// A threshold step: the base colour (no value) or the colour from `value` up.
struct ThresholdStep {
  std::optional<double> value;
  std::string color;
};

// A value shown as text and colour (state timelines: verdict codes, 0/1 states).
struct ValueText {
  std::string value;
  std::string text;
  std::string color;
};

// How one query's series look when they differ from the panel's: their own unit on the right axis (two
// quantities on one panel), or a dashed line (a limit drawn over what it limits).
struct SeriesStyle {
  std::string ref_id;  // "A" for the panel's first query
  std::string unit;    // empty: the panel's
  bool right_axis = false;
  bool dashed = false;
  std::string axis_label;
};

struct DashboardPanel {
  PanelKind kind = PanelKind::kTimeSeries;
  std::string title;
  std::string description;
  std::string unit;
  int width = 12;  // of Grafana's 24 columns
  int height = 8;
  std::vector<PanelQuery> queries;
  std::vector<ThresholdStep> thresholds;  // empty: green only
  bool draw_thresholds = false;           // time series: the thresholds as lines and areas
  std::optional<double> min;
  std::optional<double> max;
  std::vector<ValueText> value_texts;
  std::vector<SeriesStyle> series_styles;
  bool bars = false;
  std::string relative_time;                 // Grafana's panel "relative time" ("now/d": today so far)
  std::vector<std::string> hidden_columns;   // tables: label columns left out
  std::string no_value;                      // what a panel without data says
};

struct DashboardRow {
  std::string title;
  std::vector<DashboardPanel> panels;
};

std::vector<DashboardRow> dashboard_rows();

// The diagnosis verdicts (gpuscope_diagnosis_info's verdict label) in the order the verdict timeline
// numbers them: the first is 1. The diagnosis lives in analysis/, which export/ does not depend on; a
// test holds this list equal to the diagnosis' own.
std::span<const std::string_view> diagnosis_verdict_codes();

// The Grafana variables the queries use, as they appear in the expressions.
inline constexpr std::string_view kHostVariable = "Hostname";
inline constexpr std::string_view kGpuVariable = "gpu";
// The metric the host and GPU variables list their values from: every exporter exports it, gpuscope
// and dcgm-exporter alike, on every GPU.
inline constexpr std::string_view kVariableMetric = "DCGM_FI_DEV_GPU_TEMP";

}  // namespace gpuscope::exporter
