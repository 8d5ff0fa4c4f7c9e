// deploy/gcp/ against a running agent: every PromQL query of the Cloud Monitoring dashboard answers with
// data on the demo node (as Cloud Monitoring would evaluate it over the same series), and every metric
// type deploy/gcp/README.md names is prometheus.googleapis.com/NAME/KIND with the KIND the agent's own
// /metrics declares for NAME.
#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "e2e/agent_fixture.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kGcpDir = std::string(GPUSCOPE_SOURCE_DIR) + "/deploy/gcp/";

std::string gcp_file(const std::string& name) {
  std::ifstream in(kGcpDir + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json gcp_get_json(int port, const std::string& path) {
  const auto r = http_get(port, path);
  EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  return json::parse(r.body, nullptr, false);
}

std::size_t gcp_result_count(int port, const std::string& query) {
  const json j = gcp_get_json(port, "/api/v1/query?query=" + url_encode(query));
  return j.is_object() && j["data"]["result"].is_array() ? j["data"]["result"].size() : 0;
}

TEST(GcpDashboardE2e, EveryQueryAnswersWithDataAndEveryNamedMetricTypeMatchesTheAgentsTypes) {
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "200ms",
               "--diagnosis.interval", "1s", "--events-socket", "none"},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  // Two readings at least for the rates, and a verdict for every GPU.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  bool ready = false;
  while (!ready && std::chrono::steady_clock::now() < deadline) {
    ready = gcp_result_count(agent.port, "count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}[1m]) >= 10") == 1 &&
            gcp_result_count(agent.port, "gpuscope_diagnosis_info") == 8;
    if (!ready) std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(ready) << agent.process->output();

  const json dashboard = json::parse(gcp_file("dashboard.json"));
  const std::int64_t end = std::time(nullptr) + 1;
  const std::int64_t start = end - 20;
  std::vector<std::string> empty;
  std::size_t asked = 0;
  for (const json& tile : dashboard["mosaicLayout"]["tiles"]) {
    for (const json& set : tile["widget"]["xyChart"]["dataSets"]) {
      const std::string expr = set["timeSeriesQuery"]["prometheusQuery"];
      const json answer = gcp_get_json(
          agent.port, fmt::format("/api/v1/query_range?query={}&start={}&end={}&step=1", url_encode(expr), start, end));
      ++asked;
      ASSERT_EQ(answer["status"], "success") << expr << "\n" << answer.dump();
      if (answer["data"]["result"].empty()) empty.push_back(tile["widget"]["title"].get<std::string>() + ": " + expr);
    }
  }
  EXPECT_GT(asked, 10u);
  EXPECT_TRUE(empty.empty()) << "queries without data on the demo node:\n" << fmt::format("{}", fmt::join(empty, "\n"));

  // The agent's own declaration of each family's type.
  std::map<std::string, std::string> types;
  const std::string metrics = agent.metrics();
  const std::regex type_line(R"(# TYPE (\S+) (\S+))");
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), type_line); it != std::sregex_iterator(); ++it) {
    types[(*it)[1]] = (*it)[2];
  }
  const std::string readme = gcp_file("README.md");
  const std::regex metric_type(R"(prometheus\.googleapis\.com/([A-Za-z_:][A-Za-z0-9_:]*)/([a-z:]+))");
  std::size_t named = 0;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), metric_type); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1], kind = (*it)[2];
    if (name == "NAME") continue;  // the pattern itself
    ++named;
    ASSERT_TRUE(types.contains(name)) << name << " is not among the agent's series";
    EXPECT_EQ(kind, types[name]) << name;
  }
  EXPECT_GT(named, 10u);
}

}  // namespace
}  // namespace gpuscope::e2e
