#include "export/gpu_query_csv.h"

#include <gtest/gtest.h>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::FieldValue;

std::vector<GpuColumn> columns(std::string_view names) {
  auto cols = parse_gpu_query(names);
  EXPECT_TRUE(cols.has_value());
  return cols.value_or(std::vector<GpuColumn>{});
}

class GpuQueryCsv : public ::testing::Test {
 protected:
  std::string rows(std::string_view names, CsvStyle style = {}) {
    auto cols = columns(names);
    QueryContext ctx{system, testing::sample_time(), 1};
    std::vector<GpuView> views{{info, sample}};
    return gpu_query_csv_rows(cols, ctx, views, style);
  }

  model::SystemInfo system = testing::sample_system();
  model::GpuInfo info = testing::h100_info();
  model::GpuSample sample = testing::h100_sample();
};

TEST_F(GpuQueryCsv, HeaderCarriesSmiUnitsInBrackets) {
  EXPECT_EQ(gpu_query_csv_header(columns("index,name,temperature.gpu,utilization.gpu,memory.used")),
            "index, name, temperature.gpu, utilization.gpu [%], memory.used [MiB]\n");
}

TEST_F(GpuQueryCsv, ValuesCarryUnits) {
  EXPECT_EQ(rows("index,name,temperature.gpu,utilization.gpu,memory.used,power.draw"),
            "0, NVIDIA H100 80GB HBM3, 45, 87 %, 61234 MiB, 250.12 W\n");
}

TEST_F(GpuQueryCsv, NoUnitsDropsUnitsFromValues) {
  EXPECT_EQ(rows("utilization.gpu,memory.used,power.draw", {.header = true, .units = false}), "87, 61234, 250.12\n");
}

TEST_F(GpuQueryCsv, SmiFormats) {
  EXPECT_EQ(rows("pstate,clocks_event_reasons.active,clocks.sm"), "P0, 0x0000000000000004, 1980 MHz\n");
  // nvidia-smi's hex digits are upper case: sw thermal (0x20) + hw thermal (0x40) + sw power cap (0x4) + idle.
  sample[FieldId::kClocksEventReasons] = FieldValue::of(0x65);
  EXPECT_EQ(rows("clocks_event_reasons.active"), "0x0000000000000065\n");
  sample[FieldId::kClocksEventReasons] = FieldValue::of(0x1AF);
  EXPECT_EQ(rows("clocks_event_reasons.active"), "0x00000000000001AF\n");
  // Remapped rows pending / failed read Yes or No in nvidia-smi (the real H100's "No"), not 0.
  sample[FieldId::kRowRemapPending] = FieldValue::of(1);
  sample[FieldId::kRowRemapFailure] = FieldValue::of(0);
  EXPECT_EQ(rows("remapped_rows.pending,remapped_rows.failure"), "Yes, No\n");
  EXPECT_EQ(rows("remapped_rows.pending,remapped_rows.failure", {.header = true, .units = false}), "Yes, No\n");
  EXPECT_EQ(gpu_query_csv_header(columns("remapped_rows.pending,clocks.sm")),
            "remapped_rows.pending, clocks.current.sm [MHz]\n");
}

TEST_F(GpuQueryCsv, UnsupportedIsNotAvailableNeverZero) {
  sample[FieldId::kFanSpeed] = FieldValue::unsupported();
  EXPECT_EQ(rows("fan.speed,temperature.gpu"), "[N/A], 45\n");
}

TEST_F(GpuQueryCsv, ErrorShowsNvmlsText) {
  sample[FieldId::kPowerUsage] = FieldValue::error(999);
  sample[FieldId::kGpuTemp] = FieldValue::error(4);
  EXPECT_EQ(rows("power.draw,temperature.gpu"), "[Unknown Error], [Insufficient Permissions]\n");
}

TEST_F(GpuQueryCsv, LostGpuKeepsIdentityColumns) {
  sample.up = false;
  sample.down_error_code = 15;
  EXPECT_EQ(rows("index,uuid,temperature.gpu,memory.used"),
            "0, GPU-5e5c1a8a-1111-2222-3333-444455556666, [GPU is lost], [GPU is lost]\n");
}

TEST_F(GpuQueryCsv, GpuLostAtDiscoverySaysLostNotNotAvailable) {
  info = model::GpuInfo{};
  info.index = 1;
  info.discovery_error = 15;
  sample.up = false;
  sample.down_error_code = 15;
  EXPECT_EQ(rows("index,name,uuid,pci.bus_id,driver_version,temperature.gpu"),
            "1, [GPU is lost], [GPU is lost], [GPU is lost], 580.65.06, [GPU is lost]\n");
}

TEST_F(GpuQueryCsv, IdentityColumns) {
  EXPECT_EQ(rows("pci.bus_id,driver_version,timestamp,count,serial,compute_cap"),
            "00000000:18:00.0, 580.65.06, 2026/01/01 00:10:00.000, 1, 1650123456789, 9.0\n");
}

TEST_F(GpuQueryCsv, MissingIdentityIsNotAvailable) {
  info.serial.reset();
  info.vbios_version.reset();
  EXPECT_EQ(rows("serial,vbios_version"), "[N/A], [N/A]\n");
}

TEST_F(GpuQueryCsv, OneLinePerGpu) {
  auto info1 = testing::h100_info(1);
  auto sample1 = testing::h100_sample(1);
  sample1[FieldId::kGpuTemp] = FieldValue::of(61);
  auto cols = columns("index,temperature.gpu");
  QueryContext ctx{system, testing::sample_time(), 2};
  std::vector<GpuView> views{{info, sample}, {info1, sample1}};
  EXPECT_EQ(gpu_query_csv_rows(cols, ctx, views, {}), "0, 45\n1, 61\n");
}

}  // namespace
}  // namespace gpuscope::exporter
