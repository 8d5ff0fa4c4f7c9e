// The verbs run in-process against gpuscope's simulated NVML (the built-in 8 x H100 node), with the
// simulated clock frozen so readings repeat.
#include <cstdlib>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace gpuscope::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::run_gpuscope;

class SimulatedVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    // A scenario left in the environment by an earlier --simulate=FILE would change the node.
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    setenv("GPUSCOPE_SIM_TIME", "600", 1);
  }
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }

  static testing::CliResult sim(std::vector<std::string> args, const std::atomic<bool>* stop = nullptr) {
    return testing::run_simulated("", std::move(args), stop);
  }
};

TEST_F(SimulatedVerbs, ListHasOneLinePerGpu) {
  auto r = sim({"list"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 8u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], StartsWith("GPU " + std::to_string(i) + ": NVIDIA H100 80GB HBM3 (UUID: GPU-"));
  }
}

TEST_F(SimulatedVerbs, GpuLostAtDiscoveryIsListedAsLostNotUnknown) {
  // scenarios/gpu_lost.yaml: GPU 1 answers NVML_ERROR_GPU_IS_LOST from 1m to 2m, handle lookups included.
  setenv("GPUSCOPE_SIM_TIME", "90", 1);
  const std::string scenario = std::string("--simulate=") + GPUSCOPE_SOURCE_DIR + "/scenarios/gpu_lost.yaml";
  auto list = run_gpuscope({scenario, "--nvml-lib", GPUSCOPE_SIM_LIB, "list"});
  ASSERT_EQ(list.code, 0) << list.err;
  auto lines = testing::output_lines(list.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], StartsWith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-"));
  EXPECT_EQ(lines[1], "GPU 1: [GPU is lost] (UUID: [GPU is lost])");

  auto query = run_gpuscope({scenario, "--nvml-lib", GPUSCOPE_SIM_LIB, "query", "--query-gpu=index,name,uuid,temperature.gpu",
                             "--format=csv,noheader", "-i", "1"});
  ASSERT_EQ(query.code, 0) << query.err;
  EXPECT_EQ(query.out, "1, [GPU is lost], [GPU is lost], [GPU is lost]\n");
}

TEST_F(SimulatedVerbs, InfoJsonNamesTheSimulatorLibrary) {
  auto r = sim({"info", "--format", "json", "-i", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["system"]["simulated"], true);
  EXPECT_THAT(doc["system"]["library_path"].get<std::string>(), HasSubstr("libnvidia-ml.so.1"));
  ASSERT_EQ(doc["gpus"].size(), 1u);
  EXPECT_TRUE(doc["gpus"][0]["memory_total_bytes"].is_number_integer());
}

TEST_F(SimulatedVerbs, QueryCsvHeaderOnceAndOneLinePerSelectedGpu) {
  auto r = sim({"query", "--query-gpu=index,timestamp,utilization.gpu,memory.used", "-i", "0,1"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "index, timestamp, utilization.gpu [%], memory.used [MiB]");
  EXPECT_THAT(lines[1], StartsWith("0, 2026/01/01 00:10:00.000, "));
  EXPECT_THAT(lines[2], StartsWith("1, "));
  EXPECT_THAT(lines[1], ::testing::EndsWith(" MiB"));
}

TEST_F(SimulatedVerbs, QueryJsonIsNumeric) {
  auto r = sim({"query", "--query-gpu=index,power.draw,temperature.gpu", "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["gpus"].size(), 8u);
  EXPECT_TRUE(doc["gpus"][0]["power.draw_watts"].is_number());
  EXPECT_TRUE(doc["gpus"][0]["temperature.gpu_celsius"].is_number_integer());
}

TEST_F(SimulatedVerbs, UnknownGpuIdIsAUsageError) {
  auto r = sim({"query", "--query-gpu=index", "-i", "0,9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: unknown GPU '9' in -i\n");
  EXPECT_EQ(r.out, "");
}

// The violation columns are measured from the second row on; the first prints 0 there, as nvidia-smi does.
TEST_F(SimulatedVerbs, DmonPrintsCountSetsAndViolationsFromTheSecondOn) {
  auto r = sim({"dmon", "-s", "pv", "-c", "2", "-i", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "# gpu    pwr  gtemp  mtemp  pviol  tviol ");
  EXPECT_EQ(lines[1], "# Idx      W      C      C      %   bool ");
  EXPECT_THAT(lines[2], ::testing::EndsWith("      0      0 "));
  EXPECT_EQ(lines[3].find('-'), std::string::npos) << lines[3];
}

TEST_F(SimulatedVerbs, LoopRunsUntilStoppedAndExitsZero) {
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(450));
    stop = true;
  });
  auto r = sim({"query", "--query-gpu=index,power.draw", "-i", "0", "-lms", "100"}, &stop);
  stopper.join();
  EXPECT_EQ(r.code, 0) << r.err;
  auto lines = testing::output_lines(r.out);
  ASSERT_GE(lines.size(), 3u);  // the header once, then at least two readings
  EXPECT_EQ(lines[0], "index, power.draw [W]");
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_THAT(lines[i], StartsWith("0, "));
}

}  // namespace
}  // namespace gpuscope::cli
