// Checks deploy/gcp/ by parsing it: the Ops Agent configuration must scrape the port and path gpuscope
// serves, the PodMonitoring must select the DaemonSet's pods and name a port they have, and the Cloud
// Monitoring dashboard must be a layout Cloud Monitoring accepts (tiles on the 48-column grid, none
// overlapping) whose every query parses with gpuscope's PromQL parser. Whether those queries answer is
// tests/e2e/gcp_dashboard_e2e_test.cc's part.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "promql/parser.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDeploy = fs::path(GPUSCOPE_SOURCE_DIR) / "deploy";

std::string gcp_read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The DaemonSet document of the Kubernetes manifest.
YAML::Node gcp_daemonset() {
  for (const YAML::Node& doc : YAML::LoadAllFromFile((kDeploy / "kubernetes/gpuscope.yaml").string())) {
    if (doc["kind"] && doc["kind"].as<std::string>() == "DaemonSet") return doc;
  }
  return {};
}

TEST(GcpOpsAgent, ScrapesTheAgentsDefaultPortAndPathThroughAPipeline) {
  const YAML::Node config = YAML::LoadFile((kDeploy / "gcp/ops-agent/config.yaml").string());
  const YAML::Node receivers = config["metrics"]["receivers"];
  ASSERT_TRUE(receivers.IsMap());
  std::set<std::string> prometheus_receivers;
  for (const auto& r : receivers) {
    if (r.second["type"].as<std::string>() != "prometheus") continue;
    prometheus_receivers.insert(r.first.as<std::string>());
    const YAML::Node scrape = r.second["config"]["scrape_configs"];
    ASSERT_TRUE(scrape.IsSequence());
    ASSERT_EQ(scrape.size(), 1u);
    EXPECT_EQ(scrape[0]["metrics_path"].as<std::string>(), "/metrics");
    // serve's default --listen is 127.0.0.1:9400: only a scrape from the VM itself reaches it.
    const YAML::Node targets = scrape[0]["static_configs"][0]["targets"];
    ASSERT_TRUE(targets.IsSequence());
    EXPECT_EQ(targets[0].as<std::string>(), "localhost:9400");
    // Prometheus refuses a timeout longer than the interval.
    const auto seconds = [](const std::string& d) { return std::stoi(d.substr(0, d.size() - 1)); };
    EXPECT_LE(seconds(scrape[0]["scrape_timeout"].as<std::string>()),
              seconds(scrape[0]["scrape_interval"].as<std::string>()));
  }
  ASSERT_EQ(prometheus_receivers.size(), 1u);
  std::set<std::string> piped;
  for (const auto& p : config["metrics"]["service"]["pipelines"]) {
    for (const auto& r : p.second["receivers"]) piped.insert(r.as<std::string>());
  }
  EXPECT_EQ(piped, prometheus_receivers) << "every receiver in a pipeline, and only those defined";
}

TEST(GcpPodMonitoring, SelectsTheDaemonSetsPodsAndANamedPortTheyHave) {
  const YAML::Node pm = YAML::LoadFile((kDeploy / "gcp/gke/pod-monitoring.yaml").string());
  EXPECT_EQ(pm["apiVersion"].as<std::string>(), "monitoring.googleapis.com/v1");
  EXPECT_EQ(pm["kind"].as<std::string>(), "PodMonitoring");
  const YAML::Node ds = gcp_daemonset();
  ASSERT_TRUE(ds.IsMap()) << "no DaemonSet in deploy/kubernetes/gpuscope.yaml";
  // A PodMonitoring only sees pods of its own namespace.
  EXPECT_EQ(pm["metadata"]["namespace"].as<std::string>(), ds["metadata"]["namespace"].as<std::string>());
  const YAML::Node pod_labels = ds["spec"]["template"]["metadata"]["labels"];
  const YAML::Node match = pm["spec"]["selector"]["matchLabels"];
  ASSERT_TRUE(match.IsMap() && match.size() > 0);
  for (const auto& kv : match) {
    const std::string key = kv.first.as<std::string>();
    ASSERT_TRUE(pod_labels[key]) << "the pods have no label " << key;
    EXPECT_EQ(pod_labels[key].as<std::string>(), kv.second.as<std::string>()) << key;
  }
  std::set<std::string> ports;
  for (const auto& c : ds["spec"]["template"]["spec"]["containers"]) {
    for (const auto& p : c["ports"]) ports.insert(p["name"].as<std::string>());
  }
  ASSERT_TRUE(pm["spec"]["endpoints"].IsSequence());
  for (const auto& e : pm["spec"]["endpoints"]) {
    EXPECT_TRUE(ports.contains(e["port"].as<std::string>())) << e["port"].as<std::string>();
    EXPECT_EQ(e["path"].as<std::string>(), "/metrics");
  }
}

TEST(GcpDashboard, TilesFitCloudMonitoringsGridWithoutOverlapping) {
  const json d = json::parse(gcp_read(kDeploy / "gcp/dashboard.json"));
  ASSERT_TRUE(d["displayName"].is_string());
  const json& layout = d["mosaicLayout"];
  const int columns = layout["columns"].get<int>();
  EXPECT_GE(columns, 1);
  EXPECT_LE(columns, 48);  // the API's maximum
  const json& tiles = layout["tiles"];
  ASSERT_GT(tiles.size(), 8u);
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const json& a = tiles[i];
    const int ax = a.value("xPos", 0), ay = a.value("yPos", 0), aw = a["width"], ah = a["height"];
    EXPECT_GE(ax, 0);
    EXPECT_GE(aw, 1);
    EXPECT_LE(ax + aw, columns) << a["widget"]["title"];
    EXPECT_FALSE(a["widget"]["title"].get<std::string>().empty());
    for (std::size_t j = i + 1; j < tiles.size(); ++j) {
      const json& b = tiles[j];
      const int bx = b.value("xPos", 0), by = b.value("yPos", 0), bw = b["width"], bh = b["height"];
      const bool overlap = ax < bx + bw && bx < ax + aw && ay < by + bh && by < ay + ah;
      EXPECT_FALSE(overlap) << a["widget"]["title"] << " overlaps " << b["widget"]["title"];
    }
  }
}

TEST(GcpDashboard, EveryChartQueriesInPromqlThatParses) {
  const json d = json::parse(gcp_read(kDeploy / "gcp/dashboard.json"));
  std::size_t queries = 0;
  for (const json& tile : d["mosaicLayout"]["tiles"]) {
    const json& chart = tile["widget"]["xyChart"];
    ASSERT_TRUE(chart.is_object()) << tile["widget"]["title"];
    for (const json& set : chart["dataSets"]) {
      const json& q = set["timeSeriesQuery"];
      // One query language per data set: PromQL, not a Monitoring filter or MQL beside it.
      ASSERT_EQ(q.size(), 1u) << q.dump();
      const std::string expr = q["prometheusQuery"];
      auto parsed = gpuscope::promql::parse_expr(expr);
      EXPECT_TRUE(parsed.has_value()) << expr << "\n  " << (parsed ? "" : parsed.error().to_string(expr));
      ++queries;
    }
  }
  EXPECT_GT(queries, 10u);
}

}  // namespace
