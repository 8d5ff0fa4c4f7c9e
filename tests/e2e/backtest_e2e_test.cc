// The built-in rule pack against every scenario in scenarios/, through `gpuscope backtest` (the agent's
// reading path, store and rules on a virtual clock): which alerts fire, on which GPU, and roughly when.
// A change to a rule, a threshold or the simulator that moves these shows up here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "e2e/command_runner.h"

namespace gpuscope::e2e {
namespace {

using nlohmann::json;

const std::string kExe = GPUSCOPE_EXE;

struct Expected {
  std::string alert;
  std::string gpu;
  double first_firing_minute;  // within [-1, +3] minutes
};

struct ScenarioCase {
  std::string scenario;
  std::vector<Expected> fires;  // exactly these (alert, gpu) fire within `duration`
  std::string duration = "1h";
};

std::ostream& operator<<(std::ostream& os, const ScenarioCase& c) { return os << c.scenario; }

std::vector<ScenarioCase> cases() {
  auto all_gpus = [](const std::string& alert, int n, double minute) {
    std::vector<Expected> out;
    for (int i = 0; i < n; ++i) out.push_back({alert, std::to_string(i), minute});
    return out;
  };
  auto concat = [](std::vector<Expected> a, const std::vector<Expected>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  return {
      // The software thermal slowdown starts at 79 °C (measured on an H100), so the throttling comes
      // soon after the cooling starts to fail; the hardware slowdown then holds the die at 89 °C.
      {"thermal_runaway.yaml",
       {{"GpuTemperatureHigh", "1", 15}, {"GpuTemperatureCritical", "1", 16}, {"GpuThermalThrottling", "1", 17},
        {"GpuClockStraggler", "1", 31}}},
      {"ecc.yaml",
       {{"GpuEccDoubleBitErrors", "1", 2}, {"GpuEccDoubleBitErrors", "0", 3}, {"GpuXidUncorrectableMemoryError", "0", 3}}},
      {"row_remap.yaml",
       {{"GpuEccDoubleBitErrors", "0", 2}, {"GpuUncorrectableRowRemap", "0", 2}, {"GpuRowRemapFailure", "0", 4}}},
      {"xid.yaml", {{"GpuXidFallenOffBus", "1", 3}}},  // XIDs 13 and 31 are application errors: no alert
      // Lost for one minute: GpuLost goes pending but its `for` (30s, evaluated each minute) never completes.
      {"gpu_lost.yaml", {{"GpuXidFallenOffBus", "1", 2}}},
      {"idle.yaml", all_gpus("GpuIdle", 8, 30)},
      {"stalled.yaml", all_gpus("GpuIdleMemoryHeld", 4, 22)},
      // GpuHostBound: the diagnosis' verdict (starved, transfer or launch bound) held for 30 minutes.
      {"data_starved.yaml", concat(all_gpus("GpuDataStarved", 4, 11), all_gpus("GpuHostBound", 4, 31))},
      // 200 MiB/min from 20 GiB: the 4-hour projection reaches the board's 80 GiB at about 64m, then `for`.
      {"memory_leak.yaml", {{"GpuMemoryLeak", "0", 94}}, "2h"},
      {"no_tensor.yaml", all_gpus("GpuTensorCoresUnused", 2, 20)},
      {"power_cap.yaml", {{"GpuPowerThrottling", "0", 13}}},
      // The straggler's clock is held low while its SM active is higher than its peers'.
      {"straggler.yaml", {{"GpuClockStraggler", "3", 15}}},
      {"mixed_a100.yaml", {{"GpuPcieLinkWidthDegraded", "6", 5}, {"GpuPcieLinkGenDegraded", "6", 10}}},
      {"demo.yaml",
       {{"GpuDataStarved", "2", 11}, {"GpuClockStraggler", "5", 15}, {"GpuStraggler", "2", 16},
        {"GpuThermalThrottling", "6", 22}, {"GpuTemperatureHigh", "6", 23}, {"GpuTemperatureCritical", "6", 25},
        {"GpuEccDoubleBitErrors", "1", 29}, {"GpuXidFallenOffBus", "1", 30}, {"GpuClockStraggler", "6", 39},
        // The leak (150 MiB/min from 5m) needs an hour of growth, then `for: 30m`.
        {"GpuMemoryLeak", "3", 90}, {"GpuMemoryNearlyFull", "3", 92}, {"GpuHostBound", "2", 31}},
       "2h"},
      {"golden.yaml", {{"GpuDataStarved", "2", 11}, {"GpuStraggler", "2", 16}, {"GpuHostBound", "2", 31}}},
      // The sub-second bursts meet the 700 W cap: sw_power_cap is set and the power violation counter
      // runs with the wall clock, as on the real H100, although the mean power is ~286 W.
      // GpuDataStarved needs utilization above 60 %; the CPU-side starvation reads ~20 %, and only the
      // diagnosis' verdict catches it.
      {"cpu_starved.yaml", concat(all_gpus("GpuPowerThrottling", 4, 13), all_gpus("GpuHostBound", 4, 31))},
      // The replay ends at 168 s with the process holding its memory and running nothing.
      {"h100_phases.yaml", {{"GpuIdleMemoryHeld", "0", 23}}},
      {"small_kernels.yaml", all_gpus("GpuHostBound", 2, 31)},
      {"transfer_bound.yaml", all_gpus("GpuHostBound", 2, 31)},
      // Serving at a third of its capacity reads as waiting on the host (for requests); GPU 0's bursts
      // leave one 30 s window empty at 17m (idle), which restarts its `for`. The L4s have no GPM.
      {"inference_bursty.yaml", {{"GpuHostBound", "1", 31}}},
      // Faulty from its first reading: the ECC and remap alerts fire on errors that grow, and these were
      // there before the agent (gpuscope check is what catches them); the narrow link, the idle GPU and
      // the stalled process's GPU alert.
      {"unhealthy_node.yaml",
       {{"GpuPcieLinkWidthDegraded", "3", 5}, {"GpuPcieLinkGenDegraded", "3", 10}, {"GpuIdleMemoryHeld", "5", 10},
        {"GpuIdle", "4", 30}}},
      // mlx5_6 (behind GPUs 6 and 7: its alerts' gpu label) degrades at 8m: it flaps at 15m (and 24m), its
      // error and drop rates hold for `for: 10m`, its 5m transmit rate falls under half the rails' median at
      // ~12m, then `for`. GPU 6 waits at the collectives: the straggler by the work it does. Its verdict is
      // the network's, not waiting on the host, so GpuHostBound stays quiet.
      {"fabric_degrading.yaml",
       {{"FabricLinkFlapped", "6,7", 15}, {"FabricPortErrors", "6,7", 19}, {"FabricPortDrops", "6,7", 19},
        {"FabricNetworkStraggler", "6,7", 22}, {"GpuStraggler", "6", 29}},
       "40m"},
      // Healthy or not an alerting matter: nothing fires.
      {"driver_r535.yaml", {}},
      {"memory_bound.yaml", {}},
      {"nvml_errors.yaml", {}},
      // MIG: nothing fires within the hour. The idle 1g.10gb (#8) and the memory-holding instances live
      // 20 and 10 minutes, less than their idle alerts' `for` (timeline in MigInstancesAreJudgedAlone);
      // instances are no peers of whole GPUs, so no straggler, tensor or data-starved alert either (the
      // pack joined them on UUID alone and fired GpuTensorCoresUnused on the idle #8 at 20m).
      {"mig.yaml", {}},
  };
}

class RulePackBacktest : public ::testing::TestWithParam<ScenarioCase> {};

TEST_P(RulePackBacktest, FiresTheExpectedAlertsOnTheRightGpuAtTheRightTime) {
  const ScenarioCase& c = GetParam();
  auto r = run_command({kExe, "backtest", "--scenario", scenario(c.scenario), "--duration", c.duration, "--format", "json"},
                       {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  std::map<std::pair<std::string, std::string>, double> first_firing;  // minutes
  for (const json& e : report["events"]) {
    if (e["state"] != "firing") continue;
    const json& labels = e["labels"];
    first_firing.emplace(std::make_pair(e["alertname"].get<std::string>(), labels.value("gpu", "-")),
                         e["offset_seconds"].get<double>() / 60);
  }
  std::set<std::pair<std::string, std::string>> expected;
  for (const Expected& x : c.fires) {
    expected.insert({x.alert, x.gpu});
    auto it = first_firing.find({x.alert, x.gpu});
    if (it == first_firing.end()) {
      ADD_FAILURE() << x.alert << " on GPU " << x.gpu << " never fired";
      continue;
    }
    EXPECT_GE(it->second, x.first_firing_minute - 1) << x.alert << " on GPU " << x.gpu;
    EXPECT_LE(it->second, x.first_firing_minute + 3) << x.alert << " on GPU " << x.gpu;
  }
  for (const auto& [key, minute] : first_firing) {
    EXPECT_TRUE(expected.contains(key)) << "unexpected: " << key.first << " on GPU " << key.second << " at " << minute << "m";
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, RulePackBacktest, ::testing::ValuesIn(cases()),
                         [](const auto& info) {
                           std::string name = info.param.scenario.substr(0, info.param.scenario.find('.'));
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

TEST(Backtest, EveryScenarioHasACase) {
  std::set<std::string> covered;
  for (const ScenarioCase& c : cases()) covered.insert(c.scenario);
  // Scenarios the agent cannot run through (no driver) or that only slow the reading down.
  covered.insert("driver_not_loaded.yaml");
  covered.insert("slow_calls.yaml");
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GPUSCOPE_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    EXPECT_TRUE(covered.contains(entry.path().filename().string())) << entry.path() << " has no backtest case";
  }
}

// The scenario's process allocates 20 GiB at 30 s and leaks 200 MiB/min on GPU 0; GPU 1's rank stays
// flat. The job's start is no leak: no event on GPU 1, and the rate in every event on GPU 0 (pending
// included) is the leak's, never the slope of the start (it read 2214 MiB/min, and GPU 1 went pending
// at 5m, when the rule had less than an hour of history).
TEST(Backtest, MemoryLeakIsReportedAtTheScenariosRateAndNotForAJobStart) {
  auto r = run_command({kExe, "backtest", "--scenario", scenario("memory_leak.yaml"), "--duration", "2h", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  int on_gpu0 = 0;
  for (const json& e : report["events"]) {
    if (e["alertname"] != "GpuMemoryLeak") continue;
    EXPECT_EQ(e["labels"]["gpu"], "0") << e.dump();
    if (e["state"] == "inactive" || e["state"] == "resolved") continue;
    ++on_gpu0;
    EXPECT_EQ(e["annotations"]["summary"], "GPU 0 on leak-h100-01 memory grows 200 MiB/min and will run out within 4 hours")
        << "at " << e["offset_seconds"] << " s";
  }
  EXPECT_EQ(on_gpu0, 2);  // pending, then firing
}

// The degrading port's alerts name it and each error kind the scenario makes it count; its 5-second link
// downs never hold for FabricPortDown's 2 minutes; and GPU 6's verdict is the network's from the first
// diagnosis that sees the errors.
TEST(Backtest, ADegradingFabricPortAlertsPerKindAndGivesItsGpuTheNetworkVerdict) {
  auto r = run_command({kExe, "backtest", "--scenario", scenario("fabric_degrading.yaml"), "--duration", "20m",
                        "--format", "json"},
                       {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  std::set<std::string> kinds;
  for (const json& e : report["events"]) {
    const std::string name = e["alertname"];
    if (!name.starts_with("Fabric")) continue;
    EXPECT_EQ(e["labels"]["device"], "mlx5_6") << e.dump();
    EXPECT_EQ(e["labels"]["gpu"], "6,7") << e.dump();
    if (name == "FabricPortErrors" && e["state"] == "firing") kinds.insert(e["labels"]["kind"].get<std::string>());
    EXPECT_FALSE(name == "FabricPortDown" && e["state"] == "firing") << e.dump();
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"link_error_recovery", "symbol"}));
  const json* first_network = nullptr;
  for (const json& v : report["verdicts"]) {
    if (v["verdict"] != "network_bound") continue;
    EXPECT_EQ(v["gpu"], "6") << v.dump();
    if (first_network == nullptr) first_network = &v;
  }
  ASSERT_NE(first_network, nullptr) << report["verdicts"].dump();
  EXPECT_EQ((*first_network)["detail"], "mlx5_6/1");
  // The port starts failing at 8m; the diagnosis runs every 30 s and needs two fabric readings with errors.
  EXPECT_GE((*first_network)["offset_seconds"].get<double>(), 8 * 60);
  EXPECT_LE((*first_network)["offset_seconds"].get<double>(), 9 * 60);
}

// scenarios/mig.yaml, GPU 0 in MIG mode until 20m: 3g.40gb #2 training, 2g.20gb #4 serving bursts (until
// 10m, 12 GiB held), 1g.10gb #7 data-starved (6 GiB), 1g.10gb #8 idle (no process). Each instance is
// judged on its own memory and SM activity and priced at its slices of 7: with the H100 at 7 USD an hour a
// 1g.10gb costs 1 USD. #8 is idle from the first evaluation until MIG goes off at 20m (GpuIdle pending,
// never firing: its `for` is 30m); the GPU itself is never idle (it has no utilization in MIG mode) and no
// busy instance is. #7's diagnosis says input_starved and its GpuHostBound names its own verdict.
TEST(Backtest, MigInstancesAreJudgedAlone) {
  auto r = run_command({kExe, "backtest", "--scenario", scenario("mig.yaml"), "--duration", "1h", "--price-override",
                        "H100.*HBM3=7", "--format", "json"},
                       {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  std::map<std::string, std::vector<std::pair<std::string, double>>> idle;  // GPU_I_ID -> (state, minute)
  bool host_bound_7 = false;
  for (const json& e : report["events"]) {
    const std::string name = e["alertname"];
    const json& labels = e["labels"];
    const std::string instance = labels.value("GPU_I_ID", "");
    const double minute = e["offset_seconds"].get<double>() / 60;
    EXPECT_NE(e["state"], "firing") << e.dump();
    if (!instance.empty()) {
      EXPECT_EQ(labels["gpu"], "0") << e.dump();
      EXPECT_LT(minute, 27) << "an instance outlived MIG mode (off at 20m): " << e.dump();
      // Peer comparisons and utilization-gated rules are for whole GPUs.
      EXPECT_TRUE(name != "GpuStraggler" && name != "GpuDataStarved" && name != "GpuTensorCoresUnused") << e.dump();
    }
    if (name == "GpuIdle") {
      idle[instance].emplace_back(e["state"].get<std::string>(), minute);
      if (e["state"] == "pending") {
        EXPECT_EQ(labels["GPU_I_PROFILE"], "1g.10gb");
        EXPECT_EQ(e["annotations"]["summary"],
                  "GPU 0 MIG instance 8 (1g.10gb) on mig-h100-01 has done no work for over 30 minutes, "
                  "wasting $1.00/hour");
      }
    }
    if (name == "GpuHostBound" && instance == "7" && e["state"] == "pending") {
      host_bound_7 = true;
      EXPECT_EQ(e["annotations"]["summary"],
                "GPU 0 MIG instance 7 (1g.10gb) on mig-h100-01 has waited on the host for 30 minutes: input_starved");
    }
  }
  ASSERT_EQ(idle.size(), 1u) << "GpuIdle on something else than instance 8";
  ASSERT_TRUE(idle.contains("8"));
  const auto& timeline = idle["8"];
  ASSERT_EQ(timeline.size(), 2u);
  EXPECT_EQ(timeline[0].first, "pending");
  EXPECT_LE(timeline[0].second, 2);
  EXPECT_EQ(timeline[1].first, "inactive");
  EXPECT_GE(timeline[1].second, 20);
  EXPECT_LE(timeline[1].second, 26);  // the instance's series end when MIG goes off
  EXPECT_TRUE(host_bound_7);
}

TEST(Backtest, TableOutputAndErrors) {
  auto table = run_command({kExe, "backtest", "--scenario", scenario("xid.yaml"), "--duration", "10m"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("Backtest of "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("+3m        firing    GpuXidFallenOffBus              1    xid-h100-01"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("1 alert fired; 1 still firing at the end; "), std::string::npos) << table.out;

  auto none = run_command({kExe, "backtest", "--duration", "10m"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("backtest needs a scenario"), std::string::npos) << none.err;
  auto bad_duration = run_command({kExe, "backtest", "--scenario", scenario("xid.yaml"), "--duration", "10 minutes"});
  EXPECT_EQ(bad_duration.exit_code, 2);
  EXPECT_NE(bad_duration.err.find("invalid value '10 minutes' for --duration"), std::string::npos) << bad_duration.err;
  auto no_driver = run_command({kExe, "backtest", "--scenario", scenario("driver_not_loaded.yaml"), "--duration", "10m"});
  EXPECT_EQ(no_driver.exit_code, 1);
  EXPECT_NE(no_driver.err.find("Driver Not Loaded"), std::string::npos) << no_driver.err;

  // Own rules instead of the pack.
  const std::string rules = std::string(GPUSCOPE_BINARY_DIR) + "/backtest_rules_test.yml";
  std::ofstream(rules) << "groups:\n  - name: t\n    rules:\n      - alert: AnyXid\n"
                          "        expr: increase(gpuscope_xid_events_total[5m]) > 0\n";
  auto own = run_command({kExe, "backtest", "--scenario", scenario("xid.yaml"), "--duration", "10m", "--rules", rules,
                          "--format", "json"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  const json report = json::parse(own.out);
  EXPECT_EQ(report["rules"], 1);
  std::set<std::string> gpus;
  for (const json& e : report["events"]) {
    if (e["state"] == "firing") gpus.insert(e["labels"]["gpu"].get<std::string>());
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"0", "1"}));
  std::filesystem::remove(rules);
}

}  // namespace
}  // namespace gpuscope::e2e
