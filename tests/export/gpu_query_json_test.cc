#include "export/gpu_query_json.h"

#include <gtest/gtest.h>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::FieldValue;

class GpuQueryJson : public ::testing::Test {
 protected:
  nlohmann::ordered_json render(std::string_view names) {
    auto cols = parse_gpu_query(names);
    EXPECT_TRUE(cols.has_value());
    QueryContext ctx{system, testing::sample_time(), 1};
    std::vector<GpuView> views{{info, sample}};
    return gpu_query_json(cols.value_or(std::vector<GpuColumn>{}), ctx, views);
  }

  model::SystemInfo system = testing::sample_system();
  model::GpuInfo info = testing::h100_info();
  model::GpuSample sample = testing::h100_sample();
};

TEST_F(GpuQueryJson, TopLevelTimeAndGpus) {
  auto doc = render("index");
  EXPECT_EQ(doc.dump(),
            R"({"timestamp":"2026-01-01T00:10:00.000Z","timestamp_unix_seconds":1767226200.0,"gpus":[{"index":0}]})");
}

TEST_F(GpuQueryJson, UnitsInKeysAndNumbersNotStrings) {
  auto gpu = render("index,name,temperature.gpu,memory.used,power.draw,utilization.gpu")["gpus"][0];
  EXPECT_EQ(gpu.dump(),
            R"({"index":0,"name":"NVIDIA H100 80GB HBM3","temperature.gpu_celsius":45,"memory.used_mib":61234,)"
            R"("power.draw_watts":250.123,"utilization.gpu_percent":87})");
  EXPECT_TRUE(gpu["temperature.gpu_celsius"].is_number_integer());
  EXPECT_TRUE(gpu["power.draw_watts"].is_number_float());
}

TEST_F(GpuQueryJson, UnsupportedIsAbsent) {
  sample[FieldId::kFanSpeed] = FieldValue::unsupported();
  auto gpu = render("index,fan.speed")["gpus"][0];
  EXPECT_FALSE(gpu.contains("fan.speed_percent"));
  EXPECT_FALSE(gpu.contains("fan.speed"));
  EXPECT_FALSE(gpu.contains("errors"));
}

TEST_F(GpuQueryJson, ErrorsAreAbsentAndNamed) {
  sample[FieldId::kPowerUsage] = FieldValue::error(999);
  auto gpu = render("power.draw,temperature.gpu")["gpus"][0];
  EXPECT_FALSE(gpu.contains("power.draw_watts"));
  EXPECT_EQ(gpu["errors"]["power.draw"], "Unknown Error");
  EXPECT_EQ(gpu["temperature.gpu_celsius"], 45);
}

TEST_F(GpuQueryJson, LostGpuHasIdentityAndErrorsOnly) {
  sample.up = false;
  sample.down_error_code = 15;
  auto gpu = render("index,uuid,temperature.gpu")["gpus"][0];
  EXPECT_EQ(gpu.dump(),
            R"({"index":0,"uuid":"GPU-5e5c1a8a-1111-2222-3333-444455556666","errors":{"temperature.gpu":"GPU is lost"}})");
}

TEST_F(GpuQueryJson, GpuLostAtDiscoveryNamesWhyItsIdentityIsMissing) {
  info = model::GpuInfo{};
  info.index = 1;
  info.discovery_error = 15;
  sample.up = false;
  sample.down_error_code = 15;
  auto gpu = render("index,name,driver_version")["gpus"][0];
  EXPECT_EQ(gpu.dump(), R"({"index":1,"driver_version":"580.65.06","errors":{"name":"GPU is lost"}})");
}

TEST_F(GpuQueryJson, DimensionlessAndCodedFieldsAreNumbers) {
  auto gpu = render("pstate,clocks_event_reasons.active")["gpus"][0];
  EXPECT_EQ(gpu["pstate"], 0);
  EXPECT_EQ(gpu["clocks_event_reasons.active"], 4);
}

TEST_F(GpuQueryJson, IdentityNumbersAreNumbersVersionsStrings) {
  auto gpu = render("count,compute_cap,timestamp")["gpus"][0];
  EXPECT_EQ(gpu["count"], 1);
  EXPECT_EQ(gpu["compute_cap"], "9.0");
  EXPECT_FALSE(gpu.contains("timestamp"));  // carried once, at the top
}

}  // namespace
}  // namespace gpuscope::exporter
