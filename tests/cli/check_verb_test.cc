// `gpuscope check` against the simulated NVML: the built-in node passes; scenarios/unhealthy_node.yaml
// (an ECC-failed, a remap-pending and a narrow-link GPU from t = 0) fails with one line per problem;
// --fail-on, -i, --cuda-runtime and --kernel-log change what fails; bad flags are one-line usage errors.
#include <cstdlib>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "scratch_dir.h"

namespace gpuscope::cli::check_verb_test {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::run_gpuscope;

const std::string kUnhealthyNode = std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/unhealthy_node.yaml";
const std::string kThermalRunaway = std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/thermal_runaway.yaml";

class CheckVerb : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    setenv("GPUSCOPE_SIM_TIME", "600", 1);
  }
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }

  // gpuscope against the simulator, with `scenario` (empty: the built-in 8x H100 node).
  static testing::CliResult sim(const std::string& scenario, std::vector<std::string> args) {
    return testing::run_simulated(scenario, std::move(args));
  }

  // GPU `index`'s UUID and its PCI address as the kernel log writes it ("0000:19:00").
  static std::pair<std::string, std::string> identity(const std::string& scenario, unsigned index) {
    auto r = sim(scenario, {"list", "--format", "json"});
    EXPECT_EQ(r.code, 0) << r.err;
    const auto gpu = nlohmann::json::parse(r.out)["gpus"].at(index);
    std::string bus = gpu["pci_bus_id"];  // "00000000:19:00.0"
    for (auto& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return {gpu["uuid"], bus.substr(4, 10)};
  }

  gpuscope::testing::ScratchDir scratch_;
};

TEST_F(CheckVerb, TheBuiltInNodePassesInOneLineThatSaysWhatWasNotChecked) {
  auto r = sim("", {"check"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "healthy: all 8 GPUs passed ecc, remap, pcie, thermal, persistence; not checked: xid (no kernel log read "
            "and no XID events watched), driver (no CUDA runtime version given to compare the driver with); kernel "
            "log not read (the GPUs are simulated; give --kernel-log FILE)\n");
}

TEST_F(CheckVerb, WithAKernelLogAndARuntimeEveryCheckIsMade) {
  const auto log = scratch_.write("dmesg.txt", "[    0.000000] Linux version 6.1.0\n");
  auto r = sim("", {"check", "--kernel-log", log, "--cuda-runtime", "12.4"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "healthy: all 8 GPUs passed ecc, xid, remap, pcie, thermal, persistence, driver\n");
}

TEST_F(CheckVerb, AnUnhealthyNodeFailsWithOneLinePerProblemNamingTheGpu) {
  setenv("GPUSCOPE_SIM_TIME", "60", 1);
  auto r = sim(kUnhealthyNode, {"check"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  const auto gpu1 = identity(kUnhealthyNode, 1);
  const auto gpu2 = identity(kUnhealthyNode, 2);
  const auto gpu3 = identity(kUnhealthyNode, 3);
  EXPECT_EQ(lines[0], "FAIL ecc: GPU 1 (" + gpu1.first + "): 1 uncorrectable (double-bit) ECC error since the "
                      "driver loaded: data in its memory may be corrupt (reset the GPU)");
  EXPECT_EQ(lines[1], "FAIL remap: GPU 2 (" + gpu2.first + "): a row remap is pending (reset the GPU to apply it)");
  EXPECT_EQ(lines[2], "FAIL pcie: GPU 3 (" + gpu3.first + "): link width x8 below its maximum x16 (a badly "
                      "seated card or riser); link at gen 4 below its maximum gen 5 while the GPU is not idle");
  EXPECT_THAT(lines[3], StartsWith("unhealthy: 3 problems on 3 of 6 GPUs; not checked: xid"));
}

TEST_F(CheckVerb, FailOnNarrowsWhatFailsTheGateAndTheRestAreWarnings) {
  setenv("GPUSCOPE_SIM_TIME", "60", 1);
  auto pcie = sim(kUnhealthyNode, {"check", "--fail-on", "pcie"});
  EXPECT_EQ(pcie.code, 1);
  EXPECT_THAT(pcie.out, HasSubstr("WARN ecc: GPU 1 "));
  EXPECT_THAT(pcie.out, HasSubstr("WARN remap: GPU 2 "));
  EXPECT_THAT(pcie.out, HasSubstr("FAIL pcie: GPU 3 "));
  EXPECT_THAT(pcie.out, HasSubstr("unhealthy: 1 problem on 1 of 6 GPUs; warnings: ecc, remap;"));

  auto others = sim(kUnhealthyNode, {"check", "--fail-on", "thermal,persistence"});
  EXPECT_EQ(others.code, 0) << others.out;
  EXPECT_THAT(others.out, HasSubstr("WARN pcie: GPU 3 "));
  EXPECT_THAT(others.out, HasSubstr("healthy: all 6 GPUs passed thermal, persistence; warnings: ecc, pcie, remap"));
}

TEST_F(CheckVerb, OnlyTheGpusAskedForAreChecked) {
  setenv("GPUSCOPE_SIM_TIME", "60", 1);
  auto sound = sim(kUnhealthyNode, {"check", "-i", "0,4,5"});
  EXPECT_EQ(sound.code, 0) << sound.out;
  EXPECT_THAT(sound.out, StartsWith("healthy: all 3 GPUs passed ecc, remap, pcie, thermal, persistence;"));
  auto faulty = sim(kUnhealthyNode, {"check", "-i", "2"});
  EXPECT_EQ(faulty.code, 1);
  EXPECT_THAT(faulty.out, StartsWith("FAIL remap: GPU 2 "));
}

TEST_F(CheckVerb, CriticalXidsInTheKernelLogFailTheirGpuAndApplicationXidsDoNot) {
  setenv("GPUSCOPE_SIM_TIME", "60", 1);
  const auto [uuid0, bus0] = identity(kUnhealthyNode, 0);
  const auto app = scratch_.write("app.txt", "[ 10.5] NVRM: Xid (PCI:" + bus0 + "): 13, pid=4242, name=python, "
                                                                                  "Graphics SM Warp Exception\n");
  auto app_only = sim(kUnhealthyNode, {"check", "-i", "0", "--kernel-log", app});
  EXPECT_EQ(app_only.code, 0) << app_only.out;
  EXPECT_THAT(app_only.out, StartsWith("healthy: all 1 GPU passed ecc, xid, remap,"));

  const auto lost = scratch_.write("lost.txt", "[ 10.5] NVRM: Xid (PCI:" + bus0 + "): 79, pid='<unknown>', "
                                                                                   "name=<unknown>, GPU has fallen off the bus.\n");
  auto r = sim(kUnhealthyNode, {"check", "--fail-on", "xid", "--kernel-log", lost});
  EXPECT_EQ(r.code, 1);
  const auto lines = testing::output_lines(r.out);
  EXPECT_THAT(lines, ::testing::Contains("FAIL xid: GPU 0 (" + uuid0 + "): XID 79 (GPU has fallen off the bus) in the "
                                         "kernel log"));
  EXPECT_THAT(r.out, HasSubstr("unhealthy: 1 problem on 1 of 6 GPUs"));
}

TEST_F(CheckVerb, ACriticalXidWhereNoGpuIsFailsTheNode) {
  const auto log = scratch_.write("gone.txt", "NVRM: Xid (PCI:0000:ee:00): 79, pid=1, GPU has fallen off the bus.\n");
  auto r = sim("", {"check", "--kernel-log", log});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, StartsWith("FAIL xid: at PCI 0000:ee:00, where no GPU was discovered: XID 79 (GPU has fallen "
                                "off the bus) in the kernel log\n"));
  EXPECT_THAT(r.out, HasSubstr("unhealthy: 1 problem on the node (xid);"));
}

TEST_F(CheckVerb, ACudaRuntimeNewerThanTheDriverFailsTheDriverCheck) {
  // The built-in node's driver 580.159.04 supports CUDA 13.0.
  auto newer = sim("", {"check", "--cuda-runtime", "13.1", "--fail-on", "driver"});
  EXPECT_EQ(newer.code, 1);
  EXPECT_THAT(newer.out, StartsWith("FAIL driver: the driver 580.159.04 supports CUDA 13.0, older than the job's CUDA "
                                    "runtime 13.1"));
  auto older = sim("", {"check", "--cuda-runtime", "12.8", "--fail-on", "driver"});
  EXPECT_EQ(older.code, 0) << older.out;
  auto json = sim("", {"check", "--cuda-runtime", "13.1", "--format", "json"});
  const auto driver = nlohmann::json::parse(json.out)["node"]["checks"].at(0);
  EXPECT_EQ(driver["id"], "driver");
  EXPECT_EQ(driver["status"], "fail");
  EXPECT_EQ(driver["values"]["cuda_driver_version"], 13000);
  EXPECT_EQ(driver["values"]["cuda_runtime_version"], 13010);
}

TEST_F(CheckVerb, AnOverheatingGpuFailsTheThermalCheck) {
  // scenarios/thermal_runaway.yaml: GPU 1's cooling fails from 5m; 20 minutes later it is at its limit.
  setenv("GPUSCOPE_SIM_TIME", "1500", 1);
  auto r = sim(kThermalRunaway, {"check", "--fail-on", "thermal"});
  EXPECT_EQ(r.code, 1) << r.out;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_THAT(lines[0], StartsWith("FAIL thermal: GPU 1 ("));
  EXPECT_THAT(lines[0], HasSubstr("thermal_slowdown"));
  EXPECT_THAT(lines[1], StartsWith("unhealthy: 1 problem on 1 of 2 GPUs"));
  // Before the cooling fails both GPUs are fine.
  setenv("GPUSCOPE_SIM_TIME", "120", 1);
  EXPECT_EQ(sim(kThermalRunaway, {"check", "--fail-on", "thermal"}).code, 0);
}

TEST_F(CheckVerb, AValueTheGpuDoesNotReportIsNotCheckedNotPassed) {
  const auto scenario = scratch_.write("no_persistence.yaml",
                                       "gpus: {count: 2, model: NVIDIA H100 80GB HBM3}\n"
                                       "workload: {profile: training}\n"
                                       "faults:\n"
                                       "  - {type: error, function: nvmlDeviceGetPersistenceMode, "
                                       "error: NVML_ERROR_NOT_SUPPORTED}\n");
  auto r = sim(scenario, {"check", "--fail-on", "persistence"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, StartsWith("healthy: all 2 GPUs passed ecc, remap, pcie, thermal; not checked: "));
  EXPECT_THAT(r.out, HasSubstr("persistence (persistence mode: not reported by the GPU)"));
  auto json = sim(scenario, {"check", "--format", "json"});
  const auto persistence = nlohmann::json::parse(json.out)["gpus"][0]["checks"][5];
  EXPECT_EQ(persistence["id"], "persistence");
  EXPECT_EQ(persistence["status"], "not_checked");
  EXPECT_TRUE(persistence["values"].empty());
}

TEST_F(CheckVerb, TheJsonIsNumericWithStableIdsAndUnitsInKeys) {
  setenv("GPUSCOPE_SIM_TIME", "60", 1);
  auto r = sim(kUnhealthyNode, {"check", "--format", "json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(testing::output_lines(r.out).size(), 1u);
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["healthy"], false);
  EXPECT_EQ(doc["problem_count"], 3);
  EXPECT_EQ(doc["gpu_count"], 6);
  EXPECT_EQ(doc["fail_on"].size(), 7u);
  EXPECT_EQ(doc["kernel_log"]["readable"], false);
  ASSERT_EQ(doc["gpus"].size(), 6u);
  const auto& gpu1 = doc["gpus"][1];
  EXPECT_EQ(gpu1["index"], 1);
  EXPECT_EQ(gpu1["healthy"], false);
  EXPECT_EQ(gpu1["checks"][0]["id"], "ecc");
  EXPECT_EQ(gpu1["checks"][0]["status"], "fail");
  EXPECT_EQ(gpu1["checks"][0]["values"]["ecc_dbe_volatile_total"], 1);
  EXPECT_TRUE(gpu1["checks"][0]["values"]["ecc_dbe_volatile_total"].is_number_integer());
  const auto& thermal = doc["gpus"][0]["checks"][4];
  EXPECT_EQ(thermal["id"], "thermal");
  EXPECT_TRUE(thermal["values"]["gpu_temp_celsius"].is_number());
  EXPECT_EQ(thermal["values"]["slowdown_temp_celsius"], 89);
  EXPECT_EQ(doc["gpus"][2]["checks"][2]["values"]["row_remap_pending"], 1);
  EXPECT_EQ(doc["gpus"][3]["checks"][3]["values"]["pcie_link_width_current"], 8);
  EXPECT_EQ(doc["gpus"][4]["healthy"], true);
  EXPECT_EQ(doc["node"]["checks"][0]["id"], "driver");
  EXPECT_EQ(doc["node"]["checks"][0]["status"], "not_checked");
}

void expect_usage_error(const testing::CliResult& r, const std::string& line) {
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: " + line + "\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(CheckVerb, BadFlagsAreOneLineUsageErrors) {
  expect_usage_error(sim("", {"check", "--fail-on", "ecc,bogus"}),
                     "unknown check 'bogus' (ecc, xid, remap, pcie, thermal, persistence, driver, all) in --fail-on");
  expect_usage_error(sim("", {"check", "--fail-on", ""}), "empty check name in --fail-on");
  expect_usage_error(sim("", {"check", "--cuda-runtime", "twelve"}),
                     "bad version 'twelve' in --cuda-runtime (a CUDA version like 12.4)");
  expect_usage_error(sim("", {"check", "--format", "xml"}), "unknown format 'xml' in --format (text or json)");
  expect_usage_error(sim("", {"check", "--kernel-log", "/nonexistent/dmesg"}),
                     "cannot read --kernel-log /nonexistent/dmesg: No such file or directory");
  expect_usage_error(sim("", {"check", "-i", "9"}), "unknown GPU '9' in -i");
  auto unknown = sim("", {"check", "--bogus"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_THAT(unknown.err, StartsWith("gpuscope: "));
  EXPECT_THAT(unknown.err, HasSubstr("--bogus"));
  EXPECT_EQ(testing::output_lines(unknown.err).size(), 1u);
}

TEST_F(CheckVerb, NoNvmlLibraryIsExitThree) {
  auto r = run_gpuscope({"--nvml-lib", "/nonexistent/libnvidia-ml.so.1", "check"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CheckVerb, ListCountPrintsOnlyTheNumberOfGpus) {
  auto all = sim("", {"list", "--count"});
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(all.out, "8\n");
  EXPECT_EQ(sim("", {"list", "--count", "-i", "0,3,GPU-nonsense-but-0"}).code, 2);
  EXPECT_EQ(sim("", {"list", "--count", "-i", "0,3"}).out, "2\n");
  EXPECT_EQ(sim("", {"list", "--count", "--format", "json"}).out, "{\"gpu_count\":8}\n");
  auto listed = sim("", {"list", "-i", "1"});
  EXPECT_EQ(testing::output_lines(listed.out).size(), 1u);
  EXPECT_THAT(listed.out, StartsWith("GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-"));
}

}  // namespace gpuscope::cli::check_verb_test
