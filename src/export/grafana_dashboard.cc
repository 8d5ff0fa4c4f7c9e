#include "export/grafana_dashboard.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "export/grafana_panels.h"

namespace gpuscope::exporter {
namespace {

using Json = nlohmann::ordered_json;

// Grafana's grid: 24 columns; a row header is one unit high.
constexpr int kGridColumns = 24;
constexpr int kRowHeaderHeight = 1;

Json datasource_ref() { return Json{{"type", "prometheus"}, {"uid", "${datasource}"}}; }

std::string_view panel_type(PanelKind kind) {
  switch (kind) {
    case PanelKind::kTimeSeries: return "timeseries";
    case PanelKind::kStat: return "stat";
    case PanelKind::kStateTimeline: return "state-timeline";
    case PanelKind::kTable: return "table";
    case PanelKind::kBarGauge: return "bargauge";
  }
  return "timeseries";
}

std::string ref_id(std::size_t index) { return std::string(1, static_cast<char>('A' + index)); }

Json thresholds(const DashboardPanel& p) {
  Json steps = Json::array();
  if (p.thresholds.empty()) steps.push_back(Json{{"color", "green"}, {"value", nullptr}});
  for (const ThresholdStep& s : p.thresholds) {
    steps.push_back(Json{{"color", s.color}, {"value", s.value ? Json(*s.value) : Json(nullptr)}});
  }
  return Json{{"mode", "absolute"}, {"steps", std::move(steps)}};
}

Json mappings(const DashboardPanel& p) {
  Json out = Json::array();
  if (p.value_texts.empty()) return out;
  Json options = Json::object();
  for (std::size_t i = 0; i < p.value_texts.size(); ++i) {
    const ValueText& v = p.value_texts[i];
    options[v.value] = Json{{"color", v.color}, {"index", i}, {"text", v.text}};
  }
  out.push_back(Json{{"type", "value"}, {"options", std::move(options)}});
  return out;
}

Json custom_field_config(const DashboardPanel& p) {
  switch (p.kind) {
    case PanelKind::kTimeSeries:
      return Json{{"drawStyle", p.bars ? "bars" : "line"},
                  {"lineWidth", 1},
                  {"fillOpacity", p.bars ? 80 : 10},
                  {"showPoints", "never"},
                  {"spanNulls", false},
                  {"axisPlacement", "auto"},
                  {"thresholdsStyle", Json{{"mode", p.draw_thresholds ? "line+area" : "off"}}}};
    case PanelKind::kStateTimeline: return Json{{"fillOpacity", 70}, {"lineWidth", 0}};
    case PanelKind::kTable: return Json{{"align", "auto"}, {"cellOptions", Json{{"type", "auto"}}}};
    case PanelKind::kStat:
    case PanelKind::kBarGauge: return Json::object();
  }
  return Json::object();
}

Json field_defaults(const DashboardPanel& p) {
  Json d;
  d["unit"] = p.unit;
  if (p.min) d["min"] = *p.min;
  if (p.max) d["max"] = *p.max;
  // Lines get a colour each; single values, tables and states are coloured by threshold or mapping.
  d["color"] = Json{{"mode", p.kind == PanelKind::kTimeSeries ? "palette-classic" : "thresholds"}};
  d["thresholds"] = thresholds(p);
  d["mappings"] = mappings(p);
  if (!p.no_value.empty()) d["noValue"] = p.no_value;
  d["custom"] = custom_field_config(p);
  return d;
}

Json overrides(const DashboardPanel& p) {
  Json out = Json::array();
  for (const SeriesStyle& s : p.series_styles) {
    Json properties = Json::array();
    if (!s.unit.empty()) properties.push_back(Json{{"id", "unit"}, {"value", s.unit}});
    if (s.right_axis) properties.push_back(Json{{"id", "custom.axisPlacement"}, {"value", "right"}});
    if (!s.axis_label.empty()) properties.push_back(Json{{"id", "custom.axisLabel"}, {"value", s.axis_label}});
    if (s.dashed) {
      properties.push_back(Json{{"id", "custom.lineStyle"}, {"value", Json{{"dash", Json::array({10, 10})}, {"fill", "dash"}}}});
      properties.push_back(Json{{"id", "custom.fillOpacity"}, {"value", 0}});
    }
    out.push_back(Json{{"matcher", Json{{"id", "byFrameRefID"}, {"options", s.ref_id}}}, {"properties", properties}});
  }
  return out;
}

Json single_value_reduce() {
  return Json{{"calcs", Json::array({"lastNotNull"})}, {"fields", ""}, {"values", false}};
}

Json legend() {
  return Json{{"calcs", Json::array()}, {"displayMode", "list"}, {"placement", "bottom"}, {"showLegend", true}};
}

Json options(const DashboardPanel& p) {
  switch (p.kind) {
    case PanelKind::kTimeSeries:
      return Json{{"legend", legend()}, {"tooltip", Json{{"mode", "multi"}, {"sort", "desc"}}}};
    case PanelKind::kStat:
      return Json{{"colorMode", "value"},       {"graphMode", "none"},  {"justifyMode", "auto"},
                  {"orientation", "auto"},      {"reduceOptions", single_value_reduce()},
                  {"showPercentChange", false}, {"textMode", "auto"},   {"wideLayout", true}};
    case PanelKind::kStateTimeline:
      return Json{{"alignValue", "left"}, {"legend", legend()},   {"mergeValues", true}, {"rowHeight", 0.9},
                  {"showValue", "auto"},  {"tooltip", Json{{"mode", "single"}, {"sort", "none"}}}};
    case PanelKind::kTable:
      return Json{{"cellHeight", "sm"},
                  {"footer", Json{{"countRows", false}, {"fields", ""}, {"reducer", Json::array({"sum"})}, {"show", false}}},
                  {"showHeader", true}};
    case PanelKind::kBarGauge:
      return Json{{"displayMode", "gradient"}, {"minVizHeight", 16},          {"minVizWidth", 8},
                  {"namePlacement", "auto"},   {"orientation", "horizontal"}, {"reduceOptions", single_value_reduce()},
                  {"showUnfilled", true},      {"sizing", "auto"},            {"valueMode", "color"}};
  }
  return Json::object();
}

Json targets(const DashboardPanel& p) {
  Json out = Json::array();
  for (std::size_t i = 0; i < p.queries.size(); ++i) {
    const PanelQuery& q = p.queries[i];
    out.push_back(Json{{"datasource", datasource_ref()},
                       {"editorMode", "code"},
                       {"expr", q.expr},
                       {"format", q.table ? "table" : "time_series"},
                       {"instant", q.instant},
                       {"legendFormat", q.legend.empty() ? "__auto" : q.legend},
                       {"range", !q.instant},
                       {"refId", ref_id(i)}});
  }
  return out;
}

Json transformations(const DashboardPanel& p) {
  Json out = Json::array();
  if (p.hidden_columns.empty()) return out;
  Json hidden = Json::object();
  for (const std::string& c : p.hidden_columns) hidden[c] = true;
  out.push_back(Json{{"id", "organize"},
                     {"options", Json{{"excludeByName", std::move(hidden)},
                                      {"indexByName", Json::object()},
                                      {"renameByName", Json::object()}}}});
  return out;
}

Json grid_pos(int x, int y, int w, int h) { return Json{{"h", h}, {"w", w}, {"x", x}, {"y", y}}; }

Json panel_json(const DashboardPanel& p, int id, const Json& pos) {
  Json j;
  j["type"] = panel_type(p.kind);
  j["id"] = id;
  j["title"] = p.title;
  j["description"] = p.description;
  j["datasource"] = datasource_ref();
  j["gridPos"] = pos;
  j["fieldConfig"] = Json{{"defaults", field_defaults(p)}, {"overrides", overrides(p)}};
  j["options"] = options(p);
  j["targets"] = targets(p);
  j["transformations"] = transformations(p);
  j["transparent"] = false;
  if (!p.relative_time.empty()) j["timeFrom"] = p.relative_time;
  return j;
}

// Rows one under the other; in a row, panels left to right, wrapping at the grid's width.
Json panels() {
  Json out = Json::array();
  int id = 1;
  int y = 0;
  for (const DashboardRow& row : dashboard_rows()) {
    out.push_back(Json{{"type", "row"},
                       {"id", id++},
                       {"title", row.title},
                       {"collapsed", false},
                       {"gridPos", grid_pos(0, y, kGridColumns, kRowHeaderHeight)},
                       {"panels", Json::array()}});
    y += kRowHeaderHeight;
    int x = 0, line_height = 0;
    for (const DashboardPanel& p : row.panels) {
      if (x + p.width > kGridColumns) {
        y += line_height;
        x = 0;
        line_height = 0;
      }
      out.push_back(panel_json(p, id++, grid_pos(x, y, p.width, p.height)));
      x += p.width;
      line_height = std::max(line_height, p.height);
    }
    y += line_height;
  }
  return out;
}

Json gpu_variable(std::string name, std::string label, std::string query) {
  return Json{{"allValue", ".*"},
              {"current", Json{{"selected", true}, {"text", Json::array({"All"})}, {"value", Json::array({"$__all"})}}},
              {"datasource", datasource_ref()},
              {"definition", query},
              {"hide", 0},
              {"includeAll", true},
              {"label", std::move(label)},
              {"multi", true},
              {"name", std::move(name)},
              {"options", Json::array()},
              {"query", query},
              {"refresh", 2},  // on time range change: GPUs come and go
              {"regex", ""},
              {"skipUrlSync", false},
              {"sort", 3},  // numerically ascending: GPU 2 before GPU 10
              {"type", "query"}};
}

Json templating(const GrafanaDashboardOptions& o) {
  Json list = Json::array();
  list.push_back(Json{{"current", Json{{"selected", false}, {"text", o.datasource}, {"value", o.datasource}}},
                      {"hide", 0},
                      {"includeAll", false},
                      {"label", "Data source"},
                      {"multi", false},
                      {"name", "datasource"},
                      {"options", Json::array()},
                      {"query", "prometheus"},
                      {"refresh", 1},
                      {"regex", ""},
                      {"skipUrlSync", false},
                      {"type", "datasource"}});
  list.push_back(gpu_variable(std::string(kHostVariable), "Host",
                              fmt::format("label_values({}, {})", kVariableMetric, kHostVariable)));
  list.push_back(gpu_variable(std::string(kGpuVariable), "GPU",
                              fmt::format("label_values({}{{{}=~\"${}\"}}, {})", kVariableMetric, kHostVariable,
                                          kHostVariable, kGpuVariable)));
  return Json{{"list", std::move(list)}};
}

Json annotations() {
  Json list = Json::array();
  list.push_back(Json{{"builtIn", 1},
                      {"datasource", Json{{"type", "grafana"}, {"uid", "-- Grafana --"}}},
                      {"enable", true},
                      {"hide", true},
                      {"iconColor", "rgba(0, 211, 255, 1)"},
                      {"name", "Annotations & Alerts"},
                      {"type", "dashboard"}});
  list.push_back(Json{{"datasource", datasource_ref()},
                      {"enable", true},
                      {"expr", fmt::format("ALERTS{{alertstate=\"firing\", {}=~\"${}\"}}", kHostVariable, kHostVariable)},
                      {"hide", false},
                      {"iconColor", "red"},
                      {"name", "Firing alerts"},
                      {"step", "1m"},
                      {"tagKeys", "alertname,severity,gpu"},
                      {"textFormat", "{{alertname}} {{Hostname}} GPU {{gpu}} ({{severity}})"},
                      {"titleFormat", "{{alertname}}"},
                      {"useValueForTime", false}});
  return Json{{"list", std::move(list)}};
}

}  // namespace

nlohmann::ordered_json grafana_dashboard(const GrafanaDashboardOptions& options) {
  Json d;
  d["annotations"] = annotations();
  d["description"] =
      "NVIDIA GPUs by failure mode: health, throughput (the utilization lie), bottlenecks, cost and waste, the "
      "diagnosis and training jobs. Generated by `gpuscope grafana-dashboard`; dcgm-exporter's metric and label "
      "names, so it works on dcgm-exporter fleets too (gpuscope-only panels then show no data).";
  d["editable"] = true;
  d["fiscalYearStartMonth"] = 0;
  d["graphTooltip"] = 1;  // shared crosshair: one moment across every panel
  d["id"] = nullptr;
  d["links"] = Json::array();
  d["liveNow"] = false;
  d["panels"] = panels();
  d["refresh"] = "30s";
  d["schemaVersion"] = kGrafanaSchemaVersion;
  d["style"] = "dark";
  d["tags"] = Json::array({"gpu", "nvidia", "dcgm", "gpuscope"});
  d["templating"] = templating(options);
  d["time"] = Json{{"from", "now-6h"}, {"to", "now"}};
  d["timepicker"] = Json::object();
  d["timezone"] = "browser";
  d["title"] = options.title;
  d["uid"] = kGrafanaDashboardUid;
  d["version"] = 1;
  d["weekStart"] = "";
  return d;
}

}  // namespace gpuscope::exporter
