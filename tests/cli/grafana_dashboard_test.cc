// `gpuscope grafana-dashboard`: the JSON Grafana imports. Its required fields are those of Grafana's
// dashboard kind schema (grafana/grafana kinds/dashboard/dashboard_kind.cue, schema 0.0, read at commit
// 00139e84396be1600192135b87b8607f3f7b79d0): the dashboard's editable, graphTooltip, schemaVersion and
// style; a panel's type, options, fieldConfig {defaults, overrides} and transformations; a row's type
// "row", id, collapsed and panels; an annotation's name, datasource, enable and iconColor; a variable's
// type, name and hide; gridPos within 24 columns (w 1-24, x 0-23). Every query parses with gpuscope's
// PromQL parser once Grafana's variables are replaced as Grafana would, the committed copy in
// deploy/grafana/ is what the verb prints, and bad flags are one-line usage errors.
#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "cli_runner.h"
#include "export/grafana_panels.h"
#include "model/field_catalog.h"
#include "promql/parser.h"

namespace gpuscope::cli {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::run_gpuscope;

json dashboard(std::vector<std::string> args = {}) {
  args.insert(args.begin(), "grafana-dashboard");
  const auto r = run_gpuscope(args);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

// Grafana's variables as its Prometheus data source interpolates them for "All" selections: a multi-value
// variable with allValue ".*" becomes ".*"; the interval macros become durations.
std::string substitute(std::string expr) {
  const std::vector<std::pair<std::string, std::string>> values{
      {"$__rate_interval", "1m"}, {"$__interval", "15s"}, {"$__range", "6h"}, {"$Hostname", ".*"}, {"$gpu", ".*"}};
  for (const auto& [name, value] : values) {
    for (auto at = expr.find(name); at != std::string::npos; at = expr.find(name, at + value.size())) {
      expr.replace(at, name.size(), value);
    }
  }
  return expr;
}

struct Query {
  std::string where;  // panel title and refId, or the annotation's name
  std::string expr;
};

std::vector<Query> all_queries(const json& d) {
  std::vector<Query> out;
  for (const json& p : d["panels"]) {
    if (!p.contains("targets")) continue;
    for (const json& t : p["targets"]) {
      out.push_back({p["title"].get<std::string>() + " " + t["refId"].get<std::string>(), t["expr"]});
    }
  }
  for (const json& a : d["annotations"]["list"]) {
    if (a.contains("expr")) out.push_back({a["name"].get<std::string>(), a["expr"]});
  }
  return out;
}

TEST(GrafanaDashboard, HasTheFieldsGrafanasDashboardSchemaRequires) {
  const json d = dashboard();
  for (const char* key : {"editable", "graphTooltip", "schemaVersion", "style", "title", "uid", "panels", "templating",
                          "annotations", "time"}) {
    EXPECT_TRUE(d.contains(key)) << key;
  }
  EXPECT_TRUE(d["editable"].is_boolean());
  EXPECT_TRUE(d["graphTooltip"] == 0 || d["graphTooltip"] == 1 || d["graphTooltip"] == 2);
  EXPECT_GE(d["schemaVersion"].get<int>(), 36);
  EXPECT_EQ(d["time"]["to"], "now");
  ASSERT_FALSE(d["panels"].empty());
  for (const json& p : d["panels"]) {
    ASSERT_TRUE(p.contains("type") && p["type"].is_string() && !p["type"].get<std::string>().empty()) << p.dump();
    EXPECT_TRUE(p["id"].is_number_unsigned()) << p.dump();
    EXPECT_TRUE(p.contains("gridPos")) << p["title"];
    if (p["type"] == "row") {
      EXPECT_TRUE(p["collapsed"].is_boolean()) << p["title"];
      EXPECT_TRUE(p["panels"].is_array()) << p["title"];
      continue;
    }
    EXPECT_TRUE(p["options"].is_object()) << p["title"];
    EXPECT_TRUE(p["fieldConfig"]["defaults"].is_object()) << p["title"];
    EXPECT_TRUE(p["fieldConfig"]["overrides"].is_array()) << p["title"];
    EXPECT_TRUE(p["transformations"].is_array()) << p["title"];
    EXPECT_FALSE(p["targets"].empty()) << p["title"];
    EXPECT_EQ(p["datasource"]["uid"], "${datasource}") << p["title"];
    for (const json& step : p["fieldConfig"]["defaults"]["thresholds"]["steps"]) {
      EXPECT_TRUE(step.contains("color")) << p["title"];
    }
    // The first threshold step is the base: Grafana reads a null value as -Infinity.
    EXPECT_TRUE(p["fieldConfig"]["defaults"]["thresholds"]["steps"][0]["value"].is_null()) << p["title"];
  }
  for (const json& a : d["annotations"]["list"]) {
    for (const char* key : {"name", "datasource", "enable", "iconColor"}) EXPECT_TRUE(a.contains(key)) << key;
  }
  for (const json& v : d["templating"]["list"]) {
    for (const char* key : {"type", "name", "hide"}) EXPECT_TRUE(v.contains(key)) << key;
  }
}

TEST(GrafanaDashboard, PanelIdsAreUnique) {
  std::set<int> ids;
  const json d = dashboard();  // held: a range-for over a temporary's member would read freed memory
  for (const json& p : d["panels"]) EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << p["id"];
}

TEST(GrafanaDashboard, PanelsStayOnTheGridAndNeverOverlap) {
  const json d = dashboard();
  struct Box {
    int x, y, w, h;
    std::string title;
  };
  std::vector<Box> boxes;
  for (const json& p : d["panels"]) {
    const json& g = p["gridPos"];
    Box b{g["x"], g["y"], g["w"], g["h"], p["title"]};
    EXPECT_GE(b.x, 0) << b.title;
    EXPECT_GE(b.y, 0) << b.title;
    EXPECT_GT(b.w, 0) << b.title;
    EXPECT_GT(b.h, 0) << b.title;
    EXPECT_LE(b.x + b.w, 24) << b.title;
    for (const Box& o : boxes) {
      const bool apart = b.x + b.w <= o.x || o.x + o.w <= b.x || b.y + b.h <= o.y || o.y + o.h <= b.y;
      EXPECT_TRUE(apart) << b.title << " overlaps " << o.title;
    }
    boxes.push_back(b);
  }
  // A row header spans the grid, and every panel after it lies below it until the next row.
  int row_y = -1;
  for (const json& p : d["panels"]) {
    if (p["type"] == "row") {
      EXPECT_EQ(p["gridPos"]["w"], 24);
      EXPECT_GT(p["gridPos"]["y"].get<int>(), row_y);
      row_y = p["gridPos"]["y"];
    } else {
      EXPECT_GT(p["gridPos"]["y"].get<int>(), row_y) << p["title"];
    }
  }
}

TEST(GrafanaDashboard, EveryQueryParsesOnceGrafanasVariablesAreReplaced) {
  const json d = dashboard();
  const auto queries = all_queries(d);
  ASSERT_GT(queries.size(), 20u);
  for (const Query& q : queries) {
    const std::string expr = substitute(q.expr);
    EXPECT_EQ(expr.find('$'), std::string::npos) << q.where << ": a variable left: " << expr;
    auto parsed = promql::parse_expr(expr);
    EXPECT_TRUE(parsed.has_value()) << q.where << ": " << expr << "\n  "
                                    << (parsed ? "" : parsed.error().to_string(expr));
  }
  // The variables' label_values(SELECTOR, LABEL): the selector is a series selector.
  const std::regex label_values(R"(^label_values\((.+), (\w+)\)$)");
  for (const json& v : d["templating"]["list"]) {
    if (v["type"] != "query") continue;
    std::smatch m;
    const std::string query = v["query"];
    ASSERT_TRUE(std::regex_match(query, m, label_values)) << query;
    EXPECT_TRUE(promql::parse_selector(substitute(m[1].str())).has_value()) << query;
  }
}

TEST(GrafanaDashboard, EveryDcgmNameIsOneTheFieldCatalogExports) {
  const std::regex dcgm_name(R"(DCGM_FI_[A-Z0-9_]+)");
  std::size_t names = 0;
  for (const Query& q : all_queries(dashboard())) {
    for (std::sregex_iterator it(q.expr.begin(), q.expr.end(), dcgm_name), end; it != end; ++it) {
      ++names;
      EXPECT_TRUE(model::FieldCatalog::by_dcgm_name(it->str()).has_value()) << q.where << ": " << it->str();
    }
  }
  EXPECT_GT(names, 15u);
}

TEST(GrafanaDashboard, RowsGoByFailureModeWithTheirSeriesAndUnits) {
  const json d = dashboard();
  std::vector<std::string> rows;
  std::map<std::string, json> by_title;
  for (const json& p : d["panels"]) {
    if (p["type"] == "row") rows.push_back(p["title"]);
    by_title[p["title"]] = p;
  }
  EXPECT_THAT(rows, ::testing::ElementsAre("Health", "Throughput", "Bottlenecks", "MIG", "Cost and waste", "Diagnosis",
                                           "Training"));

  const json& temp = by_title["GPU temperature"];
  EXPECT_THAT(temp["targets"][0]["expr"].get<std::string>(), HasSubstr("DCGM_FI_DEV_GPU_TEMP{"));
  EXPECT_EQ(temp["fieldConfig"]["defaults"]["unit"], "celsius");
  std::vector<double> steps;
  for (const json& s : temp["fieldConfig"]["defaults"]["thresholds"]["steps"]) {
    if (!s["value"].is_null()) steps.push_back(s["value"]);
  }
  EXPECT_THAT(steps, ::testing::ElementsAre(75, 85));
  EXPECT_EQ(temp["targets"][0]["legendFormat"], "GPU {{gpu}} {{Hostname}}");

  // The limit on the power panel itself: flat against it vs a sawtooth under it.
  const json& power = by_title["Power draw vs limit"];
  EXPECT_EQ(power["fieldConfig"]["defaults"]["unit"], "watt");
  EXPECT_THAT(power["targets"][0]["expr"].get<std::string>(), HasSubstr("DCGM_FI_DEV_POWER_USAGE"));
  EXPECT_THAT(power["targets"][1]["expr"].get<std::string>(), HasSubstr("DCGM_FI_DEV_ENFORCED_POWER_LIMIT"));

  // "The lie": utilization and SM active on one axis (both 0-1).
  const json& lie = by_title["Utilization vs SM active"];
  EXPECT_EQ(lie["fieldConfig"]["defaults"]["unit"], "percentunit");
  EXPECT_THAT(lie["targets"][0]["expr"].get<std::string>(), HasSubstr("DCGM_FI_DEV_GPU_UTIL"));
  EXPECT_THAT(lie["targets"][1]["expr"].get<std::string>(), HasSubstr("DCGM_FI_PROF_SM_ACTIVE"));

  // PCIe RX on its own (right) axis in bytes/s over DRAM active.
  const json& pcie = by_title["PCIe RX vs DRAM active"];
  EXPECT_THAT(pcie["targets"][0]["expr"].get<std::string>(), HasSubstr("DCGM_FI_PROF_PCIE_RX_BYTES"));
  EXPECT_THAT(pcie["targets"][1]["expr"].get<std::string>(), HasSubstr("DCGM_FI_PROF_DRAM_ACTIVE"));
  const json& rx = pcie["fieldConfig"]["overrides"][0];
  EXPECT_EQ(rx["matcher"]["options"], "A");
  EXPECT_THAT(rx["properties"].dump(), HasSubstr(R"({"id":"unit","value":"Bps"})"));
  EXPECT_THAT(rx["properties"].dump(), HasSubstr(R"({"id":"custom.axisPlacement","value":"right"})"));

  EXPECT_EQ(by_title["Spend rate now ($/h)"]["fieldConfig"]["defaults"]["unit"], "currencyUSD");
  EXPECT_EQ(by_title["Cost today"]["timeFrom"], "now/d");
  EXPECT_THAT(by_title["Idle share of the cost"]["targets"][0]["expr"].get<std::string>(),
              HasSubstr("gpuscope_cost_idle_dollars_total"));
  EXPECT_EQ(by_title["Verdict per GPU"]["type"], "state-timeline");
  EXPECT_THAT(by_title["Step time spread across ranks (CV)"]["targets"][0]["expr"].get<std::string>(),
              HasSubstr("gpuscope_training_step_time_cv"));

  // Rates and increases follow Grafana's rate interval (or the whole range), never a fixed window.
  const std::regex window(R"(\[([^\]]+)\])");
  for (const Query& q : all_queries(d)) {
    for (std::sregex_iterator it(q.expr.begin(), q.expr.end(), window), end; it != end; ++it) {
      EXPECT_TRUE((*it)[1] == "$__rate_interval" || (*it)[1] == "$__range") << q.where << ": " << q.expr;
    }
  }
}

// A GPU in MIG mode has its memory and profiling fields per GPU instance only (GPU_I_PROFILE, GPU_I_ID): every
// query of such a field says whether it wants whole GPUs or instances, so no panel mixes them under one legend,
// and each panel that draws a whole GPU's SM activity or memory draws the instances beside it.
TEST(GrafanaDashboard, MigInstancesHaveTheirOwnQueriesLegendsAndRow) {
  const json d = dashboard();
  const std::regex instance_field(
      R"((DCGM_FI_DEV_FB_(TOTAL|FREE|USED|RESERVED)|DCGM_FI_PROF_(GR_ENGINE_ACTIVE|SM_ACTIVE|SM_OCCUPANCY|)"
      R"(PIPE_TENSOR_ACTIVE|DRAM_ACTIVE|PIPE_FP(64|32|16)_ACTIVE))\{([^}]*)\})");
  int selectors = 0;
  for (const Query& q : all_queries(d)) {
    for (std::sregex_iterator it(q.expr.begin(), q.expr.end(), instance_field), end; it != end; ++it) {
      ++selectors;
      const std::string matchers = (*it)[5];
      EXPECT_TRUE(matchers.find("GPU_I_ID=\"\"") != std::string::npos ||
                  matchers.find("GPU_I_ID!=\"\"") != std::string::npos)
          << q.where << ": " << q.expr;
    }
  }
  EXPECT_GT(selectors, 10);

  std::map<std::string, json> by_title;
  for (const json& p : d["panels"]) by_title[p["title"]] = p;
  const std::string instance_legend = "GPU {{gpu}} MIG {{GPU_I_PROFILE}} #{{GPU_I_ID}} {{Hostname}}";
  for (const auto& [title, ref, prefix] : std::vector<std::tuple<std::string, int, std::string>>{
           {"Utilization vs SM active", 2, "SM active "},
           {"SM occupancy", 1, ""},
           {"Tensor core active", 1, ""},
           {"PCIe RX vs DRAM active", 2, "DRAM active "},
           {"GPU memory used", 1, ""}}) {
    const json& targets = by_title[title]["targets"];
    ASSERT_EQ(targets.size(), static_cast<std::size_t>(ref + 1)) << title;
    EXPECT_THAT(targets[ref - 1]["expr"].get<std::string>(), HasSubstr("GPU_I_ID=\"\"")) << title;
    EXPECT_THAT(targets[ref]["expr"].get<std::string>(), HasSubstr("GPU_I_ID!=\"\"")) << title;
    EXPECT_EQ(targets[ref]["legendFormat"], prefix + instance_legend) << title;
  }
  // The instances' SM active is dashed like the whole GPUs'.
  EXPECT_THAT(by_title["Utilization vs SM active"]["fieldConfig"]["overrides"].dump(),
              HasSubstr(R"("matcher":{"id":"byFrameRefID","options":"C"})"));

  std::vector<std::string> mig_row;
  bool in_mig = false;
  for (const json& p : d["panels"]) {
    if (p["type"] == "row") in_mig = p["title"] == "MIG";
    else if (in_mig) mig_row.push_back(p["title"]);
  }
  EXPECT_THAT(mig_row,
              ::testing::ElementsAre("MIG instances per GPU", "SM active per MIG GPU", "SM active per MIG instance",
                                     "Memory used per MIG instance", "Idle MIG instances over the time range"));
  EXPECT_EQ(by_title["MIG instances per GPU"]["targets"][0]["expr"],
            R"(count by (Hostname, gpu) (gpuscope_mig_instance_slices{Hostname=~"$Hostname", gpu=~"$gpu"}))");
  // SM-weighted: the instances' SM active times their SMs, over the SMs of the instances that have a value.
  EXPECT_EQ(by_title["SM active per MIG GPU"]["targets"][0]["expr"],
            R"(sum by (Hostname, gpu) (DCGM_FI_PROF_SM_ACTIVE{Hostname=~"$Hostname", gpu=~"$gpu", GPU_I_ID!=""})"
            R"( * on (Hostname, gpu, GPU_I_ID) group_left ())"
            R"( gpuscope_mig_instance_sms{Hostname=~"$Hostname", gpu=~"$gpu"})"
            R"() / sum by (Hostname, gpu) (gpuscope_mig_instance_sms{Hostname=~"$Hostname", gpu=~"$gpu"} and on)"
            R"( (Hostname, gpu, GPU_I_ID) DCGM_FI_PROF_SM_ACTIVE{Hostname=~"$Hostname", gpu=~"$gpu", GPU_I_ID!=""}))");
  const json& idle = by_title["Idle MIG instances over the time range"];
  EXPECT_EQ(idle["type"], "table");
  const std::string idle_expr = idle["targets"][0]["expr"];
  EXPECT_THAT(idle_expr, HasSubstr("max_over_time(DCGM_FI_PROF_SM_ACTIVE{Hostname=~\"$Hostname\", gpu=~\"$gpu\", "
                                   "GPU_I_ID!=\"\"}[$__range]) < 0.05"));
  EXPECT_THAT(idle_expr, HasSubstr("[$__range]) <= 1024"));
}

TEST(GrafanaDashboard, VerdictTimelineNumbersTheDiagnosisOwnVerdicts) {
  const auto codes = exporter::diagnosis_verdict_codes();
  ASSERT_EQ(codes.size(), static_cast<std::size_t>(analysis::Verdict::kUnknown) + 1);
  for (std::size_t i = 0; i < codes.size(); ++i) {
    EXPECT_EQ(codes[i], analysis::verdict_id(static_cast<analysis::Verdict>(i))) << i;
  }
  // The value mapping turns each code back into its verdict.
  const json d = dashboard();
  for (const json& p : d["panels"]) {
    if (p["title"] != "Verdict per GPU") continue;
    const json& options = p["fieldConfig"]["defaults"]["mappings"][0]["options"];
    for (std::size_t i = 0; i < codes.size(); ++i) EXPECT_EQ(options[std::to_string(i + 1)]["text"], codes[i]);
  }
}

TEST(GrafanaDashboard, VariablesUseDcgmExporterLabelsAndAnnotationsShowFiringAlerts) {
  const json d = dashboard();
  std::map<std::string, json> vars;
  for (const json& v : d["templating"]["list"]) vars[v["name"]] = v;
  EXPECT_EQ(vars["datasource"]["type"], "datasource");
  EXPECT_EQ(vars["datasource"]["query"], "prometheus");
  EXPECT_EQ(vars["Hostname"]["query"], "label_values(DCGM_FI_DEV_GPU_TEMP, Hostname)");
  EXPECT_EQ(vars["gpu"]["query"], "label_values(DCGM_FI_DEV_GPU_TEMP{Hostname=~\"$Hostname\"}, gpu)");
  for (const char* name : {"Hostname", "gpu"}) {
    EXPECT_EQ(vars[name]["multi"], true) << name;
    EXPECT_EQ(vars[name]["includeAll"], true) << name;
    EXPECT_EQ(vars[name]["allValue"], ".*") << name;
    EXPECT_EQ(vars[name]["datasource"]["uid"], "${datasource}") << name;
  }
  bool builtin = false, alerts = false;
  for (const json& a : d["annotations"]["list"]) {
    if (a.value("builtIn", 0) == 1) builtin = true;
    if (a.value("expr", "").starts_with("ALERTS{alertstate=\"firing\"")) alerts = true;
  }
  EXPECT_TRUE(builtin);
  EXPECT_TRUE(alerts);
}

TEST(GrafanaDashboard, DatasourceAndTitleLandWhereTheyShould) {
  const json d = dashboard({"--datasource", "Mimir EU", "--title", "Training cluster GPUs"});
  EXPECT_EQ(d["title"], "Training cluster GPUs");
  const json& ds = d["templating"]["list"][0];
  ASSERT_EQ(ds["name"], "datasource");
  EXPECT_EQ(ds["current"]["value"], "Mimir EU");
  EXPECT_EQ(ds["current"]["text"], "Mimir EU");
  // Panels and queries follow the variable, never a fixed data source.
  for (const json& p : d["panels"]) {
    if (p["type"] == "row") continue;
    for (const json& t : p["targets"]) EXPECT_EQ(t["datasource"]["uid"], "${datasource}") << p["title"];
  }
  json without_variable = d;
  without_variable["templating"]["list"].erase(0);
  EXPECT_EQ(without_variable.dump().find("Mimir EU"), std::string::npos) << "the name is the variable's alone";
  const json defaults = dashboard();
  EXPECT_EQ(defaults["templating"]["list"][0]["current"]["value"], "Prometheus");
  EXPECT_EQ(defaults["title"], "GPUs (gpuscope)");
  EXPECT_EQ(defaults["uid"], d["uid"]) << "a new title replaces the same dashboard";
}

TEST(GrafanaDashboard, BadFlagsAreOneLineUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--bogus"}, "--bogus"},
      {{"--datasource"}, "--datasource"},
      {{"--datasource", ""}, "--datasource"},
      {{"--title="}, "--title"},
      {{"extra"}, "extra"},
  };
  for (const auto& [flags, named] : cases) {
    std::vector<std::string> args{"grafana-dashboard"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = run_gpuscope(args);
    EXPECT_EQ(r.code, 2) << flags[0];
    EXPECT_EQ(r.out, "") << flags[0];
    EXPECT_THAT(r.err, HasSubstr(named)) << r.err;
    EXPECT_TRUE(r.err.starts_with("gpuscope: ")) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const auto help = run_gpuscope({"grafana-dashboard", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.out, HasSubstr("Example:\n  gpuscope grafana-dashboard"));
  EXPECT_THAT(help.out, HasSubstr("--datasource"));
}

TEST(GrafanaDashboard, TheCommittedCopyIsWhatTheVerbPrints) {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/deploy/grafana/gpuscope-dashboard.json");
  ASSERT_TRUE(in) << "deploy/grafana/gpuscope-dashboard.json is missing";
  std::stringstream committed;
  committed << in.rdbuf();
  const auto r = run_gpuscope({"grafana-dashboard"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(committed.str() == r.out)
      << "deploy/grafana/gpuscope-dashboard.json differs from the verb's output: regenerate it with\n"
         "  build/gpuscope grafana-dashboard > deploy/grafana/gpuscope-dashboard.json";
}

}  // namespace
}  // namespace gpuscope::cli
