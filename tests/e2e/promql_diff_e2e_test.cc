// The agent's PromQL against Prometheus's own on the same samples: a simulated node's agent runs with
// --metrics-timestamps, a real Prometheus 2.42 (Debian's) scrapes it twice per reading, so both hold
// exactly the agent's readings; then the same queries go to both APIs and must agree within 1e-6.
// Evaluation times sit between sample times: Prometheus 2.42 closes range windows on the left, 3.x
// (which gpuscope follows) on the right, and they differ only for a sample on the boundary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <cmath>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The queries (the source documents' alerts and panels), then aggregations by gpu and
// Hostname, the range functions over several windows, binary operators, matching and set operators.
const std::vector<std::string> kQueries = {
    "avg_over_time(DCGM_FI_DEV_GPU_UTIL[10m]) < 5",
    "deriv(DCGM_FI_DEV_FB_USED[1h]) > 0",
    "stddev_over_time(DCGM_FI_PROF_SM_ACTIVE[5m]) > 0.15",
    "(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) * 100",
    "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h]) > 0",
    "(DCGM_FI_PROF_DRAM_ACTIVE > 0.8) and (DCGM_FI_PROF_SM_ACTIVE < 0.3)",
    "DCGM_FI_DEV_GPU_UTIL",
    "avg_over_time(DCGM_FI_DEV_GPU_UTIL[10m])",
    "deriv(DCGM_FI_DEV_FB_USED[1h])",
    "stddev_over_time(DCGM_FI_PROF_SM_ACTIVE[5m])",
    "sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE)",
    "avg by (gpu) (DCGM_FI_PROF_SM_ACTIVE)",
    "max by (Hostname) (DCGM_FI_DEV_GPU_TEMP)",
    "min without (gpu, UUID, pci_bus_id, device) (DCGM_FI_DEV_GPU_TEMP)",
    "count by (modelName) (DCGM_FI_DEV_GPU_UTIL)",
    "stddev by (Hostname) (DCGM_FI_DEV_POWER_USAGE)",
    "quantile by (Hostname) (0.9, DCGM_FI_DEV_POWER_USAGE)",
    "topk(3, DCGM_FI_DEV_POWER_USAGE)",
    "bottomk(2, DCGM_FI_PROF_SM_ACTIVE)",
    "rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[1m])",
    "irate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[1m])",
    "increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[30s])",
    "sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[20s])) / 1000",
    "delta(DCGM_FI_DEV_GPU_TEMP[30s])",
    "max_over_time(DCGM_FI_DEV_GPU_TEMP[5m])",
    "min_over_time(DCGM_FI_DEV_POWER_USAGE[5m])",
    "sum_over_time(DCGM_FI_PROF_SM_ACTIVE[15s])",
    "count_over_time(DCGM_FI_DEV_GPU_UTIL[10s])",
    "quantile_over_time(0.9, DCGM_FI_DEV_POWER_USAGE[20s])",
    "last_over_time(DCGM_FI_DEV_SM_CLOCK[1m])",
    "DCGM_FI_DEV_GPU_TEMP > bool 60",
    "abs(DCGM_FI_DEV_GPU_TEMP - 70)",
    "clamp(DCGM_FI_DEV_POWER_USAGE, 100, 500)",
    "DCGM_FI_DEV_POWER_USAGE / on(gpu) DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE / ignoring(UUID) DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_PROF_SM_ACTIVE * on(gpu) group_left(modelName) count by (gpu, modelName) (DCGM_FI_DEV_GPU_UTIL)",
    "DCGM_FI_DEV_GPU_UTIL offset 5s",
    "DCGM_FI_DEV_FB_USED or DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_GPU_UTIL unless on(gpu) (DCGM_FI_DEV_GPU_TEMP > 1000)",
    "scalar(count(DCGM_FI_DEV_GPU_UTIL)) * 2",
    "time() - timestamp(DCGM_FI_DEV_GPU_TEMP)",
    "sum(DCGM_FI_DEV_FB_USED) / sum(DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)",
};

std::string key_of(const json& metric) { return metric.dump(); }  // nlohmann sorts object keys

bool close_enough(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) || std::fabs(a - b) < 1e-12;
}

double number(const json& v) { return std::stod(v.get<std::string>()); }

// "" when the two API results agree, else what differs.
std::string difference(const json& ours, const json& theirs) {
  if (ours.value("status", "") != "success") return "gpuscope: " + ours.dump();
  if (theirs.value("status", "") != "success") return "prometheus: " + theirs.dump();
  const auto& a = ours["data"];
  const auto& b = theirs["data"];
  if (a["resultType"] != b["resultType"]) return fmt::format("type {} vs {}", a["resultType"].dump(), b["resultType"].dump());
  const std::string type = a["resultType"];
  if (type == "scalar") {
    return close_enough(number(a["result"][1]), number(b["result"][1])) ? "" : a.dump() + " vs " + b.dump();
  }
  std::map<std::string, json> left, right;
  for (const auto& s : a["result"]) left[key_of(s["metric"])] = s;
  for (const auto& s : b["result"]) right[key_of(s["metric"])] = s;
  if (left.size() != right.size()) return fmt::format("{} series vs {}: {} vs {}", left.size(), right.size(), a.dump(), b.dump());
  for (const auto& [k, s] : left) {
    auto it = right.find(k);
    if (it == right.end()) return "series " + k + " only in gpuscope";
    if (type == "vector") {
      if (!close_enough(number(s["value"][1]), number(it->second["value"][1]))) {
        return fmt::format("{}: {} vs {}", k, s["value"].dump(), it->second["value"].dump());
      }
    } else {
      const auto& pa = s["values"];
      const auto& pb = it->second["values"];
      if (pa.size() != pb.size()) return fmt::format("{}: {} points vs {}", k, pa.size(), pb.size());
      for (std::size_t i = 0; i < pa.size(); ++i) {
        if (std::fabs(pa[i][0].get<double>() - pb[i][0].get<double>()) > 1e-3 || !close_enough(number(pa[i][1]), number(pb[i][1]))) {
          return fmt::format("{} point {}: {} vs {}", k, i, pa[i].dump(), pb[i].dump());
        }
      }
    }
  }
  return "";
}

json api(int port, const std::string& path) {
  auto r = http_get(port, path);
  auto j = json::parse(r.body, nullptr, false);
  return j.is_discarded() ? json{{"status", "error"}, {"http", r.status}, {"body", r.body}} : j;
}

TEST(PromqlDiffE2e, AgentAndPrometheusAnswerTheSameQueriesOnTheSameSamples) {
  if (!std::filesystem::exists("/usr/bin/prometheus")) GTEST_SKIP() << "prometheus not installed (scripts/setup installs it)";
  TempDir dir;
  const int agent_port = free_port();
  const int prom_port = free_port();
  // Twice per reading, so every reading is scraped (a repeated one is the same sample, dropped).
  const auto config = dir.write("prometheus.yml",
                                "global:\n  scrape_interval: 500ms\n  scrape_timeout: 500ms\n"
                                "scrape_configs:\n  - job_name: gpuscope\n"
                                "    static_configs:\n      - targets: ['127.0.0.1:" + std::to_string(agent_port) + "']\n"
                                // The agent's store has no job/instance: the series must be the same.
                                "    metric_relabel_configs:\n      - action: labeldrop\n        regex: instance|job\n");
  // Prometheus first, and already scraping the (not yet listening) agent: it then gets the agent's
  // very first reading, so both hold the same history.
  BackgroundProcess prometheus({"/usr/bin/prometheus", "--config.file=" + config,
                                "--storage.tsdb.path=" + (dir.path / "prometheus").string(),
                                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)});
  for (int i = 0; i < 200 && http_get(prom_port, "/-/ready").status != 200; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_EQ(http_get(prom_port, "/-/ready").status, 200) << prometheus.output();
  bool scraping = false;
  for (int i = 0; i < 300 && !scraping; ++i) {
    auto up = api(prom_port, "/api/v1/query?query=up");
    scraping = up.value("status", "") == "success" && !up["data"]["result"].empty();
    if (!scraping) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(scraping) << "Prometheus never tried to scrape: " << prometheus.output();

  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:" + std::to_string(agent_port),
               "--interval", "1s", "--metrics-timestamps"},
              live_env());
  ASSERT_EQ(agent.port, agent_port) << agent.process->output();

  // ~25 readings in both.
  const std::string count_query = "/api/v1/query?query=" + url_encode("count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}[5m])");
  double readings = 0;
  for (int i = 0; i < 600 && readings < 25; ++i) {
    auto j = api(prom_port, count_query);
    if (j.value("status", "") == "success" && !j["data"]["result"].empty()) readings = number(j["data"]["result"][0]["value"][1]);
    if (readings < 25) std::this_thread::sleep_for(100ms);
  }
  ASSERT_GE(readings, 25) << prometheus.output();

  // The newest sample Prometheus holds; the agent recorded it before it served it.
  auto latest = api(prom_port, "/api/v1/query?query=" + url_encode("timestamp(DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"})"));
  ASSERT_EQ(latest["data"]["result"].size(), 1u) << latest.dump();
  const double newest = number(latest["data"]["result"][0]["value"][1]);

  // Both hold the same readings up to it.
  const std::string at_newest = fmt::format("&time={:.3f}", newest);
  auto ours = api(agent.port, count_query + at_newest);
  auto theirs = api(prom_port, count_query + at_newest);
  ASSERT_EQ(difference(ours, theirs), "") << "the two stores do not hold the same readings";

  int compared = 0, non_empty = 0;
  for (double back : {0.3, 4.7, 11.3}) {
    const std::string at = fmt::format("&time={:.3f}", newest - back);
    for (const auto& q : kQueries) {
      const std::string path = "/api/v1/query?query=" + url_encode(q) + at;
      auto a = api(agent.port, path);
      auto b = api(prom_port, path);
      EXPECT_EQ(difference(a, b), "") << q << " at newest-" << back << "s";
      ++compared;
      if (a.value("status", "") == "success" && a["data"]["resultType"] != "scalar" && !a["data"]["result"].empty()) ++non_empty;
    }
  }
  // Range queries: steps between sample times, over the last 15 s.
  for (const std::string q : {"DCGM_FI_DEV_POWER_USAGE", "rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[10s])",
                              "avg by (Hostname) (DCGM_FI_PROF_SM_ACTIVE)", "max_over_time(DCGM_FI_DEV_GPU_TEMP[5s])",
                              "(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) * 100"}) {
    const std::string path = "/api/v1/query_range?query=" + url_encode(q) +
                             fmt::format("&start={:.3f}&end={:.3f}&step=1.5", newest - 15.4, newest - 0.4);
    EXPECT_EQ(difference(api(agent.port, path), api(prom_port, path)), "") << "range: " << q;
    ++compared;
  }
  EXPECT_GE(compared, 30);
  // Most answers have series, so agreement is not agreement on nothing.
  EXPECT_GE(non_empty, 3 * 30) << "too many empty answers";
  EXPECT_TRUE(prometheus.signal_and_wait(SIGTERM, 10s).has_value());
}


// The API's refusals, word for word against a real Prometheus 2.42: status, errorType and error. Left
// out are the places where gpuscope follows Prometheus 3 instead (query_range's parse errors name the
// parameter there, an empty query has "unknown position", and label names may be any UTF-8); the unit
// tests hold those.
TEST(PromqlDiffE2e, AgentAndPrometheusRefuseTheSameBadRequestsInTheSameWords) {
  if (!std::filesystem::exists("/usr/bin/prometheus")) GTEST_SKIP() << "prometheus not installed (scripts/setup installs it)";
  TempDir dir;
  const int prom_port = free_port();
  const auto config = dir.write("prometheus.yml", "global:\n  scrape_interval: 1m\n");
  BackgroundProcess prometheus({"/usr/bin/prometheus", "--config.file=" + config,
                                "--storage.tsdb.path=" + (dir.path / "prometheus").string(),
                                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)});
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  for (int i = 0; i < 200 && http_get(prom_port, "/-/ready").status != 200; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_EQ(http_get(prom_port, "/-/ready").status, 200) << prometheus.output();

  const std::string m = url_encode("match[]");
  const std::vector<std::string> requests = {
      "/api/v1/series?" + m + "=" + url_encode("{}"),
      "/api/v1/series?" + m + "=" + url_encode("{gpu=\"\"}"),
      "/api/v1/series?" + m + "=" + url_encode("{__name__=~\".*\"}"),
      "/api/v1/series?" + m + "=DCGM_FI_DEV_GPU_TEMP&" + m + "=" + url_encode("{}"),
      "/api/v1/series",
      "/api/v1/series?start=abc",
      "/api/v1/series?" + m + "=" + url_encode("up{") + "&start=abc",
      "/api/v1/series?" + m + "=" + url_encode("up{"),
      "/api/v1/series?" + m + "=up&end=x",
      "/api/v1/labels?" + m + "=" + url_encode("{}"),
      "/api/v1/labels?" + m + "=" + url_encode("up{"),
      "/api/v1/labels?start=abc",
      "/api/v1/label/__name__/values?" + m + "=" + url_encode("{a=~\".*\"}"),
      "/api/v1/label/__name__/values?end=soon",
      "/api/v1/label/%FF/values",
      "/api/v1/query?query=" + url_encode("{}"),
      "/api/v1/query?query=" + url_encode("{gpu=\"\"}"),
      "/api/v1/query?query=" + url_encode("sum(up"),
      "/api/v1/query?query=" + url_encode("rate(up)"),
      "/api/v1/query?query=up&time=abc",
      "/api/v1/query?query=up&timeout=abc",
      "/api/v1/query?query=up&timeout=-1s",
      "/api/v1/query_range?query=up",
      "/api/v1/query_range?query=up&start=abc&end=1&step=1",
      "/api/v1/query_range?query=up&start=0&end=x&step=1",
      "/api/v1/query_range?query=up&start=10&end=0&step=1",
      "/api/v1/query_range?query=up&start=0&end=10",
      "/api/v1/query_range?query=up&start=0&end=10&step=abc",
      "/api/v1/query_range?query=up&start=0&end=10&step=0",
      "/api/v1/query_range?query=up&start=0&end=10&step=-1",
      "/api/v1/query_range?query=up&start=0&end=10&step=-5s",
      "/api/v1/query_range?query=up&start=0&end=10&step=1e20",
      "/api/v1/query_range?query=up&start=0&end=100000&step=1",
      "/api/v1/query_range?query=up&start=0&end=10&step=1&timeout=abc",
      "/api/v1/rules?type=x",
  };
  for (const auto& path : requests) {
    auto ours = http_get(agent.port, path);
    auto theirs = http_get(prom_port, path);
    EXPECT_EQ(ours.status, theirs.status) << path << "\n gpuscope: " << ours.body << "\n prometheus: " << theirs.body;
    auto a = json::parse(ours.body, nullptr, false);
    auto b = json::parse(theirs.body, nullptr, false);
    ASSERT_FALSE(b.is_discarded()) << path << ": " << theirs.body;
    EXPECT_EQ(a.value("errorType", "?"), b.value("errorType", "")) << path << ": " << ours.body;
    EXPECT_EQ(a.value("error", "?"), b.value("error", "")) << path;
  }
  EXPECT_TRUE(prometheus.signal_and_wait(SIGTERM, 10s).has_value());
}

}  // namespace
}  // namespace gpuscope::e2e
