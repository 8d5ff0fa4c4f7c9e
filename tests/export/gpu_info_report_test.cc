#include "export/gpu_info_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(GpuInfoReport, TextNamesTheLoadedLibrary) {
  auto system = testing::sample_system();
  system.simulated = true;
  system.library_path = "/opt/gpuscope/sim/libnvidia-ml.so.1";
  std::vector<model::GpuInfo> gpus{testing::h100_info()};
  const std::string text = gpu_info_text(system, gpus.size(), gpus);
  EXPECT_THAT(text, HasSubstr("NVML Library                : /opt/gpuscope/sim/libnvidia-ml.so.1 (gpuscope simulator)\n"));
  EXPECT_THAT(text, HasSubstr("CUDA Driver Version         : 13.0\n"));
  EXPECT_THAT(text, HasSubstr("\nGPU 0: NVIDIA H100 80GB HBM3\n"));
  EXPECT_THAT(text, HasSubstr("    Architecture                : Hopper\n"));
  EXPECT_THAT(text, HasSubstr("    Memory Total                : 81559 MiB\n"));
  EXPECT_THAT(text, HasSubstr("    Power Limit                 : 700.00 W\n"));
  EXPECT_THAT(text, HasSubstr("    PCIe Max Link               : Gen 5 x16\n"));
}

TEST(GpuInfoReport, TextMissingFactsAreNotAvailable) {
  auto system = testing::sample_system();
  model::GpuInfo g;
  g.index = 2;
  g.name = "Tesla T4";
  std::vector<model::GpuInfo> gpus{g};
  const std::string text = gpu_info_text(system, gpus.size(), gpus);
  EXPECT_THAT(text, HasSubstr("    Power Limit                 : N/A\n"));
  EXPECT_THAT(text, HasSubstr("    Compute Capability          : N/A\n"));
  EXPECT_THAT(text, Not(HasSubstr("(gpuscope simulator)")));
}

TEST(GpuInfoReport, JsonIsNumericWithUnitsInKeys) {
  auto system = testing::sample_system();
  std::vector<model::GpuInfo> gpus{testing::h100_info()};
  auto doc = gpu_info_json(system, gpus.size(), gpus);
  EXPECT_EQ(doc["system"]["driver_version"], "580.65.06");
  EXPECT_EQ(doc["system"]["cuda_driver_version"], "13.0");
  EXPECT_EQ(doc["system"]["library_path"], "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.65.06");
  EXPECT_EQ(doc["system"]["simulated"], false);
  const auto& g = doc["gpus"][0];
  EXPECT_EQ(g["memory_total_bytes"], 81559ULL * 1024 * 1024);
  EXPECT_EQ(g["max_sm_clock_mhz"], 1980);
  EXPECT_EQ(g["power_limit_watts"], 700);
  EXPECT_EQ(g["architecture"], "Hopper");
  EXPECT_EQ(g["compute_capability"], "9.0");
  EXPECT_EQ(g["pcie_max_gen"], 5);
  EXPECT_EQ(g["gpm_supported"], true);
  EXPECT_EQ(g["mig_enabled"], false);
}

TEST(GpuInfoReport, JsonOmitsWhatTheDriverDidNotReport) {
  auto system = testing::sample_system();
  model::GpuInfo g;
  g.index = 0;
  std::vector<model::GpuInfo> gpus{g};
  const auto doc = gpu_info_json(system, gpus.size(), gpus);
  const auto& j = doc["gpus"][0];
  EXPECT_FALSE(j.contains("power_limit_watts"));
  EXPECT_FALSE(j.contains("memory_total_bytes"));
  EXPECT_FALSE(j.contains("mig_enabled"));
  EXPECT_FALSE(j.contains("name"));
}

// nvidia-smi counts every attached GPU, also when only some are shown (-i).
TEST(GpuInfoReport, CountsEveryAttachedGpuWhenShowingSome) {
  auto system = testing::sample_system();
  std::vector<model::GpuInfo> shown{testing::h100_info()};
  EXPECT_THAT(gpu_info_text(system, 8, shown), HasSubstr("Attached GPUs               : 8\n"));
  EXPECT_EQ(gpu_info_json(system, 8, shown)["system"]["gpu_count"], 8);
  EXPECT_EQ(gpu_info_json(system, 8, shown)["gpus"].size(), 1u);
}

}  // namespace
}  // namespace gpuscope::exporter
