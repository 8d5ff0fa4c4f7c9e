// `gpuscope cost` over a recorded MIG history, in-process against the simulator's scenarios/mig.yaml on a
// virtual clock: GPU 0 is split into a 3g.40gb (GI 2), a 2g.20gb (GI 4) and two 1g.10gb (GI 7 training
// data-starved, GI 8 idle) for 10 minutes, the 2g.20gb destroyed at 10m (2 slices unallocated), MIG off at
// 20m; GPU 1 is a whole H100 all along, at the same price. The figures are checked against each other and
// against the scenario's timeline, not against the code's own output.
#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace gpuscope::cli {
namespace {

class MigCostSim : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    unsetenv("GPUSCOPE_SIM_TIME");
  }
  static nlohmann::json mig_cost(std::vector<std::string> more) {
    std::vector<std::string> args = {std::string("--simulate=") + GPUSCOPE_SOURCE_DIR + "/scenarios/mig.yaml",
                                     "--nvml-lib", GPUSCOPE_SIM_LIB, "cost", "--duration", "30m", "--format", "json",
                                     "--price-catalog", std::string(GPUSCOPE_SOURCE_DIR) + "/catalog/gpu_prices.yaml"};
    args.insert(args.end(), more.begin(), more.end());
    const auto r = testing::run_gpuscope(std::move(args));
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  static const nlohmann::json* entry(const nlohmann::json& j, const std::string& list, const std::string& name) {
    for (const auto& x : j[list]) {
      if (x["name"] == name) return &x;
    }
    ADD_FAILURE() << "no " << list << " entry " << name << " in " << j[list].dump();
    return nullptr;
  }
};

TEST_F(MigCostSim, EachInstancePaysItsSlicesOfItsGpuAndTheUnallocatedSlicesAreARow) {
  const nlohmann::json j = mig_cost({});
  ASSERT_FALSE(j.is_discarded());
  const auto* gi2 = entry(j, "gpus", "GPU 0 MIG 3g.40gb (GI 2, 3/7)");
  const auto* gi4 = entry(j, "gpus", "GPU 0 MIG 2g.20gb (GI 4, 2/7)");
  const auto* gi7 = entry(j, "gpus", "GPU 0 MIG 1g.10gb (GI 7, 1/7)");
  const auto* gi8 = entry(j, "gpus", "GPU 0 MIG 1g.10gb (GI 8, 1/7)");
  const auto* free = entry(j, "gpus", "GPU 0 unallocated MIG slices 2/7");
  const auto* whole0 = entry(j, "gpus", "GPU 0");
  const auto* gpu1 = entry(j, "gpus", "GPU 1");
  ASSERT_TRUE(gi2 && gi4 && gi7 && gi8 && free && whole0 && gpu1);
  const auto usd = [](const nlohmann::json* x) { return (*x)["totals"]["cost_usd"].get<double>(); };
  const auto idle = [](const nlohmann::json* x) { return (*x)["totals"]["idle_usd"].get<double>(); };
  const auto held = [](const nlohmann::json* x) { return (*x)["held_seconds"].get<double>(); };
  ASSERT_TRUE(gpu1->contains("usd_per_hour")) << gpu1->dump();
  const double per_second = (*gpu1)["usd_per_hour"].get<double>() / 3600;
  ASSERT_GT(per_second, 0);
  // The timeline: the 3g.40gb and the 1g.10gbs live 20 minutes, the 2g.20gb 10, the free slices 10.
  EXPECT_NEAR(held(gi2), 1200, 30);
  EXPECT_NEAR(held(gi4), 600, 30);
  EXPECT_NEAR(held(free), 600, 30);
  // Each pays its slices' share of the GPU's price for the time it was held.
  EXPECT_NEAR(usd(gi2), per_second * held(gi2) * 3 / 7, 1e-9);
  EXPECT_NEAR(usd(gi4), per_second * held(gi4) * 2 / 7, 1e-9);
  EXPECT_NEAR(usd(gi7), per_second * held(gi7) / 7, 1e-9);
  EXPECT_NEAR(usd(free), per_second * held(free) * 2 / 7, 1e-9);
  // The idle instance and the unallocated slices are waste, all of it; the training instance is not idle.
  EXPECT_NEAR(idle(gi8), usd(gi8), 1e-12);
  EXPECT_NEAR(idle(free), usd(free), 1e-12);
  EXPECT_EQ(idle(gi2), 0);
  // GPU 0's parts and its whole time after 20m add up to what the same-priced whole GPU 1 cost.
  const double gpu0 = usd(gi2) + usd(gi4) + usd(gi7) + usd(gi8) + usd(free) + usd(whole0);
  EXPECT_NEAR(gpu0, usd(gpu1), usd(gpu1) * 0.01);
  EXPECT_NEAR(held(whole0), 600, 30) << "GPU 0 is paid as a whole only after MIG is turned off";
}

TEST_F(MigCostSim, AnInstancesProcessIsChargedItsInstancesShare) {
  const nlohmann::json gpus = mig_cost({});
  const nlohmann::json j = mig_cost({"--by", "process"});
  const auto* gi2 = entry(gpus, "gpus", "GPU 0 MIG 3g.40gb (GI 2, 3/7)");
  const auto* gi4 = entry(gpus, "gpus", "GPU 0 MIG 2g.20gb (GI 4, 2/7)");
  const auto* p5001 = entry(j, "rows", "pid 5001 python train.py --mig");
  const auto* p5002 = entry(j, "rows", "pid 5002 tritonserver --model-repository=/models");
  const auto* freed = entry(j, "rows", "(unallocated MIG slices)");
  ASSERT_TRUE(gi2 && gi4 && p5001 && p5002 && freed);
  ASSERT_GT((*gi2)["totals"]["cost_usd"].get<double>(), 0) << "priced";
  EXPECT_NEAR((*p5001)["cost_usd"].get<double>(), (*gi2)["totals"]["cost_usd"].get<double>(), 1e-9)
      << "pid 5001 is GI 2's only process";
  EXPECT_NEAR((*p5002)["cost_usd"].get<double>(), (*gi4)["totals"]["cost_usd"].get<double>(), 1e-9);
  EXPECT_EQ((*p5001)["gpus"][0], "mig-h100-01 GPU 0 MIG 3g.40gb (GI 2, 3/7)");
  EXPECT_NEAR(j["total"]["cost_usd"].get<double>(), gpus["total"]["cost_usd"].get<double>(), 1e-9);
}

}  // namespace
}  // namespace gpuscope::cli
