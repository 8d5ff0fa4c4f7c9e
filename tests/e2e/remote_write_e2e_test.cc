// serve --remote-write against Debian's Prometheus started as a remote-write receiver: the receiver ends
// up with exactly the agent's samples (values and timestamps), through a receiver outage and restart
// (no gap) and a kill -9 of the agent mid-send (nothing rejected as out of order).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct RemoteWriteReceiver {
  fs::path storage;
  fs::path config;
  int port;
  std::unique_ptr<BackgroundProcess> process;

  void start() {
    process = std::make_unique<BackgroundProcess>(std::vector<std::string>{
        "/usr/bin/prometheus", "--config.file=" + config.string(), "--storage.tsdb.path=" + storage.string(),
        "--web.listen-address=127.0.0.1:" + std::to_string(port), "--web.enable-remote-write-receiver"});
  }
  bool ready() const {
    for (int i = 0; i < 200; ++i) {
      if (http_get(port, "/-/ready", {}, 1s).status == 200) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
};

nlohmann::json rw_api_query(int port, const std::string& q, double at) {
  auto r = http_get(port, "/api/v1/query?query=" + url_encode(q) + "&time=" + std::to_string(at));
  return r.status == 200 ? nlohmann::json::parse(r.body, nullptr, false) : nlohmann::json();
}

// The raw samples of each series a range selector returns, by the series' labels.
std::map<std::string, std::vector<std::pair<double, std::string>>> rw_raw_samples(const nlohmann::json& j) {
  std::map<std::string, std::vector<std::pair<double, std::string>>> out;
  if (!j.is_object() || j["status"] != "success") return out;
  for (const auto& s : j["data"]["result"]) {
    auto& samples = out[s["metric"].dump()];
    for (const auto& v : s["values"]) samples.emplace_back(v[0].get<double>(), v[1].get<std::string>());
  }
  return out;
}

// The agent's gpuscope_remote_write_* value, or -1.
double rw_metric(const Agent& agent, const std::string& name) {
  const std::string m = agent.metrics();
  const auto at = m.find("\n" + name + "{");
  if (at == std::string::npos) return -1;
  const auto end = m.find('\n', at + 1);
  const std::string line = m.substr(at + 1, end - at - 1);
  return std::atof(line.substr(line.rfind(' ') + 1).c_str());
}

// Until the receiver holds every sample the agent had by `now - settle`.
bool rw_caught_up(const Agent& agent, std::chrono::seconds limit) {
  for (auto waited = 0ms; waited < limit; waited += 200ms) {
    const double lag = rw_metric(agent, "gpuscope_remote_write_lag_seconds");
    if (lag >= 0 && lag < 3.5 && rw_metric(agent, "gpuscope_remote_write_samples_pending") == 0) return true;
    std::this_thread::sleep_for(200ms);
  }
  return false;
}

TEST(RemoteWriteE2e, PrometheusGetsExactlyTheAgentsSamplesThroughAnOutageAndAKill) {
  if (!fs::exists("/usr/bin/prometheus")) GTEST_SKIP() << "prometheus not installed (scripts/setup installs it)";
  TempDir dir;
  RemoteWriteReceiver receiver{dir.path / "prom", dir.write("prometheus.yml", "global:\n  scrape_interval: 15s\n"),
                               free_port(), nullptr};
  receiver.start();
  ASSERT_TRUE(receiver.ready()) << receiver.process->output();

  const std::string data_dir = (dir.path / "agent").string();
  const std::vector<std::string> args = {"--simulate", "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir,
                                         "--interval", "500ms", "--flush-interval", "1s", "--remote-write",
                                         "http://127.0.0.1:" + std::to_string(receiver.port) + "/api/v1/write"};
  auto agent = std::make_unique<Agent>(args, live_env());
  ASSERT_TRUE(agent->ready()) << agent->process->output();
  const double started = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::this_thread::sleep_for(3s);
  ASSERT_TRUE(rw_caught_up(*agent, 20s)) << agent->process->output();
  EXPECT_GT(rw_metric(*agent, "gpuscope_remote_write_samples_sent_total"), 0);

  // The receiver away for a while: the agent keeps reading, then catches up.
  ASSERT_TRUE(receiver.process->signal_and_wait(SIGTERM, 20s).has_value());
  std::this_thread::sleep_for(5s);
  EXPECT_GT(rw_metric(*agent, "gpuscope_remote_write_lag_seconds"), 5);
  receiver.start();
  ASSERT_TRUE(receiver.ready()) << receiver.process->output();
  ASSERT_TRUE(rw_caught_up(*agent, 30s)) << agent->process->output();
  EXPECT_EQ(rw_metric(*agent, "gpuscope_remote_write_samples_failed_total"), 0);
  EXPECT_NE(agent->process->output().find("receiver reachable again"), std::string::npos) << agent->process->output();

  // kill -9 while it sends (a request every reading), then the same agent again on its data directory.
  agent->process->send(SIGKILL);
  agent->process->signal_and_wait(0, 5s);
  agent.reset();
  auto restarted = std::make_unique<Agent>(args, live_env());
  ASSERT_TRUE(restarted->ready()) << restarted->process->output();
  std::this_thread::sleep_for(3s);
  ASSERT_TRUE(rw_caught_up(*restarted, 30s)) << restarted->process->output();
  EXPECT_EQ(rw_metric(*restarted, "gpuscope_remote_write_samples_failed_total"), 0);
  EXPECT_NE(restarted->process->output().find("remote write: resuming"), std::string::npos);

  // Every sample of the agent's history, series by series, value and time, is the receiver's, and the
  // receiver has none the agent lacks: the whole run, outage and restart included.
  const double at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() - 5;
  const std::string window = std::to_string(static_cast<int>(at - started) + 30) + "s";
  for (const std::string metric : {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_PROF_SM_ACTIVE",
                                   "gpuscope_sample_age_seconds"}) {
    const auto agent_samples = rw_raw_samples(rw_api_query(restarted->port, metric + "[" + window + "]", at));
    const auto receiver_samples = rw_raw_samples(rw_api_query(receiver.port, metric + "[" + window + "]", at));
    ASSERT_FALSE(agent_samples.empty()) << metric;
    std::size_t n = 0;
    for (const auto& [series, samples] : agent_samples) n += samples.size();
    EXPECT_GT(n, 10u) << metric;
    EXPECT_EQ(receiver_samples.size(), agent_samples.size()) << metric;
    for (const auto& [series, samples] : agent_samples) {
      auto it = receiver_samples.find(series);
      ASSERT_NE(it, receiver_samples.end()) << metric << " " << series;
      EXPECT_EQ(it->second, samples) << metric << " " << series;
    }
  }
  // Prometheus logged no sample rejected (out of order, out of bounds, duplicate with another value).
  EXPECT_EQ(receiver.process->output().find("Out of order sample"), std::string::npos) << receiver.process->output();
  EXPECT_EQ(receiver.process->output().find("Error appending remote write"), std::string::npos);
  EXPECT_TRUE(receiver.process->signal_and_wait(SIGTERM, 20s).has_value());
}

// One request's head as a loopback receiver got it (answered 204), or "" when none came in time.
std::string first_request_head(int listener, std::chrono::seconds limit) {
  timeval tv{static_cast<time_t>(limit.count()), 0};
  setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const int conn = ::accept(listener, nullptr, nullptr);
  if (conn < 0) return "";
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = ::read(conn, buf, sizeof buf);
    if (n <= 0) break;
    head.append(buf, static_cast<std::size_t>(n));
  }
  const std::string reply = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
  (void)!::write(conn, reply.data(), reply.size());
  ::close(conn);
  return head.substr(0, head.find("\r\n\r\n"));
}

TEST(RemoteWriteE2e, ConfiguredAuthAndHeadersGoWithEveryRequest) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  TempDir dir;
  const std::string config = dir.write("rw.yml", "remote_write:\n"
                                                 "  - url: http://127.0.0.1:" + std::to_string(port) + "/receive\n"
                                                 "    basic_auth: {username: agent, password: s3cret}\n"
                                                 "    headers: {X-Scope-OrgID: team-a}\n");
  // The live simulator: its readings carry the time they are taken (a frozen one's lie in the past).
  Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--interval", "500ms", "--remote-write.config", config},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  const std::string head = first_request_head(listener, 20s);
  ::close(listener);
  ASSERT_FALSE(head.empty()) << agent.process->output();
  EXPECT_TRUE(head.starts_with("POST /receive HTTP/1.1")) << head;
  for (const char* want : {"Content-Encoding: snappy", "Content-Type: application/x-protobuf",
                           "X-Prometheus-Remote-Write-Version: 0.1.0", "User-Agent: gpuscope/",
                           "X-Scope-OrgID: team-a",
                           "Authorization: Basic YWdlbnQ6czNjcmV0"}) {  // base64("agent:s3cret")
    EXPECT_NE(head.find(want), std::string::npos) << want << " missing in\n" << head;
  }
  // The password shows nowhere in the agent's log.
  EXPECT_EQ(agent.process->output().find("s3cret"), std::string::npos);
}

TEST(RemoteWriteE2e, ABadConfigIsOneLineNamingFileAndLineAndExitsTwo) {
  TempDir dir;
  const std::string config = dir.write("rw.yml", "remote_write:\n  - url: http://127.0.0.1:1/w\n"
                                                 "    basic_auth: {password: x}\n");
  auto r = run_command({GPUSCOPE_EXE, "--simulate", "serve", "--listen", "127.0.0.1:0", "--remote-write.config", config},
                       frozen_env(600));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpuscope: --remote-write.config: " + config + ":3: basic_auth needs a username\n");
}

}  // namespace
}  // namespace gpuscope::e2e
