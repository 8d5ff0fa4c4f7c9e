// kill -9 and restart, over and over, on one data directory: every restart comes up, the history holds no
// sample twice and loses at most one flush interval per kill, and a firing alert stays the same alert.
// Half the kills land while the store is writing (the moment its write-ahead log grows), the others at
// random points of the reading and flush cycle.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/stat.h>

#include <random>
#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kKills = 20;
constexpr double kFlushInterval = 1.0;  // --flush-interval, seconds
constexpr double kInterval = 0.1;       // --interval, seconds
// What a kill may cost beyond one flush interval: the reading in flight, and the flush the kill
// interrupted (its transaction is rolled back), with room for a test machine busy with other tests.
constexpr double kKillSlack = 2 * kInterval + 0.5;

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json api(int port, const std::string& path) {
  auto r = http_get(port, path);
  return json::parse(r.body, nullptr, false);
}

// activeAt of the firing AlwaysFiring alert, or "".
std::string firing_since(int port) {
  auto j = api(port, "/api/v1/alerts");
  if (!j.is_object()) return "";
  for (const auto& a : j["data"]["alerts"]) {
    if (a["labels"]["alertname"] == "AlwaysFiring" && a["state"] == "firing") return a["activeAt"].get<std::string>();
  }
  return "";
}

// The size and modification time of the write-ahead log, to see a write begin.
std::pair<long long, long long> wal_state(const std::string& dir) {
  struct stat st {};
  if (::stat((dir + "/chunks.sqlite-wal").c_str(), &st) != 0) return {-1, -1};
  return {static_cast<long long>(st.st_size), st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec};
}

TEST(CrashE2e, TwentyKill9sAtRandomPointsLoseAtMostAFlushIntervalEachAndNothingTwice) {
  TempDir data;
  const std::string rules = data.write("always.rules.yml",
                                       "groups:\n  - name: crash\n    interval: 1s\n    rules:\n"
                                       "      - alert: AlwaysFiring\n        expr: vector(1)\n");
  const std::string dir = (data.path / "history").string();
  const std::vector<std::string> args{"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0",
                                      "--interval", "100ms", "--flush-interval", "1s", "--data-dir", dir,
                                      "--rules", rules};
  std::mt19937 random(20261125);  // fixed: a failure can be replayed
  std::uniform_int_distribution<int> delay_ms(0, 1500);
  std::vector<double> killed_at;  // the wall time of each kill (the simulator's readings use it too)
  std::vector<double> ready_at;   // when that run's agent answered /healthz, i.e. had its first reading
  std::string active_at;
  for (int run = 0; run <= kKills; ++run) {
    Agent agent(args, live_env());
    ASSERT_TRUE(agent.ready()) << "restart " << run << " failed:\n" << agent.process->output();
    ready_at.push_back(unix_seconds_now());
    EXPECT_EQ(agent.process->output().find("damaged"), std::string::npos) << agent.process->output();
    if (run == 0) {
      // The alert fires at the first evaluation; from then on every run must carry the same one.
      for (int i = 0; i < 100 && active_at.empty(); ++i) {
        active_at = firing_since(agent.port);
        std::this_thread::sleep_for(100ms);
      }
      ASSERT_FALSE(active_at.empty()) << agent.process->output();
      std::this_thread::sleep_for(1200ms);  // the alert state file has been written
    } else {
      EXPECT_EQ(firing_since(agent.port), active_at) << "run " << run << ": the firing alert is not the same one";
    }
    if (run == kKills) break;  // the last agent is the one the history is read through

    if (run % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    } else {
      // Wait for the write-ahead log to change, i.e. a flush writing, then kill at once.
      const auto before = wal_state(dir);
      const auto give_up = std::chrono::steady_clock::now() + 5s;
      while (wal_state(dir) == before && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(50us);
    }
    killed_at.push_back(unix_seconds_now());
    ::kill(agent.process->pid(), SIGKILL);
    agent.process->signal_and_wait(SIGKILL, 5s);
    ASSERT_FALSE(agent.process->running());
  }

  // The last agent serves the whole history: every sample once, in order, and for each kill what was
  // kept of that run reaches to within one flush interval (and kKillSlack) of the kill. (A run killed
  // before its first flush keeps nothing: its loss is measured from its start, not from the run before.)
  Agent last(args, live_env());
  ASSERT_TRUE(last.ready()) << last.process->output();
  auto raw = api(last.port, "/api/v1/query?query=" + url_encode("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}[1h]"));
  ASSERT_EQ(raw["data"]["result"].size(), 1u) << raw.dump();
  std::vector<double> times;
  for (const auto& v : raw["data"]["result"][0]["values"]) times.push_back(v[0].get<double>());
  ASSERT_FALSE(times.empty());
  for (std::size_t i = 1; i < times.size(); ++i) ASSERT_LT(times[i - 1], times[i]) << "sample " << i << " twice or out of order";
  ASSERT_EQ(killed_at.size(), static_cast<std::size_t>(kKills));
  for (int k = 0; k < kKills; ++k) {
    const double kill = killed_at[static_cast<std::size_t>(k)];
    double kept = ready_at[static_cast<std::size_t>(k)];
    for (double t : times) {
      if (t <= kill) kept = std::max(kept, t);
    }
    EXPECT_GE(kept, kill - kFlushInterval - kKillSlack)
        << "kill " << k << (k % 2 == 0 ? " (random point)" : " (during a write)") << " lost " << kill - kept << " s";
  }
}

}  // namespace
}  // namespace gpuscope::e2e
