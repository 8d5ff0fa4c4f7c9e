// Every one of nvidia-smi 580's 188 --query-gpu names against what the real nvidia-smi printed on an idle
// H100 (../shared/reference/real-h100/nvidia-smi/query_gpu_all.tsv): gpuscope on the simulated idle H100
// must print the same CSV header, and the same value where the fact is static and the simulated H100
// has it too, else a value of the same shape (digits where digits, the same units, the same hex width).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "nvml/nvml_abi.h"

namespace gpuscope {
namespace {

struct QanRealLine {
  std::string name;
  int code = -1;
  std::string header;
  std::string value;          // --format=csv
  std::string value_nounits;  // --format=csv,noheader,nounits
};

std::vector<QanRealLine> qan_real_lines() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi/query_gpu_all.tsv");
  std::vector<QanRealLine> lines;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::size_t start = 0;
    while (true) {
      const auto tab = line.find('\t', start);
      f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (f.size() != 5) {
      ADD_FAILURE() << "malformed reference line: " << line;
      continue;
    }
    lines.push_back({f[0], std::atoi(f[1].c_str()), f[2], f[3], f[4]});
  }
  return lines;
}

// Readings of this node and this moment, and identities of this board: they differ from the real run's
// by nature (a different GPU, a different second), so only their shape is compared.
const std::set<std::string> kQanDynamic = {
    "timestamp", "count", "serial", "uuid", "pci.bus_id", "pci.bus", "pci.device",
    // An idle link trains down to gen 1 (the VM's virtual link stayed at 5).
    "pcie.link.gen.current", "pcie.link.gen.gpucurrent", "pstate", "memory.used", "memory.free",
    "utilization.gpu", "utilization.memory", "utilization.encoder", "utilization.decoder", "utilization.jpeg",
    "utilization.ofa", "temperature.gpu", "temperature.gpu.tlimit", "temperature.memory", "power.draw",
    "power.draw.average", "power.draw.instant", "clocks.current.graphics", "clocks.current.sm",
    "clocks.current.memory", "clocks.current.video", "clocks_event_reasons.active",
    "clocks_event_reasons_counters.sw_power_cap", "clocks_event_reasons_counters.sync_boost",
    "clocks_event_reasons_counters.sw_thermal_slowdown", "clocks_event_reasons_counters.hw_thermal_slowdown",
    "clocks_event_reasons_counters.hw_power_brake_slowdown", "platform.slot_number", "platform.tray_index",
    "platform.host_id", "platform.module_id", "platform.gpu_fabric_guid"};

// Dynamic words: any of nvidia-smi's words for the name. The simulated node is an 8-GPU HGX board with
// an NVLink fabric; the real one a single H100 in a VM, without.
const std::map<std::string, std::vector<std::string>> kQanWords = {
    {"clocks_event_reasons.gpu_idle", {"Active", "Not Active"}},
    {"clocks_event_reasons.applications_clocks_setting", {"Active", "Not Active"}},
    {"clocks_event_reasons.sw_power_cap", {"Active", "Not Active"}},
    {"clocks_event_reasons.hw_slowdown", {"Active", "Not Active"}},
    {"clocks_event_reasons.hw_thermal_slowdown", {"Active", "Not Active"}},
    {"clocks_event_reasons.hw_power_brake_slowdown", {"Active", "Not Active"}},
    {"clocks_event_reasons.sw_thermal_slowdown", {"Active", "Not Active"}},
    {"clocks_event_reasons.sync_boost", {"Active", "Not Active"}},
    {"fabric.state", {"N/A", "Not Started", "In Progress", "Completed"}},
    {"fabric.status", {"N/A", "Success"}},
    {"fabric.health.summary", {"N/A", "Healthy", "Unhealthy", "Limited Capacity"}},
};

// A regex for values shaped like `real`: each run of digits any number, except the digits after a
// decimal point (same count: 71.15 -> two decimals) and hex after 0x or in a UUID (same width).
std::string qan_shape(const std::string& real) {
  std::string re;
  const bool uuid = real.starts_with("GPU-");
  std::size_t i = 0;
  auto is_hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  auto is_digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < real.size()) {
    const char c = real[i];
    if (uuid && i >= 4 && is_hex(c)) {
      std::size_t j = i;
      while (j < real.size() && is_hex(real[j])) ++j;
      re += "[0-9a-f]{" + std::to_string(j - i) + "}";
      i = j;
    } else if (c == '0' && i + 1 < real.size() && real[i + 1] == 'x') {
      std::size_t j = i + 2;
      while (j < real.size() && is_hex(real[j])) ++j;
      re += "0x[0-9A-F]{" + std::to_string(j - i - 2) + "}";
      i = j;
    } else if (is_digit(c)) {
      std::size_t j = i;
      while (j < real.size() && is_digit(real[j])) ++j;
      re += (i > 0 && real[i - 1] == '.') ? "[0-9]{" + std::to_string(j - i) + "}" : std::string("-?[0-9]+");
      i = j;
    } else {
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) re += '\\';
      re += c;
      ++i;
    }
  }
  return re;
}

// Splits a CSV line of nvidia-smi's (", " between cells; an empty cell stays).
std::vector<std::string> qan_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  while (true) {
    const auto sep = line.find(", ", start);
    cells.push_back(line.substr(start, sep == std::string::npos ? std::string::npos : sep - start));
    if (sep == std::string::npos) break;
    start = sep + 2;
  }
  return cells;
}

class QueryAllNames : public ::testing::Test {
 protected:
  void SetUp() override { setenv("GPUSCOPE_SIM_TIME", "600", 1); }
  void TearDown() override { unsetenv("GPUSCOPE_SIM_TIME"); }
  static std::string scenario() { return std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/idle.yaml"; }
};

TEST(QueryAllNamesShape, ShapeRegexKeepsDigitsUnitsAndHexWidths) {
  EXPECT_TRUE(std::regex_match("131.18 W", std::regex(qan_shape("71.15 W"))));
  EXPECT_FALSE(std::regex_match("131.2 W", std::regex(qan_shape("71.15 W"))));
  EXPECT_FALSE(std::regex_match("131.18", std::regex(qan_shape("71.15 W"))));
  EXPECT_TRUE(std::regex_match("0x1A", std::regex(qan_shape("0x00"))));
  EXPECT_FALSE(std::regex_match("0x001A", std::regex(qan_shape("0x00"))));
  EXPECT_FALSE(std::regex_match("0x1a", std::regex(qan_shape("0x00"))));
  EXPECT_TRUE(std::regex_match("2026/01/01 00:10:00.000", std::regex(qan_shape("2026/11/25 11:26:36.761"))));
  EXPECT_TRUE(std::regex_match("GPU-330c11dc-b872-cfe1-9fb2-b35f951e4d9b",
                               std::regex(qan_shape("GPU-a0c7b2ae-e42f-84f3-6849-5d59b18ace8a"))));
  EXPECT_TRUE(std::regex_match("P8", std::regex(qan_shape("P0"))));
  EXPECT_FALSE(std::regex_match("[N/A]", std::regex(qan_shape("P0"))));
}

TEST_F(QueryAllNames, AllNamesAtOnceMatchNvidiaSmisValues) {
  const auto real = qan_real_lines();
  ASSERT_EQ(real.size(), 188u);
  std::string names;
  for (const auto& line : real) names += (names.empty() ? "" : ",") + line.name;

  // nvidia-smi accepted each name (exit 0); each parsing alone is export_test's SmiDetailColumns test.
  for (const auto& line : real) EXPECT_EQ(line.code, 0) << line.name;
  auto with_units = testing::run_simulated(scenario(), {"query", "-i", "0", "--query-gpu=" + names});
  ASSERT_EQ(with_units.code, 0) << with_units.err;
  auto bare = testing::run_simulated(scenario(), {"query", "-i", "0", "--query-gpu=" + names, "--format=csv,noheader,nounits"});
  ASSERT_EQ(bare.code, 0) << bare.err;
  const auto lines = testing::output_lines(with_units.out);
  ASSERT_EQ(lines.size(), 2u);
  const auto headers = qan_cells(lines[0]);
  const auto values = qan_cells(lines[1]);
  const auto bare_lines = testing::output_lines(bare.out);
  ASSERT_EQ(bare_lines.size(), 1u);
  const auto bare_values = qan_cells(bare_lines[0]);
  ASSERT_EQ(headers.size(), real.size());
  ASSERT_EQ(values.size(), real.size());
  ASSERT_EQ(bare_values.size(), real.size());

  for (std::size_t k = 0; k < real.size(); ++k) {
    const auto& want = real[k];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(headers[k], want.header);
    if (auto words = kQanWords.find(want.name); words != kQanWords.end()) {
      EXPECT_THAT(words->second, ::testing::Contains(values[k]));
      EXPECT_THAT(words->second, ::testing::Contains(bare_values[k]));
      EXPECT_EQ(values[k], bare_values[k]);
    } else if (kQanDynamic.contains(want.name)) {
      EXPECT_TRUE(std::regex_match(values[k], std::regex(qan_shape(want.value))))
          << "'" << values[k] << "' is not shaped like nvidia-smi's '" << want.value << "'";
      EXPECT_TRUE(std::regex_match(bare_values[k], std::regex(qan_shape(want.value_nounits))))
          << "'" << bare_values[k] << "' is not shaped like nvidia-smi's '" << want.value_nounits << "'";
    } else {
      EXPECT_EQ(values[k], want.value);
      EXPECT_EQ(bare_values[k], want.value_nounits);
    }
  }
}

TEST_F(QueryAllNames, AllNamesAsJsonLeaveOnlyTheDeprecatedDisplayModeUnanswered) {
  std::string names;
  for (const auto& line : qan_real_lines()) names += (names.empty() ? "" : ",") + line.name;
  auto r = testing::run_simulated(scenario(), {"query", "-i", "0", "--query-gpu=" + names, "--format=json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["errors"], nlohmann::json({{"display_mode", "Requested functionality has been deprecated"}}));
  EXPECT_EQ(gpu["pci.device_id"], "0x233010DE");
  EXPECT_EQ(gpu["power.max_limit_watts"], 700);
  EXPECT_EQ(gpu["remapped_rows.histogram.max"], 2560);
  EXPECT_EQ(gpu["compute_mode"], "Default");
  EXPECT_FALSE(gpu.contains("hostname"));  // not supported: absent
}

// query reads NvmlBackend::details only for a detail column, once per GPU per reading.
TEST_F(QueryAllNames, DetailsAreReadOnlyWhenAColumnNeedsThem) {
  // Keeps the simulator loaded between runs, so its call counts carry on.
  void* sim = dlopen(GPUSCOPE_SIM_LIB, RTLD_NOW);
  ASSERT_NE(sim, nullptr) << dlerror();
  auto* count_of = reinterpret_cast<decltype(&::gpuscopeSimGetCallCount)>(dlsym(sim, "gpuscopeSimGetCallCount"));
  ASSERT_NE(count_of, nullptr);
  const auto inforom_calls = [&] {
    unsigned long long n = 0;
    EXPECT_EQ(count_of("nvmlDeviceGetInforomImageVersion", &n), NVML_SUCCESS);
    return n;
  };
  const auto before = inforom_calls();
  auto plain = testing::run_simulated(scenario(), {"query", "-i", "0,1", "--query-gpu=index,power.draw,retired_pages.sbe"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(inforom_calls(), before);
  auto detailed = testing::run_simulated(scenario(), {"query", "-i", "0,1,2", "--query-gpu=index,inforom.img,pci.domain,inforom.oem"});
  ASSERT_EQ(detailed.code, 0) << detailed.err;
  EXPECT_EQ(inforom_calls(), before + 3);
  dlclose(sim);
}

TEST_F(QueryAllNames, NamesNvidiaSmiRejectsExitTwoNamingTheField) {
  for (const char* rejected : {"pcie.replay_counter", "temperature.gpu.tlimit.shutdown", "display_attached.bogus"}) {
    auto r = testing::run_simulated(scenario(), {"query", "--query-gpu=index," + std::string(rejected)});
    EXPECT_EQ(r.code, 2) << rejected;
    EXPECT_THAT(r.err, ::testing::HasSubstr(std::string("'") + rejected + "'"));
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(QueryAllNames, ALostGpuPrintsNvmlsErrorInDetailColumns) {
  // scenarios/gpu_lost.yaml: GPU 1 answers NVML_ERROR_GPU_IS_LOST from 1m to 2m.
  setenv("GPUSCOPE_SIM_TIME", "90", 1);
  const std::string lost = std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/gpu_lost.yaml";
  auto r = testing::run_simulated(lost, {"query", "--query-gpu=index,pci.domain,inforom.img,power.max_limit,fabric.state",
                                         "--format=csv,noheader"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = testing::output_lines(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_THAT(lines[0], ::testing::StartsWith("0, 0x0000, "));
  EXPECT_EQ(lines[1], "1, [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost]");
  auto json = testing::run_simulated(lost, {"query", "--query-gpu=index,pci.domain,hostname", "--format=json", "-i", "1"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_THAT(json.out, ::testing::HasSubstr(R"("errors":{"pci.domain":"GPU is lost","hostname":"GPU is lost"})"));
}

}  // namespace
}  // namespace gpuscope
