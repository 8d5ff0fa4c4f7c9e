// The agent's HTTP face as a new user meets it: the first request after the port opens already has
// the GPUs (so `serve & curl` works), HEAD tells what GET would send, and the dashboard links every
// route the agent answers, each link working, also below a route prefix.
#include <gtest/gtest.h>

#include <signal.h>

#include <regex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;

TEST(AgentHttpE2e, TheFirstRequestAfterThePortOpensAlreadyHasTheGpusAndHealth200) {
  TempDir data;
  const int port = free_port();
  BackgroundProcess agent({GPUSCOPE_EXE, "--simulate=" + scenario("demo.yaml"), "serve", "--listen",
                           "127.0.0.1:" + std::to_string(port), "--data-dir", data.path.string()},
                          live_env());
  // As `serve & curl` does, but without curl's back-off: ask as soon as a connection is accepted.
  HttpResult first;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (first.status == 0 && std::chrono::steady_clock::now() < deadline && agent.running()) {
    first = http_get(port, "/metrics");
    if (first.status == 0) std::this_thread::sleep_for(2ms);
  }
  ASSERT_EQ(first.status, 200) << agent.output();
  EXPECT_NE(first.body.find("\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\""), std::string::npos)
      << "the first scrape had no GPU series:\n" << first.body.substr(0, 2000);
  auto health = http_get(port, "/healthz");
  EXPECT_EQ(health.status, 200) << health.body;
}

// A driver that hangs on the first reading neither keeps the port closed for good nor keeps SIGTERM
// from stopping the agent.
TEST(AgentHttpE2e, AFirstReadingThatHangsDelaysThePortTenSecondsAtMostAndSigtermStillStops) {
  TempDir dir;
  const auto hang = dir.write("hang.yaml",
                              "seed: 6\nnode: {hostname: hang-test}\ngpus: {count: 2, model: NVIDIA H100 80GB HBM3}\n"
                              "workload: {profile: training}\n"
                              "faults:\n  - {type: slow, function: nvmlDeviceGetFieldValues, delay: 60s, at: 0s, for: 120s}\n");
  {
    const int port = free_port();
    BackgroundProcess agent({GPUSCOPE_EXE, "--simulate=" + hang, "serve", "--listen", "127.0.0.1:" + std::to_string(port),
                             "--data-dir", (dir.path / "a").string()},
                            live_env());
    ASSERT_TRUE(agent.wait_for_line("msg=history", 10s)) << agent.output();
    std::this_thread::sleep_for(500ms);  // inside the first reading
    EXPECT_EQ(http_get(port, "/healthz", {}, 1s).status, 0) << "the port opened before the first reading";
    // Well before the 10 s the wait would take: the stop request ends it.
    EXPECT_EQ(agent.signal_and_wait(SIGTERM, 5s), 0) << agent.output();
    EXPECT_NE(agent.output().find("msg=\"stopping before the first reading\" signal=SIGTERM"), std::string::npos)
        << agent.output();
  }
  Agent agent({"--simulate=" + hang, "serve", "--listen", "127.0.0.1:0", "--data-dir", (dir.path / "b").string()},
              live_env());
  ASSERT_GT(agent.port, 0) << agent.process->output();
  EXPECT_NE(agent.process->output().find("level=warn msg=\"no GPU reading yet; listening anyway"), std::string::npos)
      << agent.process->output();
  auto health = http_get(agent.port, "/healthz");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body, "no GPU reading yet\n");
  // The diagnosis loop (on by default) waits for the first reading too: a stop ends that wait rather
  // than waiting out its 30 s, so SIGTERM still ends the agent while the reading hangs.
  EXPECT_TRUE(agent.process->signal_and_wait(SIGTERM, 5s).has_value()) << agent.process->output();
}

// Every route the index links, found in the page itself, so a link added or lost is seen here.
std::set<std::string> index_links(const std::string& page) {
  std::set<std::string> out;
  const std::regex href("href=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), href); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

TEST(AgentHttpE2e, TheDashboardLinksEveryRouteTheReadmeNamesAndEachLinkAnswers) {
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  auto index = http_get(agent.port, "/");
  ASSERT_EQ(index.status, 200);
  // The page's links are relative (it works below --web.route-prefix): at / they resolve to /LINK.
  std::set<std::string> links;
  for (const auto& link : index_links(index.body)) {
    EXPECT_FALSE(link.starts_with("/")) << link << ": an absolute link breaks behind a route prefix";
    if (!link.starts_with("data:")) links.insert("/" + link);
  }
  for (const char* route : {"/metrics", "/healthz", "/api/v1/gpus", "/api/v1/query?", "/api/v1/series?", "/api/v1/labels",
                            "/api/v1/label/__name__/values", "/api/v1/status/buildinfo", "/api/v1/alerts", "/api/v1/rules",
                            "/api/v1/diagnosis", "/api/v1/training", "/api/v1/check", "/static/"}) {
    EXPECT_TRUE(std::any_of(links.begin(), links.end(), [&](const std::string& l) { return l.starts_with(route); }))
        << route << " is not linked from /";
  }
  EXPECT_NE(index.body.find("api/v1/query_range"), std::string::npos) << "query_range is not named";
  for (const auto& link : links) {
    auto r = http_get(agent.port, link);
    EXPECT_EQ(r.status, 200) << link << ": " << r.body.substr(0, 300);
  }
}

TEST(AgentHttpE2e, HeadAnswersWithTheStatusAndHeadersOfGetOnEveryRoute) {
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  auto head = [&](const std::string& path) {
    return http_raw(agent.port, "HEAD " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  };
  // Bodies that are the same from one request to the next: the very same Content-Length.
  for (const char* path : {"/", "/healthz", "/health", "/nope"}) {
    auto g = http_get(agent.port, path);
    auto h = head(path);
    EXPECT_EQ(h.status, g.status) << path;
    EXPECT_EQ(h.headers["content-length"], std::to_string(g.body.size())) << path;
    EXPECT_EQ(h.headers["content-type"], g.headers["content-type"]) << path;
    EXPECT_EQ(h.body, "") << path;
  }
  // Bodies with the agent's own changing numbers (ages, CPU): the length of a body of that kind.
  for (const char* path : {"/metrics", "/api/v1/gpus"}) {
    auto g = http_get(agent.port, path);
    auto h = head(path);
    EXPECT_EQ(h.status, 200) << path;
    EXPECT_EQ(h.headers["content-type"], g.headers["content-type"]) << path;
    const long length = std::atol(h.headers["content-length"].c_str());
    EXPECT_GT(length, static_cast<long>(g.body.size()) * 9 / 10) << path;
    EXPECT_LT(length, static_cast<long>(g.body.size()) * 11 / 10) << path;
  }
  // The query API refuses HEAD as Prometheus does, and says so with a length that matches its words.
  auto api = head("/api/v1/query?query=1");
  EXPECT_EQ(api.status, 405);
  EXPECT_GT(std::atol(api.headers["content-length"].c_str()), 0);
}

TEST(AgentHttpE2e, UnderARoutePrefixEveryRouteAnswersBelowItAndNothingOutside) {
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--web.route-prefix",
               "/gpuscope/"},
              frozen_env(600));
  HttpResult health;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (health.status != 200 && std::chrono::steady_clock::now() < deadline) {
    health = http_get(agent.port, "/gpuscope/healthz");
    if (health.status != 200) std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(health.status, 200) << agent.process->output();
  auto metrics = http_get(agent.port, "/gpuscope/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("DCGM_FI_DEV_GPU_TEMP{"), std::string::npos);
  auto query = http_get(agent.port, "/gpuscope/api/v1/query?query=count(DCGM_FI_DEV_GPU_TEMP)");
  EXPECT_EQ(query.status, 200) << query.body;
  auto page = http_get(agent.port, "/gpuscope/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.headers["content-type"], "text/html; charset=utf-8");
  EXPECT_EQ(http_get(agent.port, "/gpuscope/static/uPlot.iife.min.js").status, 200);
  for (const char* root : {"/", "/gpuscope"}) {
    auto r = http_get(agent.port, root);
    EXPECT_EQ(r.status, 302) << root;
    EXPECT_EQ(r.headers["location"], "/gpuscope/") << root;
  }
  for (const char* outside : {"/metrics", "/healthz", "/api/v1/gpus", "/static/uPlot.min.css", "/gpuscopex/metrics"}) {
    EXPECT_EQ(http_get(agent.port, outside).status, 404) << outside;
  }
}

TEST(AgentHttpE2e, TheApisJsonIsGzippedForAClientThatAcceptsIt) {
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, frozen_env(600));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  for (const char* path : {"/api/v1/gpus", "/api/v1/label/__name__/values", "/api/v1/series?match%5B%5D=DCGM_FI_DEV_GPU_TEMP"}) {
    auto plain = http_get(agent.port, path);
    auto gz = http_get(agent.port, path, {{"Accept-Encoding", "gzip"}});
    ASSERT_EQ(gz.status, 200) << path;
    EXPECT_EQ(plain.headers.count("content-encoding"), 0u) << path;
    EXPECT_EQ(gz.headers["content-encoding"], "gzip") << path;
    EXPECT_LT(gz.body.size(), plain.body.size() / 2) << path;
    const auto inflated = nlohmann::json::parse(gunzip(gz.body));
    EXPECT_EQ(inflated.contains("gpus") || inflated.contains("data"), true) << path;
  }
}

TEST(AgentHttpE2e, ARoutePrefixAUrlCannotHoldIsOneLineAndExit2) {
  auto r = run_command({GPUSCOPE_EXE, "--simulate=" + scenario("demo.yaml"), "serve", "--no-history",
                        "--web.route-prefix", "/a b"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("invalid --web.route-prefix '/a b'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace gpuscope::e2e
