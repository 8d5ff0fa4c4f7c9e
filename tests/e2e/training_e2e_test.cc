// `gpuscope serve`'s training and node-health endpoints as the binary runs them: GET /api/v1/check (the
// health gate of `gpuscope check` over the agent's reading), the events socket's flags and errors, and
// the preemption flags' usage errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "e2e/agent_fixture.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace training_e2e_test {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST(TrainingE2e, CheckEndpointJudgesTheAgentsReadingAsTheCheckVerbDoes) {
  Agent agent({"--simulate=" + scenario("unhealthy_node.yaml"), "serve", "--listen", "127.0.0.1:0", "--events-socket",
               "none"},
              frozen_env(30));
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  auto r = http_get(agent.port, "/api/v1/check");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto report = nlohmann::json::parse(r.body)["data"];
  EXPECT_EQ(report["healthy"], false);
  std::vector<int> unhealthy;
  for (const auto& g : report["gpus"]) {
    if (!g["healthy"].get<bool>()) unhealthy.push_back(g["index"].get<int>());
  }
  // GPU 1's double-bit ECC error, GPU 2's pending remap, GPU 3's narrow link.
  EXPECT_THAT(unhealthy, ::testing::ElementsAre(1, 2, 3)) << report.dump();

  // Only the checks that matter to the caller gate: the narrow link becomes a warning.
  const auto narrowed = nlohmann::json::parse(http_get(agent.port, "/api/v1/check?fail_on=ecc,remap").body)["data"];
  std::vector<int> failing;
  for (const auto& g : narrowed["gpus"]) {
    if (!g["healthy"].get<bool>()) failing.push_back(g["index"].get<int>());
  }
  EXPECT_THAT(failing, ::testing::ElementsAre(1, 2));
  // One GPU asked for, by index: GPU 0 trains soundly.
  const auto gpu0 = nlohmann::json::parse(http_get(agent.port, "/api/v1/check?gpu=0").body)["data"];
  EXPECT_EQ(gpu0["healthy"], true) << gpu0.dump();
  EXPECT_EQ(gpu0["gpus"].size(), 1u);

  EXPECT_EQ(http_get(agent.port, "/api/v1/check?fail_on=ecc,bogus").status, 400);
  EXPECT_EQ(http_get(agent.port, "/api/v1/check?gpu=42").status, 400);
  EXPECT_EQ(http_get(agent.port, "/api/v1/check?cuda_runtime=twelve").status, 400);
  // A job built for a CUDA newer than the driver's (12.4 in the scenario) fails the driver check.
  const auto newer = nlohmann::json::parse(http_get(agent.port, "/api/v1/check?gpu=0&cuda_runtime=12.8").body)["data"];
  EXPECT_EQ(newer["healthy"], false) << newer.dump();
}

TEST(TrainingE2e, ANamedEventsSocketInUseStopsTheAgentWithOneLine) {
  TempDir dir;
  const std::string path = (dir.path / "ev.sock").string();
  // Someone receives on it.
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  auto r = run_command({GPUSCOPE_EXE, "--simulate", "serve", "--listen", "127.0.0.1:0", "--data-dir", (dir.path / "data").string(),
                        "--events-socket", path},
                       frozen_env(30));
  ::close(fd);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--events-socket: events socket " + path + ": in use by another process"));

  auto group = run_command({GPUSCOPE_EXE, "--simulate", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                            (dir.path / "data2").string(), "--events-socket", (dir.path / "other.sock").string(), "--events-group",
                            "no-such-group-gpuscope"},
                           frozen_env(30));
  EXPECT_EQ(group.exit_code, 2) << group.err;
  EXPECT_THAT(group.err, HasSubstr("--events-group: no group \"no-such-group-gpuscope\" on this system"));
}

TEST(TrainingE2e, BadTrainingAndPreemptionFlagsAreUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--training.stall-after", "1s"}, "invalid value '1s' for --training.stall-after (10s to 24h, e.g. 5m)"},
      {{"--training.straggler-cv", "x"}, "invalid value 'x' for --training.straggler-cv (0.01 to 10, e.g. 0.1)"},
      {{"--training.max-jobs", "0"}, "invalid value '0' for --training.max-jobs (1 to 10000)"},
      {{"--preemption-pidfile", "/run/x.pid"}, "the --preemption-* flags need --preemption-notice (gce, aws or a URL)"},
      {{"--preemption-notice", "azure"}, "--preemption-notice"},
      {{"--preemption-notice", "gce", "--preemption-signal", "SIGNOPE"}, "--preemption-signal"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> argv{GPUSCOPE_EXE, "--simulate", "serve", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = run_command(argv, frozen_env(30));
    EXPECT_EQ(r.exit_code, 2) << flags.at(0) << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(message)) << flags.at(0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
}

}  // namespace training_e2e_test
}  // namespace gpuscope::e2e
