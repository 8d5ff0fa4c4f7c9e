// The MIG views end to end, in-process against the simulator's scenarios/mig.yaml: GPU 0 split into a
// 3g.40gb (GPU instance 2), a 2g.20gb (4) and two 1g.10gb (7, 8), MIG devices 0-3 in that id order; the
// 2g.20gb is destroyed at 10m.
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace gpuscope::cli {
namespace {

using ::testing::MatchesRegex;

class MigViewsSim : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    setenv("GPUSCOPE_SIM_TIME", "60", 1);
  }
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }
  static testing::CliResult mig_sim(std::vector<std::string> args) {
    args.insert(args.begin(), {std::string("--simulate=") + GPUSCOPE_SOURCE_DIR + "/scenarios/mig.yaml", "--nvml-lib",
                               GPUSCOPE_SIM_LIB});
    return testing::run_gpuscope(std::move(args));
  }
};

TEST_F(MigViewsSim, ListPrintsEachMigDeviceUnderItsGpuAsNvidiaSmiDashL) {
  auto r = mig_sim({"list"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;
  EXPECT_THAT(lines[0], MatchesRegex("GPU 0: NVIDIA H100 80GB HBM3 \\(UUID: GPU-.*\\)"));
  EXPECT_THAT(lines[1], MatchesRegex("  MIG 3g\\.40gb     Device  0: \\(UUID: MIG-.*\\)"));
  EXPECT_THAT(lines[2], MatchesRegex("  MIG 2g\\.20gb     Device  1: \\(UUID: MIG-.*\\)"));
  EXPECT_THAT(lines[3], MatchesRegex("  MIG 1g\\.10gb     Device  2: \\(UUID: MIG-.*\\)"));
  EXPECT_THAT(lines[4], MatchesRegex("  MIG 1g\\.10gb     Device  3: \\(UUID: MIG-.*\\)"));
  EXPECT_THAT(lines[5], MatchesRegex("GPU 1: NVIDIA H100 80GB HBM3 \\(UUID: GPU-.*\\)"));
  auto count = mig_sim({"list", "--count"});
  EXPECT_EQ(count.out, "2\n");  // GPUs, not MIG devices
}

TEST_F(MigViewsSim, DmonHasARowPerGpuInstanceUntilOneIsDestroyed) {
  auto ids = [](const std::string& out) {
    std::vector<std::string> first;
    for (const auto& line : testing::output_lines(out)) {
      if (line.starts_with("#")) continue;
      first.push_back(line.substr(0, 5));
    }
    return first;
  };
  auto r = mig_sim({"dmon", "-c", "1", "-s", "m"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ids(r.out), (std::vector<std::string>{"    0", "  0/2", "  0/4", "  0/7", "  0/8", "    1"})) << r.out;
  setenv("GPUSCOPE_SIM_TIME", "900", 1);
  r = mig_sim({"dmon", "-c", "1", "-s", "m"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ids(r.out), (std::vector<std::string>{"    0", "  0/2", "  0/7", "  0/8", "    1"})) << r.out;
}

TEST_F(MigViewsSim, QueryMigListsTheDevicesAndRejectsUnknownNames) {
  auto r = mig_sim({"query", "--query-mig=gpu_index,mig.index,gpu_instance_id,profile,sm_count", "--format=csv,noheader"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "0, 0, 2, 3g.40gb, 60\n0, 1, 4, 2g.20gb, 32\n0, 2, 7, 1g.10gb, 16\n0, 3, 8, 1g.10gb, 16\n");
  auto bad = mig_sim({"query", "--query-mig=gpu_index,power.draw"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(testing::output_lines(bad.err).size(), 1u) << bad.err;
}

}  // namespace
}  // namespace gpuscope::cli
