// `gpuscope query --query-retired-pages`: nvidia-smi 580's eight names (its own list, read from the
// reference), one row per retired page of the GPUs that retire pages (the scenario's V100), none for the
// H100 (row remapping instead: NOT_SUPPORTED, as the real H100 answered nvmlDeviceGetRetiredPages).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace gpuscope {
namespace {

using ::testing::HasSubstr;
using testing::run_simulated;

std::vector<std::string> qrp_reference_names() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) +
                   "/../shared/reference/real-h100/nvidia-smi/query-retired-pages-fields.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

std::string qrp_join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i > 0 ? sep : "") + v[i];
  return out;
}

std::string fmt_hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::vector<std::string> qrp_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(", ", start);
    cells.push_back(line.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  return cells;
}

// scenarios/ecc.yaml: GPU 0 an H100 (single-bit errors at 1m and 2m, a double-bit one at 3m), GPU 1 a
// V100 whose double-bit error at 2m retires one page.
class QueryRetiredPages : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }
  testing::CliResult at(const char* t, std::vector<std::string> args) const {
    setenv("GPUSCOPE_SIM_TIME", t, 1);
    return run_simulated(scenario_, std::move(args));
  }
  const std::string scenario_ = std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/ecc.yaml";
};

TEST_F(QueryRetiredPages, EveryNameNvidiaSmiListsIsItsOwnHeaderAndNoRowBeforeAnyRetirement) {
  const auto names = qrp_reference_names();
  ASSERT_EQ(names.size(), 8u) << "the nvidia-smi reference is missing";
  const auto r = at("60", {"query", "--query-retired-pages=" + qrp_join(names, ","), "--format=csv"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, qrp_join(names, ", ") + "\n");
  EXPECT_EQ(r.err, "");  // the H100's NOT_SUPPORTED is no failure
}

TEST_F(QueryRetiredPages, TheV100sDoubleBitErrorRetiresOnePageAtTheEventsTime) {
  const auto r = at("150", {"query", "--query-retired-pages=gpu_uuid,retired_pages.address,retired_pages.timestamp,"
                                     "retired_pages.cause", "--format=csv,noheader"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const auto cells = qrp_cells(lines[0]);
  ASSERT_EQ(cells.size(), 4u) << lines[0];
  // Which GPU, and how many pages NVML's counter says it retired, through --query-gpu.
  const auto v100 = at("150", {"query", "--query-gpu=uuid,retired_pages.double_bit.count", "-i", "1",
                               "--format=csv,noheader"});
  ASSERT_EQ(v100.code, 0) << v100.err;
  EXPECT_EQ(v100.out, cells[0] + ", 1\n");
  EXPECT_THAT(cells[1], ::testing::MatchesRegex("0x[0-9a-f]{16}"));
  EXPECT_NE(cells[1], "0x0000000000000000");
  // Retired when the event happened (2m): what the reading's own timestamp reads at t = 120 s.
  const auto then = at("120", {"query", "--query-gpu=timestamp", "-i", "1", "--format=csv,noheader"});
  EXPECT_EQ(cells[2] + "\n", then.out);
  EXPECT_EQ(cells[3], "Double Bit ECC");
}

TEST_F(QueryRetiredPages, JsonHasTheAddressAsANumberAndTheH100UnderErrors) {
  const auto csv = at("150", {"query", "--query-retired-pages=retired_pages.address", "--format=csv,noheader"});
  const auto r = at("150", {"query", "--query-retired-pages=gpu_uuid,retired_pages.address,retired_pages.cause",
                            "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["retired_pages"].size(), 1u) << r.out;
  const auto& page = doc["retired_pages"][0];
  EXPECT_EQ(fmt_hex(page["retired_pages.address"].get<std::uint64_t>()) + "\n", csv.out);
  EXPECT_EQ(page["retired_pages.cause"], "Double Bit ECC");
  ASSERT_EQ(doc["errors"].size(), 1u) << r.out;
  EXPECT_EQ(doc["errors"][0]["gpu_index"], 0);
  EXPECT_EQ(doc["errors"][0]["error"], "Not Supported");
}

TEST_F(QueryRetiredPages, OtherNamesAndCombinationsAreOneLineUsageErrors) {
  const auto other = at("60", {"query", "--query-retired-pages=gpu_uuid,retired_pages.single_bit_ecc.count"});
  EXPECT_EQ(other.code, 2);
  EXPECT_EQ(other.err.find("unknown field 'retired_pages.single_bit_ecc.count' in --query-retired-pages"), 10u)
      << other.err;
  EXPECT_EQ(std::count(other.err.begin(), other.err.end(), '\n'), 1) << other.err;
  const auto both = at("60", {"query", "--query-remapped-rows=gpu_uuid", "--query-retired-pages=gpu_uuid"});
  EXPECT_EQ(both.code, 2);
  EXPECT_THAT(both.err, HasSubstr("cannot be combined"));
}

}  // namespace
}  // namespace gpuscope
