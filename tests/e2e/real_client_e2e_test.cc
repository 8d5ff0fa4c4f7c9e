// A real NVML client written by others (the Rust crate nvml-wrapper, built from Debian's packages)
// loads the simulated NVML unchanged and reads the same values `gpuscope query` shows.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <sstream>

#include "e2e/command_runner.h"

namespace gpuscope::e2e {
namespace {

using Record = std::map<std::string, std::string>;

// "gpu\tindex=0\tname=..." lines → (kind, key=value map).
[[maybe_unused]] std::vector<std::pair<std::string, Record>> parse_client(const std::string& text) {
  std::vector<std::pair<std::string, Record>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cols(line);
    std::string kind;
    std::getline(cols, kind, '\t');
    Record r;
    for (std::string kv; std::getline(cols, kv, '\t');) {
      auto eq = kv.find('=');
      if (eq != std::string::npos) r[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    out.emplace_back(kind, r);
  }
  return out;
}

TEST(RealClientE2e, NvmlWrapperReadsWhatGpuscopeShows) {
#ifndef GPUSCOPE_NVML_WRAPPER_CLIENT
  GTEST_SKIP() << "cargo/rustc were not found at configure time (scripts/setup installs them)";
#else
  const std::map<std::string, std::string> env = {{"GPUSCOPE_SIM_TIME", "600"},
                                                  {"GPUSCOPE_SIM_SCENARIO", scenario("golden.yaml")}};
  auto client = run_command({GPUSCOPE_NVML_WRAPPER_CLIENT, GPUSCOPE_SIM_LIB}, env, 60);
  ASSERT_EQ(client.exit_code, 0) << client.err;
  auto ours = run_command({GPUSCOPE_EXE, "--simulate=" + scenario("golden.yaml"), "query",
                           "--query-gpu=index,name,uuid,pci.bus_id,memory.total,memory.free,power.draw,"
                           "temperature.gpu,utilization.gpu,utilization.memory,clocks.sm",
                           "--format=json"},
                          {{"GPUSCOPE_SIM_TIME", "600"}}, 60);
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  auto apps = run_command({GPUSCOPE_EXE, "--simulate=" + scenario("golden.yaml"), "query",
                           "--query-compute-apps=pid,used_memory,gpu_uuid", "--format=json"},
                          {{"GPUSCOPE_SIM_TIME", "600"}}, 60);
  ASSERT_EQ(apps.exit_code, 0) << apps.err;
  const auto gpus = nlohmann::json::parse(ours.out)["gpus"];
  const auto procs = nlohmann::json::parse(apps.out)["processes"];

  std::size_t gpu_rows = 0, process_rows = 0;
  std::map<std::string, std::string> uuid_of_index;
  for (const auto& [kind, r] : parse_client(client.out)) {
    if (kind != "gpu") continue;
    const auto& g = gpus.at(gpu_rows++);
    SCOPED_TRACE(r.at("index"));
    EXPECT_EQ(std::to_string(g["index"].get<int>()), r.at("index"));
    EXPECT_EQ(g["name"], r.at("name"));
    EXPECT_EQ(g["uuid"], r.at("uuid"));
    EXPECT_EQ(g["pci.bus_id"], r.at("bus_id"));
    EXPECT_EQ(std::to_string(g["memory.total_mib"].get<long>()), r.at("memory_total_mib"));
    EXPECT_EQ(std::to_string(g["memory.free_mib"].get<long>()), r.at("memory_free_mib"));
    EXPECT_NEAR(g["power.draw_watts"].get<double>(), std::stod(r.at("power_mw")) / 1000.0, 1e-6);
    EXPECT_EQ(std::to_string(g["temperature.gpu_celsius"].get<int>()), r.at("temperature_c"));
    EXPECT_EQ(std::to_string(g["utilization.gpu_percent"].get<int>()), r.at("util_gpu"));
    EXPECT_EQ(std::to_string(g["utilization.memory_percent"].get<int>()), r.at("util_memory"));
    EXPECT_EQ(std::to_string(g["clocks.current.sm_mhz"].get<int>()), r.at("sm_mhz"));
    uuid_of_index[r.at("index")] = r.at("uuid");
  }
  EXPECT_EQ(gpu_rows, gpus.size());
  for (const auto& [kind, r] : parse_client(client.out)) {
    if (kind != "process") continue;
    const auto& p = procs.at(process_rows++);
    EXPECT_EQ(std::to_string(p["pid"].get<long>()), r.at("pid"));
    EXPECT_EQ(p["gpu_uuid"], uuid_of_index.at(r.at("gpu")));
    EXPECT_EQ(std::to_string(p["used_memory_bytes"].get<long long>() / (1024 * 1024)), r.at("used_mib"));
  }
  EXPECT_EQ(process_rows, procs.size());
  EXPECT_GT(process_rows, 0u);
#endif
}

}  // namespace
}  // namespace gpuscope::e2e
