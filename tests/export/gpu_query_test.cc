#include "export/gpu_query.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;

TEST(ParseGpuQuery, ResolvesIdentityAndCatalogNames) {
  auto cols = parse_gpu_query("index,name,temperature.gpu,memory.used");
  ASSERT_TRUE(cols.has_value());
  ASSERT_EQ(cols->size(), 4u);
  EXPECT_EQ(std::get<IdentityColumn>((*cols)[0].source), IdentityColumn::kIndex);
  EXPECT_EQ(std::get<IdentityColumn>((*cols)[1].source), IdentityColumn::kName);
  EXPECT_EQ(std::get<FieldId>((*cols)[2].source), FieldId::kGpuTemp);
  EXPECT_EQ(std::get<FieldId>((*cols)[3].source), FieldId::kFbUsed);
}

TEST(ParseGpuQuery, TrimsBlanksAroundNames) {
  auto cols = parse_gpu_query(" index , utilization.gpu");
  ASSERT_TRUE(cols.has_value());
  EXPECT_EQ((*cols)[0].name, "index");
  EXPECT_EQ((*cols)[1].name, "utilization.gpu");
}

TEST(ParseGpuQuery, RejectsAnUnknownNameAndNamesIt) {
  auto cols = parse_gpu_query("index,temprature.gpu,name");
  ASSERT_FALSE(cols.has_value());
  EXPECT_EQ(cols.error().name, "temprature.gpu");
}

TEST(ParseGpuQuery, CatalogFieldsWithoutAnSmiNameAreNotQueryable) {
  // sm_active has no nvidia-smi name: its catalog key must not be accepted as one.
  auto cols = parse_gpu_query("sm_active_ratio");
  ASSERT_FALSE(cols.has_value());
  EXPECT_EQ(cols.error().name, "sm_active_ratio");
}

TEST(ParseGpuQuery, DcgmNamesReachTheProfilingFields) {
  auto cols = parse_gpu_query("utilization.gpu,DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_PIPE_TENSOR_ACTIVE");
  ASSERT_TRUE(cols.has_value());
  ASSERT_EQ(cols->size(), 3u);
  EXPECT_EQ((*cols)[1].name, "DCGM_FI_PROF_SM_ACTIVE");
  EXPECT_EQ(std::get<model::FieldId>((*cols)[1].source), model::FieldId::kSmActive);
  EXPECT_EQ(std::get<model::FieldId>((*cols)[2].source), model::FieldId::kPipeTensorActive);
  auto typo = parse_gpu_query("DCGM_FI_PROF_SM_ACTIV");
  ASSERT_FALSE(typo.has_value());
  EXPECT_EQ(typo.error().name, "DCGM_FI_PROF_SM_ACTIV");
}

TEST(ParseGpuQuery, RejectsAnEmptyEntry) {
  auto cols = parse_gpu_query("index,,name");
  ASSERT_FALSE(cols.has_value());
  EXPECT_EQ(cols.error().name, "");
  EXPECT_FALSE(parse_gpu_query("").has_value());
}

TEST(ParseGpuQuery, AliasesPrintTheCanonicalName) {
  auto cols = parse_gpu_query("gpu_name,gpu_bus_id,clocks.current.sm,clocks.sm,clocks.max.mem,clocks_throttle_reasons.active");
  ASSERT_TRUE(cols.has_value());
  EXPECT_EQ((*cols)[0].name, "name");
  EXPECT_EQ((*cols)[1].name, "pci.bus_id");
  // nvidia-smi 580's name, which its header prints (the real tool's clocks.current.sm [MHz]).
  EXPECT_EQ((*cols)[2].name, "clocks.current.sm");
  EXPECT_EQ((*cols)[3].name, "clocks.current.sm");
  EXPECT_EQ((*cols)[4].name, "clocks.max.memory");
  EXPECT_EQ(std::get<FieldId>((*cols)[5].source), FieldId::kClocksEventReasons);
}

// The 188 names nvidia-smi 580 accepts for --query-gpu, as the real tool listed them.
std::set<std::string> nvidia_smi_query_names() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi-query-gpu-fields.txt");
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.insert(line);
  }
  return names;
}

TEST(ParseGpuQuery, EveryNameIsOneNvidiaSmiAcceptsAndMeansWhatItMeansThere) {
  const auto real = nvidia_smi_query_names();
  ASSERT_EQ(real.size(), 188u);
  for (const auto& name : gpu_query_names()) EXPECT_TRUE(real.contains(name)) << name << ": nvidia-smi rejects it";
  // gpuscope's extra fields, once under names of their own that nvidia-smi rejects, are DCGM columns now.
  for (const char* rejected : {"pcie.replay_counter", "temperature.gpu.tlimit.slowdown", "temperature.gpu.tlimit.shutdown",
                               "minor_number"}) {
    auto cols = parse_gpu_query(rejected);
    ASSERT_FALSE(cols.has_value()) << rejected;
    EXPECT_EQ(cols.error().name, rejected);
  }
  for (const char* dcgm : {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_SLOWDOWN_TEMP", "DCGM_FI_DEV_SHUTDOWN_TEMP"}) {
    EXPECT_TRUE(parse_gpu_query(dcgm).has_value()) << dcgm;
  }
}

TEST(ParseGpuQuery, EveryListedNameParses) {
  for (const auto& name : gpu_query_names()) {
    EXPECT_TRUE(parse_gpu_query(name).has_value()) << name;
  }
}

TEST(IdentityText, ReadsInfoAndSystem) {
  auto system = testing::sample_system();
  auto info = testing::h100_info();
  auto sample = testing::h100_sample();
  QueryContext ctx{system, testing::sample_time(), 8};
  GpuView gpu{info, sample};
  EXPECT_EQ(identity_text(IdentityColumn::kIndex, ctx, gpu), "0");
  EXPECT_EQ(identity_text(IdentityColumn::kComputeCap, ctx, gpu), "9.0");
  EXPECT_EQ(identity_text(IdentityColumn::kCount, ctx, gpu), "8");
  EXPECT_EQ(identity_text(IdentityColumn::kDriverVersion, ctx, gpu), "580.65.06");
  EXPECT_EQ(identity_text(IdentityColumn::kTimestamp, ctx, gpu), "2026/01/01 00:10:00.000");
  info.serial.reset();
  EXPECT_EQ(identity_text(IdentityColumn::kSerial, ctx, gpu), std::nullopt);
}

}  // namespace
}  // namespace gpuscope::exporter
