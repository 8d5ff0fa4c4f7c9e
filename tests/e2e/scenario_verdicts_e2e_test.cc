// The diagnosis against every scenario in scenarios/, through `gpuscope backtest` (the agent's reading
// path and store on a virtual clock, the diagnosis every 30 s): the verdict each GPU has at given times
// of the scenario, and the findings beside it. A change to the diagnosis, a threshold or the simulator
// that moves these shows up here. The H100 phase replay is checked phase by phase against the verdicts
// the real H100 recording gets (tests/analysis/real_h100_test.cc).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "e2e/command_runner.h"

namespace gpuscope::e2e {
namespace {

using nlohmann::json;

const std::string kVerdictsExe = GPUSCOPE_EXE;

struct VerdictAt {
  std::string gpu;  // "*": every GPU of the scenario
  double minute;
  std::string verdict;
  std::string detail = "";
  std::vector<std::string> findings = {};    // among the findings of the change in effect
  std::vector<std::string> no_findings = {};  // not among them
};

struct VerdictCase {
  std::string scenario;
  std::string duration;
  std::vector<VerdictAt> expect;
};

std::ostream& operator<<(std::ostream& os, const VerdictCase& c) { return os << c.scenario; }

std::vector<VerdictCase> verdict_cases() {
  return {
      {"idle.yaml", "10m", {{"*", 5, "idle"}}},
      {"stalled.yaml", "10m", {{"*", 1.5, "compute_bound"}, {"*", 5, "idle"}}},
      {"data_starved.yaml", "10m", {{"*", 5, "input_starved", "data loading over PCIe"}}},
      {"cpu_starved.yaml", "10m", {{"*", 5, "input_starved", "CPU side"}}},
      {"transfer_bound.yaml", "10m", {{"*", 5, "transfer_bound", "host→device", {"utilization_lies"}}}},
      {"memory_bound.yaml", "10m", {{"*", 5, "memory_bound"}}},
      {"no_tensor.yaml", "10m", {{"*", 5, "no_tensor_cores"}}},
      {"small_kernels.yaml", "10m", {{"*", 5, "launch_bound"}}},
      {"memory_leak.yaml", "10m", {{"*", 5, "compute_bound"}}},
      {"nvml_errors.yaml", "10m", {{"*", 5, "compute_bound"}}},
      {"slow_calls.yaml", "10m", {{"*", 5, "compute_bound"}}},
      // GPU 0 is in MIG mode until 20m (its instances' verdicts belong to the MIG reader's tests), then
      // trains whole; GPU 1 trains whole throughout.
      {"mig.yaml", "30m", {{"1", 5, "compute_bound"}, {"0", 25, "compute_bound"}}},
      // r535 has no GPM: only utilization speaks.
      {"driver_r535.yaml", "10m", {{"*", 5, "unknown"}}},
      // GPU 1 is a V100 (no GPM: unknown until its fault); the row-remap node is an A100.
      {"ecc.yaml", "10m", {{"0", 1.5, "compute_bound"}, {"1", 1.5, "unknown"}, {"1", 5, "unhealthy"}, {"0", 5, "unhealthy"}}},
      {"row_remap.yaml", "10m", {{"0", 1.5, "unknown"}, {"0", 5, "unhealthy"}}},
      {"xid.yaml", "10m", {{"1", 2, "compute_bound"}, {"1", 5, "unhealthy"}, {"0", 5, "compute_bound"}}},
      {"gpu_lost.yaml", "10m", {{"1", 0.75, "compute_bound"}, {"1", 5, "unhealthy"}, {"0", 5, "compute_bound"}}},
      {"power_cap.yaml",
       "10m",
       {{"0", 8, "compute_bound", "", {"power_capped"}},
        {"1", 4, "compute_bound", "", {"power_capped"}},
        {"1", 8, "compute_bound", "", {}, {"power_capped"}}}},
      {"thermal_runaway.yaml",
       "30m",
       {{"1", 29.5, "compute_bound", "", {"thermal_slowdown"}}, {"0", 29.5, "compute_bound", "", {}, {"thermal_slowdown"}}}},
      {"straggler.yaml",
       "10m",
       {{"3", 8, "compute_bound", "", {"imbalance_clock", "hardware_slowdown"}, {"thermal_slowdown"}},
        {"0", 8, "compute_bound", "", {}, {"imbalance_clock", "hardware_slowdown"}}}},
      // The health gate's node (gpuscope check, select): GPU 1's double-bit ECC error is unhealthy from the
      // start; the A100 (GPU 2, no GPM) reads unknown; the narrow link (GPU 3) costs nothing while it computes.
      {"unhealthy_node.yaml", "10m",
       {{"0", 5, "compute_bound"}, {"1", 5, "unhealthy"}, {"2", 5, "unknown"}, {"3", 5, "compute_bound"},
        {"4", 5, "idle"}, {"5", 5, "idle"}}},
      // mlx5_6 fails from 8m; GPU 6 waits at the collectives from then on (launch bound by its shape), and the
      // port behind its switch counting errors makes that the network's doing; GPU 7 behind the same switch
      // computes; GPU 0's rails are clean.
      {"fabric_degrading.yaml", "20m",
       {{"6", 5, "compute_bound"}, {"6", 12, "network_bound", "mlx5_6/1", {"imbalance_busy"}}, {"6", 19, "network_bound"},
        {"7", 12, "compute_bound"}, {"0", 12, "compute_bound"}}},
      {"mixed_a100.yaml", "10m", {{"0", 5, "compute_bound"}, {"4", 5, "unknown"}, {"6", 5, "unknown"}}},
      {"inference_bursty.yaml", "20m", {{"1", 15, "input_starved", "CPU side"}}},
      {"golden.yaml",
       "15m",
       {{"1", 5, "idle"}, {"1", 12, "compute_bound"}, {"2", 12, "input_starved", "data loading over PCIe"},
        {"0", 12, "compute_bound"},
        // The A100 has no GPM: its memory utilization alone says memory bound.
        {"3", 12, "memory_bound"}}},
      {"demo.yaml",
       "36m",
       {{"0", 35, "compute_bound"},
        {"2", 8, "input_starved", "data loading over PCIe"},
        {"1", 28, "compute_bound"},
        {"1", 35, "unhealthy"},
        {"5", 20, "compute_bound", "", {"imbalance_clock"}},
        {"6", 35, "compute_bound", "", {"thermal_slowdown"}}}},
  };
}

// The diagnosis of `gpu` at `minute` into the scenario, through `gpuscope diagnose --simulate`: what
// the agent would answer then, findings included (the backtest's changes carry the findings of the
// moment the verdict changed).
json diagnosis_at(const std::string& scenario_file, const std::string& gpu, double minute) {
  auto r = run_command({kVerdictsExe, "diagnose", "--simulate=" + scenario(scenario_file), "--at",
                        std::to_string(static_cast<int>(minute * 60)) + "s", "-i", gpu, "--format", "json"},
                       {}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return json::object();
  const json d = json::parse(r.out);
  EXPECT_EQ(d["gpus"].size(), 1U) << r.out;
  return d["gpus"].empty() ? json::object() : d["gpus"][0];
}

// The change in effect for `gpu` at `minute`: the last one at or before it.
const json* in_effect(const json& verdicts, const std::string& gpu, double minute) {
  const json* found = nullptr;
  for (const json& v : verdicts) {
    if (v["gpu"] == gpu && v["offset_seconds"].get<double>() <= minute * 60 + 1e-6) found = &v;
  }
  return found;
}

class ScenarioVerdicts : public ::testing::TestWithParam<VerdictCase> {};

TEST_P(ScenarioVerdicts, EachGpuHasTheVerdictItShouldAtEachTime) {
  const VerdictCase& c = GetParam();
  auto r = run_command({kVerdictsExe, "backtest", "--scenario", scenario(c.scenario), "--duration", c.duration,
                        "--format", "json"},
                       {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  std::set<std::string> indexes;
  for (const json& v : report["verdicts"]) indexes.insert(v["gpu"].get<std::string>());
  ASSERT_FALSE(indexes.empty()) << "no verdicts in the backtest";
  for (const VerdictAt& x : c.expect) {
    const std::vector<std::string> which =
        x.gpu == "*" ? std::vector<std::string>(indexes.begin(), indexes.end()) : std::vector<std::string>{x.gpu};
    for (const std::string& gpu : which) {
      const json* v = in_effect(report["verdicts"], gpu, x.minute);
      if (v == nullptr) {
        ADD_FAILURE() << "GPU " << gpu << " has no verdict by minute " << x.minute;
        continue;
      }
      EXPECT_EQ((*v)["verdict"], x.verdict) << "GPU " << gpu << " at " << x.minute << "m: " << (*v)["summary"];
      if (!x.detail.empty()) {
        EXPECT_EQ(v->value("detail", ""), x.detail) << "GPU " << gpu << " at " << x.minute << "m";
      }
      if (x.findings.empty() && x.no_findings.empty()) continue;
      const json now = diagnosis_at(c.scenario, gpu, x.minute);
      EXPECT_EQ(now.value("verdict", ""), x.verdict) << "diagnose: GPU " << gpu << " at " << x.minute << "m";
      std::vector<std::string> findings;
      for (const json& f : now.value("findings", json::array())) findings.push_back(f["id"]);
      for (const auto& f : x.findings) {
        EXPECT_NE(std::find(findings.begin(), findings.end(), f), findings.end())
            << f << " on GPU " << gpu << " at " << x.minute << "m: " << now.dump();
      }
      for (const auto& f : x.no_findings) {
        EXPECT_EQ(std::find(findings.begin(), findings.end(), f), findings.end())
            << f << " on GPU " << gpu << " at " << x.minute << "m";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioVerdicts, ::testing::ValuesIn(verdict_cases()),
                         [](const auto& info) {
                           std::string name = info.param.scenario.substr(0, info.param.scenario.find('.'));
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

TEST(ScenarioVerdicts, EveryScenarioHasACase) {
  std::set<std::string> covered;
  for (const VerdictCase& c : verdict_cases()) covered.insert(c.scenario);
  covered.insert("driver_not_loaded.yaml");  // no driver: nothing to diagnose (the backtest refuses it)
  covered.insert("h100_phases.yaml");        // phase by phase below
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GPUSCOPE_SOURCE_DIR) / "scenarios")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".yaml") {
      EXPECT_TRUE(covered.contains(name)) << name << " has no verdict case";
    }
  }
}

// The simulated replay of the real H100's phases gets, phase by phase, the verdicts the recording gets.
TEST(ScenarioVerdicts, H100PhaseReplayMatchesTheRealRecordingsVerdicts) {
  struct PhaseEnd {
    const char* at;  // into the scenario
    const char* verdict;
    const char* detail;
    const char* finding;
  };
  // The replay's phases (scenarios/h100_phases.yaml) end at 18, 38, 58, 78, 98, 118, 138 s.
  const PhaseEnd phases[] = {
      {"17s", "idle", "", ""},
      {"37s", "compute_bound", "", "power_capped"},
      {"57s", "no_tensor_cores", "", "thermal_slowdown"},
      {"77s", "memory_bound", "", ""},
      {"97s", "launch_bound", "", ""},
      {"117s", "transfer_bound", "host→device", "utilization_lies"},
      {"137s", "input_starved", "CPU side", ""},
      {"160s", "idle", "", ""},
  };
  for (const PhaseEnd& p : phases) {
    auto r = run_command({kVerdictsExe, "diagnose", "--simulate=" + scenario("h100_phases.yaml"), "--at", p.at,
                          "--window", "12s", "--format", "json"},
                         {}, 60);
    ASSERT_EQ(r.exit_code, 0) << p.at << ": " << r.err;
    const json d = json::parse(r.out);
    ASSERT_EQ(d["gpus"].size(), 1U) << r.out;
    const json& g = d["gpus"][0];
    EXPECT_EQ(g["verdict"], p.verdict) << p.at << ": " << g["summary"];
    if (*p.detail) {
      EXPECT_EQ(g.value("detail", ""), p.detail) << p.at;
    }
    if (*p.finding) {
      bool found = false;
      for (const json& f : g["findings"]) found = found || f["id"] == p.finding;
      EXPECT_TRUE(found) << p.finding << " at " << p.at << ": " << g["findings"].dump();
    }
  }
}

}  // namespace
}  // namespace gpuscope::e2e
