// Mistakes in what the simulator is given (the scenario file, GPUSCOPE_SIM_* variables) and file
// flags given a directory: the user's input, so one line naming it and exit 2, never "NVML
// initialization failed" (a driver failure, exit 1) or a misleading "no such file" / "empty file".
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace gpuscope::cli {
namespace {

namespace fs = std::filesystem;
using testing::run_gpuscope;

// In-process, the built-in pack is not where it is looked for (next to the executable).
const std::string kRulePack = std::string(GPUSCOPE_SOURCE_DIR) + "/rules/gpu.rules.yml";

class SimulatorInput : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    unsetenv("GPUSCOPE_SIM_SEED");
    setenv("GPUSCOPE_SIM_TIME", "600", 1);
    dir_ = fs::temp_directory_path() / ("gpuscope_sim_input_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    bad_ = (dir_ / "s.yaml").string();
    std::ofstream(bad_) << "gpus:\n  count: abc\n";
  }
  void TearDown() override {
    unsetenv("GPUSCOPE_SIM_TIME");
    unsetenv("GPUSCOPE_SIM_SEED");
    fs::remove_all(dir_);
  }
  fs::path dir_;
  std::string bad_;
};

void expect_input_error(const testing::CliResult& r, const std::string& line) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err, "gpuscope: " + line + "\n");
}

TEST_F(SimulatorInput, ABadScenarioIsNamedAsTheScenario) {
  const std::string why = "scenario " + bad_ + ":2: count must be a whole number, not 'abc'";
  expect_input_error(run_gpuscope({"--simulate=" + bad_, "list"}), why);
  expect_input_error(run_gpuscope({"backtest", "--scenario", bad_, "--duration", "1h", "--rules", kRulePack}), why);
  expect_input_error(run_gpuscope({"--simulate=" + (dir_ / "missing.yaml").string(), "list"}),
                     "scenario " + (dir_ / "missing.yaml").string() + ": cannot open (No such file or directory)");
}

TEST_F(SimulatorInput, ABadSimulatorVariableIsNamed) {
  setenv("GPUSCOPE_SIM_TIME", "soon", 1);
  expect_input_error(run_gpuscope({"--simulate", "list"}),
                     "environment variable GPUSCOPE_SIM_TIME: 'soon' is not a number of seconds");
  setenv("GPUSCOPE_SIM_TIME", "600", 1);
  setenv("GPUSCOPE_SIM_SEED", "-1", 1);
  expect_input_error(run_gpuscope({"--simulate", "list"}), "environment variable GPUSCOPE_SIM_SEED: '-1' is not a seed");
}

TEST_F(SimulatorInput, ADirectoryWhereAFileBelongsSaysSo) {
  const std::string d = dir_.string();
  // Said "DIR:1: empty scenario" (through the driver, exit 1), "no such file" and "empty file (needs 'gpus')".
  expect_input_error(run_gpuscope({"--simulate=" + d, "list"}), "scenario " + d + ": cannot open (Is a directory)");
  expect_input_error(run_gpuscope({"backtest", "--scenario", d}),
                     "--scenario " + d + ": is a directory (name a scenario file in it)");
  auto catalog = run_gpuscope({"backtest", "--scenario", bad_, "--rules", kRulePack, "--price-catalog", d});
  EXPECT_EQ(catalog.code, 2);
  EXPECT_THAT(catalog.err, ::testing::HasSubstr("--price-catalog " + d + ": cannot open (Is a directory)"));
}

}  // namespace
}  // namespace gpuscope::cli
