// `gpuscope import` as a user meets it: a running agent's data directory is refused (its pid named),
// and once the agent is gone the real H100 recording imported there is what the next agent serves.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using nlohmann::json;

const std::string kExe = GPUSCOPE_EXE;
const std::string kRealH100 = GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/history.json.gz";

TEST(ImportE2e, ARunningAgentsDirectoryIsRefusedAndTheNextAgentServesTheImport) {
  TempDir data;
  const std::string dir = data.path.string();
  {
    Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "100ms",
                 "--data-dir", dir},
                live_env());
    ASSERT_TRUE(agent.ready()) << agent.process->output();
    auto refused = run_command({kExe, "import", "--data-dir", dir, kRealH100});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("(pid " + std::to_string(agent.process->pid()) + ")"), std::string::npos) << refused.err;
    EXPECT_EQ(refused.out, "");
  }
  auto imported = run_command({kExe, "import", "--data-dir", dir, kRealH100});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.out.find("140 series, 24032 samples imported"), std::string::npos) << imported.out;

  // The recording is older than a default retention may allow on a later day: keep ten years.
  Agent next({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--data-dir", dir,
              "--retention", "520w"},
             live_env());
  ASSERT_TRUE(next.ready()) << next.process->output();
  auto r = http_get(next.port, "/api/v1/query?query=" + url_encode("DCGM_FI_DEV_POWER_USAGE{Hostname=\"vm\"}") +
                                   "&time=1795603808");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto body = json::parse(r.body, nullptr, false);
  ASSERT_EQ(body["data"]["result"].size(), 1u) << r.body;
  EXPECT_EQ(body["data"]["result"][0]["value"][1], "73.796");
}

}  // namespace
}  // namespace gpuscope::e2e
