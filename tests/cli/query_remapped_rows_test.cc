// `gpuscope query --query-remapped-rows`: nvidia-smi 580's 16 names (its own list, read from the reference),
// one row per GPU, the values --query-gpu prints for the same fields, and nothing else accepted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "cli_runner.h"

namespace gpuscope {
namespace {

using ::testing::HasSubstr;
using testing::run_simulated;

std::vector<std::string> qrr_reference_names() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) +
                   "/../shared/reference/real-h100/nvidia-smi/query-remapped-rows-fields.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

std::string qrr_join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i > 0 ? sep : "") + v[i];
  return out;
}

class QueryRemappedRows : public ::testing::Test {
 protected:
  // After the scenario's correctable remap (1m), uncorrectable one with a pending remap (2m) and failure (4m).
  void SetUp() override { setenv("GPUSCOPE_SIM_TIME", "300", 1); }
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }
  const std::string scenario_ = std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/row_remap.yaml";
};

TEST_F(QueryRemappedRows, EveryNameNvidiaSmiListsIsItsOwnHeaderAndOneRowPerGpu) {
  const auto names = qrr_reference_names();
  ASSERT_EQ(names.size(), 16u) << "the nvidia-smi reference is missing";
  const auto r = run_simulated(scenario_, {"query", "--query-remapped-rows=" + qrr_join(names, ","), "--format=csv"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;  // the header and the scenario's one GPU
  EXPECT_EQ(lines[0], qrr_join(names, ", "));
}

TEST_F(QueryRemappedRows, ValuesAreWhatQueryGpuPrintsForTheSameFields) {
  const std::string remap =
      "remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure,"
      "remapped_rows.histogram.max,remapped_rows.histogram.none";
  const auto rows = run_simulated(scenario_, {"query", "--query-remapped-rows=gpu_bus_id," + remap,
                                              "--format=csv,noheader"});
  const auto gpu = run_simulated(scenario_, {"query", "--query-gpu=pci.bus_id," + remap, "--format=csv,noheader"});
  ASSERT_EQ(rows.code, 0) << rows.err;
  ASSERT_EQ(gpu.code, 0) << gpu.err;
  EXPECT_EQ(rows.out, gpu.out);
  // The scenario's remaps by 5m: one correctable, one uncorrectable, pending, failed.
  EXPECT_THAT(rows.out, HasSubstr(", 1, 1, Yes, Yes, ")) << rows.out;
}

TEST_F(QueryRemappedRows, OtherNamesAndCombinationsAreUsageErrors) {
  const auto other = run_simulated(scenario_, {"query", "--query-remapped-rows=gpu_uuid,temperature.gpu"});
  EXPECT_EQ(other.code, 2);
  EXPECT_THAT(other.err, HasSubstr("unknown field 'temperature.gpu' in --query-remapped-rows"));
  const auto both = run_simulated(scenario_, {"query", "--query-gpu=index", "--query-remapped-rows=gpu_uuid"});
  EXPECT_EQ(both.code, 2);
  EXPECT_THAT(both.err, HasSubstr("--query-gpu and --query-remapped-rows cannot be combined"));
}

}  // namespace
}  // namespace gpuscope
