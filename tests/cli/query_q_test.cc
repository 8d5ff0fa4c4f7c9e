// `gpuscope query -q` end to end against the simulated 8 x H100 node, and its argument rules.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/query_verb.h"
#include "cli_runner.h"

namespace gpuscope::cli {
namespace {

using ::testing::HasSubstr;

class QueryQ : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    setenv("GPUSCOPE_SIM_TIME", "600", 1);
  }
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }

  static testing::CliResult sim(std::vector<std::string> args) { return testing::run_simulated("", std::move(args)); }
};

std::vector<std::string> qq_gpu_headers(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) {
    if (l.starts_with("GPU ")) out.push_back(l);
  }
  return out;
}

TEST_F(QueryQ, PrintsTheHeaderAndOneBlockPerGpu) {
  auto r = sim({"query", "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out.starts_with("\n==============NVSMI LOG==============\n\nTimestamp ")) << r.out.substr(0, 200);
  const auto lines = testing::output_lines(r.out);
  EXPECT_THAT(r.out, HasSubstr("\nAttached GPUs                                          : 8\nGPU "));
  // Each block named by the GPU's bus id, as `list` knows it.
  const auto headers = qq_gpu_headers(lines);
  ASSERT_EQ(headers.size(), 8u);
  auto listed = testing::run_simulated("", {"query", "--query-gpu=pci.bus_id", "--format=csv,noheader"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  const auto bus_ids = testing::output_lines(listed.out);
  ASSERT_EQ(bus_ids.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(headers[i], "GPU " + bus_ids[i]);
}

TEST_F(QueryQ, SectionHeadersAreNvidiaSmisInItsOrder) {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi-q.txt");
  std::stringstream ref;
  ref << in.rdbuf();
  auto sections = [](const std::string& text) {
    std::vector<std::string> out;
    bool first_gpu = false;
    for (const auto& l : testing::output_lines(text)) {
      if (l.starts_with("GPU ")) {
        if (first_gpu) break;  // the first GPU's block only
        first_gpu = true;
        continue;
      }
      // "Processes" is a key ("None") on an idle GPU and a section on a busy one: left out.
      if (first_gpu && !l.empty() && l.find(" : ") == std::string::npos && l != "    Processes") out.push_back(l);
    }
    return out;
  };
  auto r = sim({"query", "-q", "-i", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto expected = sections(ref.str());
  ASSERT_GT(expected.size(), 30u);
  EXPECT_EQ(sections(r.out), expected);
}

TEST_F(QueryQ, DashIPicksTheGpusAndAttachedStillCountsAll) {
  auto r = sim({"query", "-q", "-i", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(qq_gpu_headers(testing::output_lines(r.out)).size(), 1u);
  EXPECT_THAT(r.out, HasSubstr("Attached GPUs                                          : 8\n"));
}

TEST_F(QueryQ, JsonIsOneDocumentWithNumbers) {
  auto r = sim({"query", "-q", "--format=json", "-i", "0,2"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = testing::output_lines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  auto doc = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(doc["attached_gpus"], 8);
  ASSERT_EQ(doc["gpus"].size(), 2u);
  const auto& g = doc["gpus"][0];
  EXPECT_EQ(g["index"], 0);
  EXPECT_TRUE(g["fb_memory_usage"]["total_mib"].is_number_integer());
  EXPECT_TRUE(g["clocks"]["sm_clock_mhz"].is_number_integer());
  EXPECT_EQ(doc["gpus"][1]["index"], 2);
}

TEST_F(QueryQ, DashQWithAQueryListIsAUsageError) {
  auto r = sim({"query", "-q", "--query-gpu=index"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("-q and --query-gpu cannot be combined"));
  EXPECT_EQ(r.out, "");
  auto apps = parse_query_args(std::vector<std::string>{"-q", "--query-compute-apps=pid"});
  ASSERT_FALSE(apps.has_value());
  EXPECT_EQ(apps.error().code, 2);
  EXPECT_THAT(apps.error().text, HasSubstr("-q and --query-compute-apps cannot be combined"));
}

TEST_F(QueryQ, DashQTakesTextOrJsonOnly) {
  auto csv = parse_query_args(std::vector<std::string>{"-q", "--format=csv"});
  ASSERT_FALSE(csv.has_value());
  EXPECT_EQ(csv.error().code, 2);
  EXPECT_THAT(csv.error().text, HasSubstr("--format 'csv'"));
  auto text = parse_query_args(std::vector<std::string>{"--query"});
  ASSERT_TRUE(text.has_value());
  EXPECT_TRUE(text->full);
  EXPECT_FALSE(text->json);
}

}  // namespace
}  // namespace gpuscope::cli
