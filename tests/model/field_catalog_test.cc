#include "model/field_catalog.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gpuscope::model {
namespace {

TEST(FieldCatalog, EveryRowIsComplete) {
  for (const auto& f : FieldCatalog::all()) {
    SCOPED_TRACE(std::string(f.key));
    EXPECT_FALSE(f.key.empty());
    EXPECT_FALSE(f.unit.empty());
    EXPECT_FALSE(f.help.empty());
    EXPECT_TRUE(f.help.ends_with('.')) << "help text is a sentence";
    EXPECT_EQ(f.dcgm_name.empty(), f.dcgm_id == 0) << "a DCGM name goes with its id";
    if (!f.dcgm_name.empty()) {
      EXPECT_TRUE(f.dcgm_name.starts_with("DCGM_FI_"));
    }
  }
}

TEST(FieldCatalog, NamesAndIdsAreUnique) {
  std::set<std::string_view> keys, dcgm, smi;
  std::set<int> ids;
  for (const auto& f : FieldCatalog::all()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    if (!f.dcgm_name.empty()) {
      EXPECT_TRUE(dcgm.insert(f.dcgm_name).second) << f.dcgm_name;
      EXPECT_TRUE(ids.insert(f.dcgm_id).second) << f.dcgm_id;
    }
    if (!f.smi_name.empty()) {
      EXPECT_TRUE(smi.insert(f.smi_name).second) << f.smi_name;
    }
  }
}

// Every DCGM field of ../shared/reference/metrics-and-catalog.md, with its id and type.
TEST(FieldCatalog, CoversTheReferenceDcgmTable) {
  struct Row {
    const char* name;
    int id;
    MetricType type;
  };
  const Row rows[] = {
      {"DCGM_FI_DEV_SM_CLOCK", 100, MetricType::kGauge},
      {"DCGM_FI_DEV_MEM_CLOCK", 101, MetricType::kGauge},
      {"DCGM_FI_DEV_MEMORY_TEMP", 140, MetricType::kGauge},
      {"DCGM_FI_DEV_GPU_TEMP", 150, MetricType::kGauge},
      {"DCGM_FI_DEV_POWER_USAGE", 155, MetricType::kGauge},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 156, MetricType::kCounter},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 202, MetricType::kCounter},
      {"DCGM_FI_DEV_GPU_UTIL", 203, MetricType::kGauge},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", 204, MetricType::kGauge},
      {"DCGM_FI_DEV_ENC_UTIL", 206, MetricType::kGauge},
      {"DCGM_FI_DEV_DEC_UTIL", 207, MetricType::kGauge},
      {"DCGM_FI_DEV_XID_ERRORS", 230, MetricType::kGauge},
      {"DCGM_FI_DEV_POWER_VIOLATION", 240, MetricType::kCounter},
      {"DCGM_FI_DEV_THERMAL_VIOLATION", 241, MetricType::kCounter},
      {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", 242, MetricType::kCounter},
      {"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", 243, MetricType::kCounter},
      {"DCGM_FI_DEV_LOW_UTIL_VIOLATION", 244, MetricType::kCounter},
      {"DCGM_FI_DEV_RELIABILITY_VIOLATION", 245, MetricType::kCounter},
      {"DCGM_FI_DEV_FB_TOTAL", 250, MetricType::kGauge},
      {"DCGM_FI_DEV_FB_FREE", 251, MetricType::kGauge},
      {"DCGM_FI_DEV_FB_USED", 252, MetricType::kGauge},
      {"DCGM_FI_DEV_FB_RESERVED", 253, MetricType::kGauge},
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 310, MetricType::kCounter},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 311, MetricType::kCounter},
      {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", 312, MetricType::kCounter},
      {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 313, MetricType::kCounter},
      {"DCGM_FI_DEV_RETIRED_SBE", 390, MetricType::kCounter},
      {"DCGM_FI_DEV_RETIRED_DBE", 391, MetricType::kCounter},
      {"DCGM_FI_DEV_RETIRED_PENDING", 392, MetricType::kGauge},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 393, MetricType::kCounter},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 394, MetricType::kCounter},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", 395, MetricType::kGauge},
      {"DCGM_FI_DEV_ROW_REMAP_PENDING", 396, MetricType::kGauge},
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 449, MetricType::kCounter},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1001, MetricType::kGauge},
      {"DCGM_FI_PROF_SM_ACTIVE", 1002, MetricType::kGauge},
      {"DCGM_FI_PROF_SM_OCCUPANCY", 1003, MetricType::kGauge},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004, MetricType::kGauge},
      {"DCGM_FI_PROF_DRAM_ACTIVE", 1005, MetricType::kGauge},
      {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", 1006, MetricType::kGauge},
      {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", 1007, MetricType::kGauge},
      {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", 1008, MetricType::kGauge},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", 1009, MetricType::kGauge},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", 1010, MetricType::kGauge},
      {"DCGM_FI_PROF_NVLINK_TX_BYTES", 1011, MetricType::kGauge},
      {"DCGM_FI_PROF_NVLINK_RX_BYTES", 1012, MetricType::kGauge},
  };
  for (const auto& r : rows) {
    auto id = FieldCatalog::by_dcgm_name(r.name);
    ASSERT_TRUE(id.has_value()) << r.name;
    const auto& f = FieldCatalog::get(*id);
    EXPECT_EQ(f.dcgm_id, r.id) << r.name;
    EXPECT_EQ(f.type, r.type) << r.name;
  }
}

// nvidia-smi query names from the reference, which map to catalog fields (the rest are GpuInfo columns).
TEST(FieldCatalog, CoversNvidiaSmiQueryNames) {
  for (const char* name :
       {"pstate", "temperature.gpu", "temperature.memory", "utilization.gpu", "utilization.memory", "memory.total",
        "memory.used", "memory.free", "memory.reserved", "power.draw", "power.limit", "enforced.power.limit",
        "clocks.current.sm", "clocks.current.memory", "clocks.current.graphics", "clocks.max.sm", "fan.speed", "pcie.link.gen.current",
        "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max", "clocks_event_reasons.active",
        "ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total"}) {
    EXPECT_TRUE(FieldCatalog::by_smi_name(name).has_value()) << name;
  }
  EXPECT_FALSE(FieldCatalog::by_smi_name("temperature.gpuu").has_value());
}

TEST(FieldCatalog, LookupByKeyRoundTrips) {
  for (const auto& f : FieldCatalog::all()) {
    ASSERT_EQ(FieldCatalog::by_key(f.key), f.id);
    ASSERT_EQ(&FieldCatalog::get(f.id), &f);
  }
}

}  // namespace
}  // namespace gpuscope::model

namespace gpuscope::model {
namespace {

TEST(FieldCatalog, NvidiaSmisOtherSpellingsNameTheSameColumn) {
  EXPECT_EQ(FieldCatalog::canonical_smi_name("gpu_name"), "name");
  EXPECT_EQ(FieldCatalog::canonical_smi_name("clocks.sm"), "clocks.current.sm");
  EXPECT_EQ(FieldCatalog::canonical_smi_name("clocks_throttle_reasons.active"), "clocks_event_reasons.active");
  EXPECT_EQ(FieldCatalog::canonical_smi_name("memory.used"), "memory.used") << "a canonical name is itself";
  // Every alias that names a field leads to a field of the catalog.
  for (std::string_view alias : {"clocks.mem", "clocks.gr", "clocks.video", "clocks.max.mem", "clocks.max.gr"}) {
    EXPECT_TRUE(FieldCatalog::by_smi_name(FieldCatalog::canonical_smi_name(alias)).has_value()) << alias;
  }
}

}  // namespace
}  // namespace gpuscope::model
