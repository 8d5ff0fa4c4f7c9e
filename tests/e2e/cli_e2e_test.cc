// The built `gpuscope` binary against the simulated NVML: golden output for a fixed scenario, seed
// and time, and the fault scenarios' exit codes and output.
// Regenerate the golden files after an intended change with: GPUSCOPE_UPDATE_GOLDEN=1 build/tests/e2e_test
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "e2e/command_runner.h"

namespace gpuscope::e2e {
namespace {

const std::string kExe = GPUSCOPE_EXE;

std::map<std::string, std::string> frozen_at(double seconds) {
  return {{"GPUSCOPE_SIM_TIME", std::to_string(seconds)}, {"GPUSCOPE_SIM_SEED", ""}, {"TZ", "UTC"}};
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Compares `actual` with tests/e2e/golden/<name>, or rewrites it when GPUSCOPE_UPDATE_GOLDEN is set.
void expect_golden(const std::string& name, const std::string& actual) {
  const auto path = std::filesystem::path(GPUSCOPE_SOURCE_DIR) / "tests/e2e/golden" / name;
  if (const char* update = std::getenv("GPUSCOPE_UPDATE_GOLDEN"); update != nullptr && *update == '1') {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing; run with GPUSCOPE_UPDATE_GOLDEN=1";
  EXPECT_EQ(actual, read_text(path)) << "golden " << name << " differs";
}

CommandResult gpuscope(std::vector<std::string> args, std::map<std::string, std::string> env = frozen_at(600)) {
  args.insert(args.begin(), kExe);
  return run_command(args, env, 60);
}

const std::string kGolden = "--simulate=" + scenario("golden.yaml");

TEST(CliE2e, GoldenQueryCsv) {
  auto r = gpuscope({kGolden, "query",
                     "--query-gpu=timestamp,index,name,uuid,pci.bus_id,pstate,temperature.gpu,temperature.memory,"
                     "utilization.gpu,utilization.memory,memory.total,memory.used,memory.free,memory.reserved,"
                     "power.draw,power.limit,clocks.sm,clocks.mem,clocks.max.sm,fan.speed,pcie.link.gen.current,"
                     "pcie.link.width.max,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total",
                     "--format=csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  expect_golden("query_gpu.csv", r.out);
}

TEST(CliE2e, GoldenQueryJson) {
  auto r = gpuscope({kGolden, "query",
                     "--query-gpu=index,name,temperature.gpu,utilization.gpu,memory.used,memory.reserved,power.draw,"
                     "fan.speed,clocks.sm",
                     "--format=json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("query_gpu.json", r.out);
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_TRUE(doc.contains("gpus"));
  for (const auto& g : doc["gpus"]) {
    EXPECT_TRUE(g["temperature.gpu_celsius"].is_number());
    EXPECT_TRUE(g["memory.used_mib"].is_number());
  }
}

TEST(CliE2e, GoldenComputeApps) {
  auto r = gpuscope({kGolden, "query", "--query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_bus_id",
                     "--format=csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("compute_apps.csv", r.out);
}

TEST(CliE2e, GoldenListAndDmon) {
  auto list = gpuscope({kGolden, "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  expect_golden("list.txt", list.out);
  auto dmon = gpuscope({kGolden, "dmon", "-s", "pucvmet", "-c", "2", "-d", "1"});
  ASSERT_EQ(dmon.exit_code, 0) << dmon.err;
  expect_golden("dmon.txt", dmon.out);
}

TEST(CliE2e, UnknownFieldIsAUsageError) {
  auto r = gpuscope({"--simulate", "query", "--query-gpu=index,temprature.gpu", "--format=csv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("temprature.gpu"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(CliE2e, BadFlagIsAUsageError) {
  auto r = gpuscope({"--simulate", "dmon", "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << r.err;
}

TEST(CliE2e, NoLibraryExitsThreeAndSuggestsSimulate) {
  auto r = gpuscope({"--nvml-lib", "/nonexistent/libnvidia-ml.so.1", "list"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--simulate"), std::string::npos) << r.err;
}

TEST(CliE2e, DriverNotLoadedPrintsNvmlsErrorAndExitsOne) {
  auto r = gpuscope({"--simulate=" + scenario("driver_not_loaded.yaml"), "list"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Driver Not Loaded"), std::string::npos) << r.err;
}

TEST(CliE2e, OldDriverWithoutV3ProcessFunctionsStillListsProcesses) {
  auto current = gpuscope({kGolden, "query", "--query-compute-apps=pid,process_name,used_memory", "--format=csv"});
  auto legacy = gpuscope({kGolden, "--nvml-lib", GPUSCOPE_SIM_LEGACY_LIB, "query",
                          "--query-compute-apps=pid,process_name,used_memory", "--format=csv"});
  ASSERT_EQ(legacy.exit_code, 0) << legacy.err;
  EXPECT_EQ(legacy.out, current.out);
  auto r535 = gpuscope({"--simulate=" + scenario("driver_r535.yaml"), "query",
                        "--query-compute-apps=pid,process_name", "--format=csv,noheader"});
  ASSERT_EQ(r535.exit_code, 0) << r535.err;
  EXPECT_FALSE(r535.out.empty()) << "processes read through the _v2 fallback";
}

TEST(CliE2e, LegacyDriverLeavesProfilingFieldsOutOfJson) {
  auto r = gpuscope({kGolden, "--nvml-lib", GPUSCOPE_SIM_LEGACY_LIB, "query",
                     "--query-gpu=index,memory.used,memory.reserved", "--format=json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  for (const auto& g : doc["gpus"]) {
    EXPECT_TRUE(g.contains("memory.used_mib"));
    EXPECT_FALSE(g.contains("memory.reserved_mib")) << "unsupported is absent, not 0";
  }
}

TEST(CliE2e, LostGpuIsShownLostWhileTheOthersReport) {
  const std::string sim = "--simulate=" + scenario("gpu_lost.yaml");
  auto lost = gpuscope({sim, "query", "--query-gpu=index,power.draw,temperature.gpu", "--format=csv,noheader"},
                       frozen_at(90));
  ASSERT_EQ(lost.exit_code, 0) << lost.err;
  std::istringstream lines(lost.out);
  std::string gpu0, gpu1;
  std::getline(lines, gpu0);
  std::getline(lines, gpu1);
  EXPECT_TRUE(gpu0.starts_with("0, ")) << gpu0;
  EXPECT_EQ(gpu0.find("[GPU is lost]"), std::string::npos) << gpu0;
  EXPECT_NE(gpu0.find(" W, "), std::string::npos) << gpu0;
  EXPECT_EQ(gpu1, "1, [GPU is lost], [GPU is lost]");

  auto json = gpuscope({sim, "query", "--query-gpu=index,power.draw", "--format=json"}, frozen_at(90));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto doc = nlohmann::json::parse(json.out);
  EXPECT_TRUE(doc["gpus"][0].contains("power.draw_watts"));
  EXPECT_FALSE(doc["gpus"][1].contains("power.draw_watts")) << "no value for a lost GPU, never 0";

  // An empty process list of a lost GPU must not pass for "no processes".
  auto apps = gpuscope({sim, "query", "--query-compute-apps=pid,gpu_uuid", "--format=csv"}, frozen_at(90));
  ASSERT_EQ(apps.exit_code, 0) << apps.err;
  EXPECT_NE(apps.err.find("GPU 1: GPU is lost"), std::string::npos) << apps.err;

  auto back = gpuscope({sim, "query", "--query-gpu=index,power.draw", "--format=csv,noheader,nounits"},
                       frozen_at(150));
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out.find("lost"), std::string::npos) << "answers again after its window: " << back.out;
}

TEST(CliE2e, SlowDriverCallsDelayButCompleteTheQuery) {
  auto r = gpuscope({"--simulate=" + scenario("slow_calls.yaml"), "query", "--query-gpu=index,temperature.memory",
                     "--format=csv,noheader"},
                    frozen_at(20));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.timed_out);
  std::istringstream lines(r.out);
  int rows = 0;
  for (std::string line; std::getline(lines, line); ++rows) {
    EXPECT_EQ(line.find('['), std::string::npos) << "every value read: " << line;
  }
  EXPECT_EQ(rows, 2);
}

TEST(CliE2e, BadScenarioIsOneLineNamingFileAndLine) {
  const auto path = std::filesystem::temp_directory_path() / ("gpuscope-bad-" + std::to_string(getpid()) + ".yaml");
  std::ofstream(path) << "seed: 1\ngpus:\n  count: 2\n  model: NVIDIA H100 80GB HBM3\nworkload:\n  profile: trainig\n";
  auto r = gpuscope({"--simulate=" + path.string(), "list"});
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 2) << "the user's input, not a driver failure";
  EXPECT_TRUE(r.err.starts_with("gpuscope: scenario " + path.string() + ":6: ")) << r.err;
  EXPECT_NE(r.err.find("trainig"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

}  // namespace
}  // namespace gpuscope::e2e
