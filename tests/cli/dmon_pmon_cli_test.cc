// dmon's nvidia-smi options (--format csv/nounit/noheader, -o DT, -f, -e) and pmon, run in-process against
// gpuscope's simulated NVML with the simulated clock frozen.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "export/dcgmi_dmon_table.h"
#include "scratch_dir.h"

namespace gpuscope::cli {
namespace {

using ::testing::StartsWith;

class DmonPmonCli : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    setenv("GPUSCOPE_SIM_TIME", "600", 1);
  }
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }

  static testing::CliResult golden(std::vector<std::string> args) {
    return testing::run_simulated(std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/golden.yaml", std::move(args));
  }
  static std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // A usage error: exit 2, one line naming `what`, nothing on stdout.
  static void expect_one_line_usage_error(const testing::CliResult& r, const std::string& what) {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, StartsWith("gpuscope: "));
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
};

TEST_F(DmonPmonCli, DmonCsvWithDateTimeAndNoUnits) {
  auto r = golden({"dmon", "-s", "pum", "-o", "DT", "--format", "csv,nounit", "-c", "2", "-i", "0,3"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;  // one header line (no units line), 2 sets x 2 GPUs
  EXPECT_EQ(lines[0], "#Date, Time, gpu, pwr, gtemp, mtemp, sm, mem, enc, dec, jpg, ofa, fb, bar1, ccpm");
  const std::regex row(R"( \d{8}, \d\d:\d\d:\d\d, ([03])(, (\d+|-)){12})");
  std::smatch m;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    ASSERT_TRUE(std::regex_match(lines[i], m, row)) << lines[i];
    EXPECT_EQ(m[1], i % 2 == 1 ? "0" : "3");
  }
}

TEST_F(DmonPmonCli, DmonNoHeaderLeavesOnlyRows) {
  auto r = golden({"dmon", "--format", "noheader,nounit", "-c", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& line : lines) EXPECT_NE(line[0], '#') << line;
}

TEST_F(DmonPmonCli, DmonWritesToTheFileNamedByDashF) {
  testing::ScratchDir dir;
  const std::string path = (dir.path / "dmon.log").string();
  auto to_file = golden({"dmon", "-c", "1", "-i", "1", "-f", path});
  ASSERT_EQ(to_file.code, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  auto to_stdout = golden({"dmon", "-c", "1", "-i", "1"});
  ASSERT_EQ(to_stdout.code, 0) << to_stdout.err;
  EXPECT_EQ(read_file(path), to_stdout.out);  // the frozen clock repeats the reading
  // An existing file is emptied first.
  auto again = golden({"dmon", "-c", "1", "-i", "1", "-f", path});
  ASSERT_EQ(again.code, 0);
  EXPECT_EQ(read_file(path), to_stdout.out);
}

TEST_F(DmonPmonCli, UnopenableFileIsNamed) {
  for (const std::string verb : {"dmon", "pmon"}) {
    auto r = golden({verb, "-c", "1", "-f", "/nonexistent-gpuscope-dir/out.log"});
    EXPECT_EQ(r.code, 1) << verb;
    EXPECT_EQ(r.err, "gpuscope: cannot open '/nonexistent-gpuscope-dir/out.log' for -f: No such file or directory\n");
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(DmonPmonCli, DmonDashEPrintsDcgmisLayout) {
  auto r = golden({"dmon", "-e", "150,155,252", "-c", "2", "-i", "0,1"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;  // the header once, then 2 sets x 2 GPUs
  const std::string header = exporter::DcgmiDmonTable::from_ids("150,155,252")->header();
  EXPECT_EQ(lines[0] + "\n" + lines[1] + "\n", header);
  // GPU 0's gtemp, pwr and fb from nvidia-smi's view of the same frozen reading.
  auto dmon = golden({"dmon", "-s", "pm", "-c", "1", "-i", "0"});
  std::istringstream cells(testing::output_lines(dmon.out).at(2));
  std::string index, pwr, gtemp, mtemp, fb;
  cells >> index >> pwr >> gtemp >> mtemp >> fb;
  const std::regex row(R"(GPU 0 {11}(\d+) +(\d+\.\d{3}) +(\d+) +)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[2], m, row)) << lines[2];
  EXPECT_EQ(m[1], gtemp);
  EXPECT_EQ(std::llround(std::stod(m[2])), std::stoll(pwr));
  EXPECT_EQ(m[3], fb);
  EXPECT_THAT(lines[3], StartsWith("GPU 1  "));
  EXPECT_EQ(lines[2].size(), lines[0].size()) << "every cell is padded to its width";
}

TEST_F(DmonPmonCli, BadDmonFlagsNameThemselves) {
  expect_one_line_usage_error(golden({"dmon", "--format", "xml"}), "'xml'");
  expect_one_line_usage_error(golden({"dmon", "--format", "csv,json"}), "csv and json");
  expect_one_line_usage_error(golden({"dmon", "-o", "X"}), "'X' for -o");
  expect_one_line_usage_error(golden({"dmon", "-e", "150,77777"}), "'77777'");
}

// golden.yaml at 10 min: GPU 0 runs `python train.py` (pid 1000, 48 GiB) and `python eval.py` (pid 1001,
// 4 GiB from 5 min on, leaking 64 MiB a minute). The simulator splits the GPU's utilization evenly
// among its processes.
TEST_F(DmonPmonCli, PmonRowsOfASimulatedScenario) {
  auto r = golden({"pmon", "-s", "um", "-c", "2", "-i", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;  // the header once, 2 sets x 2 processes
  EXPECT_EQ(lines[0], "# gpu         pid   type     sm    mem    enc    dec    jpg    ofa     fb   ccpm    command ");
  // A 550 driver has nvmlDeviceGetProcessesUtilizationInfo: jpg and ofa are read (the simulator's are 0);
  // and nvmlDeviceGetRunningProcessDetailList: ccpm is read (0, confidential compute off).
  const std::regex first(R"(    0 +(\d+)     C +(\d+) +(\d+)      0      0      0      0 +(\d+)      0    (.{15}))");
  auto util = golden({"query", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i", "0"});
  const int gpu_util = std::stoi(util.out);
  int sm_sum = 0;
  std::map<std::string, std::pair<std::string, std::string>> by_pid;  // pid -> (fb, command)
  for (int i : {2, 3}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, first)) << lines[i];
    sm_sum += std::stoi(m[2]);
    by_pid[m[1]] = {m[4], m[5]};
  }
  EXPECT_NEAR(sm_sum, gpu_util, 2) << "the processes' shares add up to the GPU's utilization";
  ASSERT_EQ(by_pid.count("1000"), 1u);
  ASSERT_EQ(by_pid.count("1001"), 1u);
  EXPECT_EQ(by_pid["1000"], std::make_pair(std::string("49152"), std::string("python train.py")));
  EXPECT_EQ(by_pid["1001"], std::make_pair(std::string("4416"), std::string("python eval.py ")));
  // The clock is frozen: no utilization sample is newer than the first set's, so the second shows '-'.
  for (int i : {4, 5}) {
    EXPECT_TRUE(std::regex_match(lines[i], std::regex(R"(    0 +100[01]     C( {6}-){6} +\d+      0    python.*)")))
        << lines[i];
  }
}

// driver_r535.yaml's driver lacks nvmlDeviceGetProcessesUtilizationInfo: pmon falls back to
// nvmlDeviceGetProcessUtilization, which has no jpg or ofa.
TEST_F(DmonPmonCli, PmonOnAnOlderDriverHasNoJpgOrOfa) {
  auto r = testing::run_simulated(std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/driver_r535.yaml",
                                  {"pmon", "-c", "1", "-i", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_TRUE(std::regex_match(lines[2], std::regex(R"(    0 +\d+     C +\d+ +\d+      0      0      -      -    python.*)")))
      << lines[2];
}

// Driver 535 predates nvmlDeviceGetRunningProcessDetailList: ccpm is '-', fb still read.
TEST_F(DmonPmonCli, PmonCcpmNeedsTheProcessDetailList) {
  auto r = testing::run_simulated(std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/driver_r535.yaml",
                                  {"pmon", "-s", "m", "-c", "1", "-i", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_TRUE(std::regex_match(lines[2], std::regex(R"(    0 +\d+     C +[1-9]\d*      -    python.*)"))) << lines[2];
}

TEST_F(DmonPmonCli, PmonWithDateAndTime) {
  auto r = golden({"pmon", "-c", "1", "-o", "DT", "-i", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_THAT(lines[0], StartsWith("#Date       Time        gpu         pid   type     sm"));
  EXPECT_THAT(lines[1], StartsWith("#YYYYMMDD   HH:MM:SS    Idx           #    C/G      %"));
  EXPECT_TRUE(std::regex_match(lines[2], std::regex(R"( \d{8}   \d\d:\d\d:\d\d      2 +1000 +C.*)"))) << lines[2];
}

TEST_F(DmonPmonCli, BadPmonFlagsNameThemselves) {
  expect_one_line_usage_error(golden({"pmon", "-d", "11"}), "'11' for -d");
  expect_one_line_usage_error(golden({"pmon", "-d", "0"}), "'0' for -d");
  expect_one_line_usage_error(golden({"pmon", "-s", "uc"}), "'c' in -s 'uc'");
  expect_one_line_usage_error(golden({"pmon", "-o", "DTX"}), "'DTX' for -o");
  expect_one_line_usage_error(golden({"pmon", "-c", "0"}), "'0' for -c");
  expect_one_line_usage_error(golden({"pmon", "--format", "csv"}), "--format");
}

}  // namespace
}  // namespace gpuscope::cli
