#include "export/cost_metrics.h"

#include <gtest/gtest.h>

#include "export/exposition_parser.h"
#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using testing::ParsedExposition;

constexpr std::string_view kGpu0Labels =
    R"(gpu="0",UUID="GPU-5e5c1a8a-1111-2222-3333-444455556666",pci_bus_id="00000000:18:00.0",device="nvidia0",)"
    R"(modelName="NVIDIA H100 80GB HBM3",Hostname="node01",DCGM_FI_DRIVER_VERSION="580.65.06")";

class CostMetrics : public ::testing::Test {
 protected:
  CostMetrics() {
    options.price_tier = "spot";
    GpuCostCounters g;
    g.gpu_index = 0;
    g.dollars = 1.5;
    g.idle_dollars = 0.5;
    g.unused_dollars = 0.75;
    g.energy_joules = 3600;
    g.energy_dollars = 0.00012;
    g.processes = {{1000, "python train.py", "abc", 4e9, 1.0}, {1001, "python eval.py", "", 8e9, 0.5}};
    counters.gpus.push_back(g);
  }

  std::string render(ExpositionFormat format = ExpositionFormat::kPrometheusText) {
    std::string out;
    ExpositionWriter w(format, out);
    write_cost_metrics(w, counters, infos, system, set, options);
    w.finish();
    return out;
  }

  ParsedExposition parsed(ExpositionFormat format = ExpositionFormat::kPrometheusText) {
    const std::string text = render(format);
    auto p = testing::parse_exposition(text, format == ExpositionFormat::kOpenMetrics);
    EXPECT_TRUE(p.has_value()) << p.error() << "\n" << text;
    return p.value_or(ParsedExposition{});
  }

  model::SystemInfo system = testing::sample_system();
  std::vector<model::GpuInfo> infos{testing::h100_info(0)};
  MetricSet set = default_metric_set();
  GpuMetricsOptions options;
  CostCounters counters;
};

TEST_F(CostMetrics, EachGpuHasItsCountersOnItsLabelsDollarsInTheTier) {
  const std::string text = render();
  EXPECT_NE(text.find("# TYPE gpuscope_cost_dollars_total counter\n"
                      "gpuscope_cost_dollars_total{" + std::string(kGpu0Labels) + ",tier=\"spot\"} 1.5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpuscope_energy_joules_total{" + std::string(kGpu0Labels) + "} 3600\n"), std::string::npos);
  const auto p = parsed();
  for (const std::string_view name : {kCostDollarsTotal, kCostIdleDollarsTotal, kCostUnusedDollarsTotal,
                                      kEnergyJoulesTotal, kEnergyCostDollarsTotal, kProcessCostDollarsTotal}) {
    const auto* f = p.family(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->type, "counter") << name;
    EXPECT_FALSE(f->help.empty()) << name;
  }
  EXPECT_EQ(p.value("gpuscope_cost_idle_dollars_total", {{"gpu", "0"}, {"tier", "spot"}}), 0.5);
  EXPECT_EQ(p.value("gpuscope_cost_unused_dollars_total", {{"gpu", "0"}, {"tier", "spot"}}), 0.75);
  EXPECT_EQ(p.value("gpuscope_energy_cost_dollars_total", {{"gpu", "0"}}), 0.00012);
  EXPECT_EQ(p.value("gpuscope_process_cost_dollars_total",
                    {{"pid", "1000"}, {"process_name", "python train.py"}, {"container_id", "abc"}, {"tier", "spot"}}),
            1.0);
  EXPECT_EQ(p.value("gpuscope_process_cost_dollars_total", {{"pid", "1001"}, {"UUID", infos[0].uuid}}), 0.5);
}

TEST_F(CostMetrics, OpenMetricsDeclaresTheCountersWithoutTotal) {
  const std::string text = render(ExpositionFormat::kOpenMetrics);
  EXPECT_NE(text.find("# TYPE gpuscope_cost_dollars counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE gpuscope_process_cost_dollars counter\n"), std::string::npos) << text;
  parsed(ExpositionFormat::kOpenMetrics);
}

TEST_F(CostMetrics, AbsentCountersHaveNoSeriesNeverZero) {
  counters.gpus[0].dollars.reset();
  counters.gpus[0].idle_dollars.reset();
  counters.gpus[0].unused_dollars.reset();
  counters.gpus[0].energy_dollars.reset();
  counters.gpus[0].processes.clear();
  const std::string text = render();
  EXPECT_EQ(text.find("dollars"), std::string::npos) << text;
  EXPECT_NE(text.find("gpuscope_energy_joules_total"), std::string::npos);
  counters.gpus.clear();
  EXPECT_EQ(render(), "");
}

TEST_F(CostMetrics, ProcessesAreBoundedLikeTheProcessGaugesLargestMemoryFirst) {
  options.max_processes_per_gpu = 1;
  const auto p = parsed();
  ASSERT_EQ(p.samples("gpuscope_process_cost_dollars_total").size(), 1U);
  EXPECT_EQ(p.samples("gpuscope_process_cost_dollars_total").at(0)->labels.at("pid"), "1001");
}

TEST_F(CostMetrics, TheCountersCarryTheirReadingsTimeWhenAsked) {
  counters.t_ms = 1'700'000'000'123;
  options.timestamps = true;
  const std::string text = render();
  EXPECT_NE(text.find(",tier=\"spot\"} 1.5 1700000000123\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuscope::exporter
