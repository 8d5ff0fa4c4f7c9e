// `serve --preemption-notice` as the Agent wires it: the watcher started after the first reading, a GCE
// notice on loopback answered with SIGTERM to the pidfile's process, the notice in /metrics, and a stop
// that ends the watcher.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/agent.h"
#include "agent/preemption_test_support.h"
#include "agent/simulated_agent.h"
#include "e2e/http_client.h"

namespace gpuscope::agent {
namespace preemption_agent_test {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST(PreemptionAgent, AGceNoticeSignalsThePidfilesProcessOnceAndShowsInMetrics) {
  const fs::path dir = fs::temp_directory_path() / ("gpuscope-preempt-agent-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  preemption_testing::GceMetadata gce;
  gce.preempted = true;
  preemption_testing::FakeMetadataServer server([&](const http::HttpRequest& r) { return gce(r); });
  preemption_testing::Sleeper job;
  ASSERT_GT(job.pid(), 0);
  {
    std::ofstream pidfile(dir / "train.pid");
    pidfile << job.pid() << "\n";
  }

  model::VirtualClock clock;
  std::stringstream log_text;
  log::Logger log(log_text, log::Level::kInfo);
  AgentConfig config = agent_testing::loopback_config(dir, &clock);
  config.diagnosis = false;
  config.events_socket = "none";
  auto source = parse_preemption_notice("gce");
  ASSERT_TRUE(source) << source.error();
  config.preemption_source = *source;
  config.preemption_metadata_url = server.base_url();
  config.preemption_pidfile = (dir / "train.pid").string();

  auto agent = agent_testing::start_simulated_agent(config, log);
  ASSERT_TRUE(agent);

  // The first poll, at start, finds the notice.
  EXPECT_EQ(job.ended_by(10s), SIGTERM) << log_text.str();
  const int port = agent->port();
  std::string metrics;
  for (int i = 0; i < 2000 && metrics.find("gpuscope_preemption_notice{") == std::string::npos; ++i) {
    metrics = e2e::http_get(port, "/metrics").body;
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_THAT(metrics, HasSubstr("gpuscope_preemption_notice{provider=\"gce\"} 1"));
  EXPECT_THAT(log_text.str(), HasSubstr("msg=\"watching for preemption notices\" provider=gce"));
  EXPECT_THAT(log_text.str(), HasSubstr("preemption notice"));
  // Every request carried GCE's header.
  for (const auto& r : server.requests()) EXPECT_EQ(r.flavor, "Google");
  EXPECT_TRUE(agent->stop());
  fs::remove_all(dir);
}

}  // namespace preemption_agent_test
}  // namespace gpuscope::agent
