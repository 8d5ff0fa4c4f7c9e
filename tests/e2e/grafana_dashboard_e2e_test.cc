// The dashboard `gpuscope grafana-dashboard` prints, asked of a running agent the way Grafana's Prometheus
// data source asks: the host and GPU variables through /api/v1/label/NAME/values and /api/v1/series, then
// every panel query through /api/v1/query_range (instant ones through /api/v1/query) with the variables
// replaced by the values those answered, and the alert annotation's query. The agent runs the demo node
// with the rule pack; the test posts a training job's step and epoch events (four ranks, one slow, one
// whose memory grows at each epoch) so the training panels have data and the rule pack's
// GpuTrainingMemoryNotReleased fires for the annotation. Every query must answer with data, except the MIG
// instances' (the demo node has no MIG): those are asked of scenarios/mig.yaml's node, where they must.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <set>
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

const std::string kExe = GPUSCOPE_EXE;
constexpr const char* kDemoHost = "dgx-h100-demo-01";  // scenarios/demo.yaml's node

json get_json(int port, const std::string& path) {
  const auto r = http_get(port, path);
  EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  return json::parse(r.body, nullptr, false);
}

HttpResult post_events(int port, const std::string& body) {
  return http_raw(port, fmt::format("POST /api/v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                    "Content-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n{}",
                                    body.size(), body));
}

std::size_t result_count(int port, const std::string& query) {
  const json j = get_json(port, "/api/v1/query?query=" + url_encode(query));
  return j.is_object() && j["data"]["result"].is_array() ? j["data"]["result"].size() : 0;
}

// Grafana's Prometheus data source joins a multi-value variable's values as a regex alternation, each
// value regex-escaped (prometheusRegularEscape).
std::string regex_alternation(const std::vector<std::string>& values) {
  std::vector<std::string> escaped;
  for (const std::string& v : values) {
    std::string e;
    for (const char c : v) {
      if (std::string_view("\\^$*+?.()|{}[]").find(c) != std::string_view::npos) e += '\\';
      e += c;
    }
    escaped.push_back(e);
  }
  return values.size() == 1 ? escaped[0] : fmt::format("({})", fmt::join(escaped, "|"));
}

std::string substitute(std::string expr, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [name, value] : values) {
    for (auto at = expr.find(name); at != std::string::npos; at = expr.find(name, at + value.size())) {
      expr.replace(at, name.size(), value);
    }
  }
  return expr;
}

std::vector<std::string> strings(const json& array) {
  std::vector<std::string> out;
  for (const json& v : array) out.push_back(v.get<std::string>());
  return out;
}

// A query of MIG instances or of gpuscope's MIG series: no data on a node without MIG.
bool grafana_is_mig_query(const std::string& expr) {
  return expr.find("GPU_I_ID!=\"\"") != std::string::npos || expr.find("gpuscope_mig_") != std::string::npos;
}

struct GrafanaAnswer {
  std::string title;
  std::string where;  // "PANEL REF: EXPR"
  std::string expr;
  json result;
};

// Every panel query, with Grafana's variables replaced, over [end - 30 s, end] at a 1 s step (instant ones
// at `end`); "Cost today" over today so far (UTC, the agent's env). $__rate_interval as Grafana computes it
// for a 15 s scrape interval: max(4 x 15s, step + 15s).
std::vector<GrafanaAnswer> grafana_ask_every_query(int port, const json& dashboard, const std::string& host_regex,
                                                   const std::string& gpu_regex, std::int64_t end) {
  const std::int64_t start = end - 30;
  const std::int64_t since_midnight = std::max<std::int64_t>(end % 86400, 60);
  std::vector<GrafanaAnswer> out;
  for (const json& panel : dashboard["panels"]) {
    if (panel["type"] == "row") continue;
    const std::int64_t range_s = panel.value("timeFrom", "") == "now/d" ? since_midnight : end - start;
    const std::vector<std::pair<std::string, std::string>> values{{"$__rate_interval", "1m"},
                                                                  {"$__interval", "1s"},
                                                                  {"$__range", fmt::format("{}s", range_s)},
                                                                  {"$Hostname", host_regex},
                                                                  {"$gpu", gpu_regex}};
    for (const json& target : panel["targets"]) {
      const std::string expr = substitute(target["expr"], values);
      const std::string where = fmt::format("{} {}: {}", panel["title"].get<std::string>(),
                                            target["refId"].get<std::string>(), expr);
      const std::string path =
          target["instant"].get<bool>()
              ? fmt::format("/api/v1/query?query={}&time={}", url_encode(expr), end)
              : fmt::format("/api/v1/query_range?query={}&start={}&end={}&step=1", url_encode(expr), start, end);
      const json answer = get_json(port, path);
      EXPECT_EQ(answer["status"], "success") << where << "\n" << answer.dump();
      out.push_back({panel["title"], where, target["expr"], answer["data"]["result"]});
    }
  }
  return out;
}

// A four-rank job on GPUs 0-3 (the demo's training process, pid 4242): rank 3 takes 0.9 s a step where
// the others take 0.5 s (a straggler), and rank 0's memory grows by 512 MiB at each of four epoch ends.
std::string training_events() {
  std::string body;
  for (int rank = 0; rank < 4; ++rank) {
    for (int step = 1; step <= 8; ++step) {
      body += fmt::format(
          R"({{"event":"step","job":"grafana-e2e","rank":{},"world_size":4,"gpu":{},"pid":4242,"step":{},"duration_s":{},"loss":{}}})"
          "\n",
          rank, rank, step, rank == 3 ? 0.9 : 0.5, 3.0 - 0.1 * step);
    }
  }
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  for (int epoch = 0; epoch < 4; ++epoch) {
    body += fmt::format(R"({{"event":"epoch_end","job":"grafana-e2e","rank":0,"gpu":0,"pid":4242,"epoch":{},"allocated_bytes":{:.0f}}})"
                        "\n",
                        epoch, 20 * kGiB + epoch * 0.5 * kGiB);
  }
  return body;
}

TEST(GrafanaDashboardE2e, EveryVariableAndPanelQueryAnswersWithDataOnTheDemoNode) {
  const auto printed = run_command({kExe, "grafana-dashboard"});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  const json dashboard = json::parse(printed.out);

  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "200ms",
               "--rules", std::string(GPUSCOPE_SOURCE_DIR) + "/rules/gpu.rules.yml", "--evaluation-interval", "1s",
               "--diagnosis.interval", "1s", "--events-socket", "none"},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  const auto posted = post_events(agent.port, training_events());
  ASSERT_EQ(posted.status, 202) << posted.body;
  ASSERT_NE(posted.body.find("\"rejected\":0"), std::string::npos) << posted.body;

  // Enough history for rates over Grafana's rate interval, a verdict for every GPU, the training findings
  // in the history, and the alert the memory growth raises.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  bool ready = false;
  while (!ready && std::chrono::steady_clock::now() < deadline) {
    ready = result_count(agent.port, "count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}[1m]) >= 15") == 1 &&
            result_count(agent.port, "gpuscope_diagnosis_info") == 8 &&
            result_count(agent.port, "gpuscope_training_straggler_info") == 1 &&
            result_count(agent.port, "ALERTS{alertname=\"GpuTrainingMemoryNotReleased\", alertstate=\"firing\"}") == 1;
    if (!ready) std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(ready) << agent.process->output();

  // The variables, as Grafana's Prometheus data source runs label_values(METRIC, LABEL).
  const json hosts = get_json(agent.port, "/api/v1/label/Hostname/values?match[]=" + url_encode("DCGM_FI_DEV_GPU_TEMP"));
  EXPECT_EQ(strings(hosts["data"]), std::vector<std::string>{kDemoHost}) << hosts.dump();
  const json series = get_json(agent.port, "/api/v1/series?match[]=" + url_encode("DCGM_FI_DEV_GPU_TEMP"));
  std::set<std::string> series_hosts, series_gpus;
  for (const json& s : series["data"]) {
    series_hosts.insert(s.value("Hostname", ""));
    series_gpus.insert(s.value("gpu", ""));
  }
  EXPECT_EQ(series_hosts, std::set<std::string>{kDemoHost});
  EXPECT_EQ(series_gpus.size(), 8u);
  const std::string host_regex = regex_alternation(strings(hosts["data"]));
  const json gpus = get_json(agent.port, "/api/v1/label/gpu/values?match[]=" +
                                             url_encode("DCGM_FI_DEV_GPU_TEMP{Hostname=~\"" + host_regex + "\"}"));
  std::vector<std::string> gpu_values = strings(gpus["data"]);
  std::sort(gpu_values.begin(), gpu_values.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(a) < std::stoi(b);
  });
  EXPECT_EQ(gpu_values, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}));

  // The panels over the last 30 seconds. The end rounded up to a whole second, as the readiness checks saw
  // the newest samples (the alert's first ALERTS sample may be a fraction of a second old).
  const std::int64_t end = std::time(nullptr) + 1;
  const std::int64_t start = end - 30;
  std::vector<std::string> empty;
  std::size_t asked = 0;
  const std::string gpu_regex = regex_alternation(gpu_values);
  for (const GrafanaAnswer& a : grafana_ask_every_query(agent.port, dashboard, host_regex, gpu_regex, end)) {
    ++asked;
    if (grafana_is_mig_query(a.expr)) {
      EXPECT_TRUE(a.result.empty()) << "a MIG instance on a node without MIG: " << a.where << "\n" << a.result.dump();
    } else if (a.result.empty()) {
      empty.push_back(a.where);
    }
  }
  EXPECT_GT(asked, 30u);
  EXPECT_TRUE(empty.empty()) << "queries without data on the demo node:\n" << fmt::format("{}", fmt::join(empty, "\n"));

  // The alert annotation: the firing alert the test caused, on the demo's host.
  for (const json& a : dashboard["annotations"]["list"]) {
    if (!a.contains("expr")) continue;
    const std::string expr = substitute(a["expr"], {{"$__interval", "1s"},
                                                    {"$__range", fmt::format("{}s", end - start)},
                                                    {"$Hostname", host_regex},
                                                    {"$gpu", gpu_regex}});
    const json answer = get_json(agent.port, fmt::format("/api/v1/query_range?query={}&start={}&end={}&step=1",
                                                         url_encode(expr), start, end));
    ASSERT_FALSE(answer["data"]["result"].empty()) << expr << "\n" << answer.dump();
    std::set<std::string> names;
    for (const json& s : answer["data"]["result"]) names.insert(s["metric"].value("alertname", ""));
    EXPECT_TRUE(names.contains("GpuTrainingMemoryNotReleased")) << answer.dump();
  }
}

// scenarios/mig.yaml's node in its first minutes: GPU 0 in MIG mode with a 3g.40gb (#2) training, a 2g.20gb
// (#4) serving bursts with 12 GiB held, a data-starved 1g.10gb (#7), an idle 1g.10gb (#8) nobody holds;
// GPU 1 whole and training. Every query of MIG instances answers with data; the whole-GPU queries of the
// same fields find GPU 1 only (GPU 0 has none of those fields at GPU level); the MIG row counts 4 instances
// on GPU 0, weighs GPU 0's SM activity from its instances, and lists #8 alone as idle.
TEST(GrafanaDashboardE2e, MigQueriesAnswerPerInstanceOnTheMigNode) {
  const auto printed = run_command({kExe, "grafana-dashboard"});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  const json dashboard = json::parse(printed.out);
  Agent agent({"--simulate=" + scenario("mig.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "200ms",
               "--events-socket", "none"},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  bool ready = false;
  while (!ready && std::chrono::steady_clock::now() < deadline) {
    ready = result_count(agent.port, "count_over_time(DCGM_FI_PROF_SM_ACTIVE{GPU_I_ID=\"8\"}[1m]) >= 15") == 1 &&
            result_count(agent.port, "DCGM_FI_PROF_SM_ACTIVE{GPU_I_ID!=\"\"}") == 4;
    if (!ready) std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(ready) << agent.process->output();

  const std::int64_t end = std::time(nullptr) + 1;
  std::map<std::string, std::vector<GrafanaAnswer>> by_panel;  // title -> its answers, in ref order
  std::size_t mig_queries = 0;
  const std::string host_regex = regex_alternation({"mig-h100-01"});
  for (GrafanaAnswer& a : grafana_ask_every_query(agent.port, dashboard, host_regex, regex_alternation({"0", "1"}), end)) {
    if (grafana_is_mig_query(a.expr)) {
      ++mig_queries;
      EXPECT_FALSE(a.result.empty()) << "no data: " << a.where;
      for (const json& s : a.result) EXPECT_EQ(s["metric"].value("gpu", ""), "0") << a.where;
    }
    by_panel[a.title].push_back(std::move(a));
  }
  EXPECT_GE(mig_queries, 10u);

  const auto gpus_of = [](const json& result) {
    std::set<std::string> out;
    for (const json& s : result) out.insert(s["metric"].value("gpu", "") + "/" + s["metric"].value("GPU_I_ID", ""));
    return out;
  };
  // Utilization vs SM active: A utilization (GPU 1 only: a MIG GPU has none), B whole GPUs' SM active, C instances'.
  const auto& lie = by_panel["Utilization vs SM active"];
  ASSERT_EQ(lie.size(), 3u);
  EXPECT_EQ(gpus_of(lie[0].result), (std::set<std::string>{"1/"}));
  EXPECT_EQ(gpus_of(lie[1].result), (std::set<std::string>{"1/"}));
  EXPECT_EQ(gpus_of(lie[2].result), (std::set<std::string>{"0/2", "0/4", "0/7", "0/8"}));
  const auto& memory = by_panel["GPU memory used"];
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(gpus_of(memory[0].result), (std::set<std::string>{"1/"}));
  EXPECT_EQ(gpus_of(memory[1].result), (std::set<std::string>{"0/2", "0/4", "0/7", "0/8"}));

  const json& count = by_panel["MIG instances per GPU"].at(0).result;
  ASSERT_EQ(count.size(), 1u) << count.dump();
  EXPECT_EQ(count[0]["metric"]["gpu"], "0");
  EXPECT_EQ(count[0]["value"][1], "4");
  // GPU 0 as one number: its instances' SM active at `end` weighted by their SMs, computed here.
  const json& weighted = by_panel["SM active per MIG GPU"].at(0).result;
  ASSERT_EQ(weighted.size(), 1u) << weighted.dump();
  EXPECT_EQ(weighted[0]["metric"]["gpu"], "0");
  const json& last = weighted[0]["values"].back();
  ASSERT_EQ(last[0].get<double>(), static_cast<double>(end));
  const auto instant = [&](const std::string& query) {
    std::map<std::string, double> by_instance;
    const json j = get_json(agent.port, fmt::format("/api/v1/query?query={}&time={}", url_encode(query), end));
    for (const json& s : j["data"]["result"]) {
      by_instance[s["metric"].value("GPU_I_ID", "")] = std::stod(s["value"][1].get<std::string>());
    }
    return by_instance;
  };
  const auto sm_active = instant("DCGM_FI_PROF_SM_ACTIVE{GPU_I_ID!=\"\"}");
  const auto sms = instant("gpuscope_mig_instance_sms");
  EXPECT_EQ(sms, (std::map<std::string, double>{{"2", 60}, {"4", 32}, {"7", 16}, {"8", 16}}));  // H100 profiles
  double weighted_sum = 0, sm_sum = 0;
  for (const auto& [id, active] : sm_active) {
    weighted_sum += active * sms.at(id);
    sm_sum += sms.at(id);
  }
  ASSERT_GT(sm_sum, 0);
  EXPECT_NEAR(std::stod(last[1].get<std::string>()), weighted_sum / sm_sum, 1e-9);
  const json& idle = by_panel["Idle MIG instances over the time range"].at(0).result;
  ASSERT_EQ(idle.size(), 1u) << idle.dump();
  EXPECT_EQ(idle[0]["metric"]["GPU_I_ID"], "8");
  EXPECT_EQ(idle[0]["metric"]["GPU_I_PROFILE"], "1g.10gb");
  EXPECT_EQ(idle[0]["value"][1], "1");  // its compute slices
}

}  // namespace
}  // namespace gpuscope::e2e
