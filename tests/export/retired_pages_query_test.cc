// retired_pages_query: one row per page in the order the reading holds them, GPUs without a list left
// out of the CSV and named under "errors" in JSON, [N/A] for a retirement time the v1 call cannot give.
#include "export/retired_pages_query.h"

#include <gtest/gtest.h>

#include "export/timestamp_text.h"
#include "sample_gpus.h"

namespace gpuscope::exporter {
namespace {

struct RpqFixture {
  model::SystemInfo system = testing::sample_system();
  model::GpuInfo info0 = testing::h100_info(0);
  model::GpuInfo info1 = testing::h100_info(1);
  model::GpuSample sample0 = testing::h100_sample(0);
  model::GpuSample sample1 = testing::h100_sample(1);
  std::vector<GpuView> views() const { return {GpuView{info0, sample0}, GpuView{info1, sample1}}; }
  QueryContext context() const { return QueryContext{system, testing::sample_time(), 2}; }
};

TEST(RetiredPagesQuery, ParsesNvidiaSmisNamesOnly) {
  const auto all = parse_retired_pages_query(
      "timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,retired_pages.address,retired_pages.timestamp,"
      "retired_pages.cause");
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->size(), 8u);
  EXPECT_EQ(retired_pages_csv_header(*all),
            "timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, retired_pages.address, retired_pages.timestamp, "
            "retired_pages.cause\n");
  const auto unknown = parse_retired_pages_query("gpu_uuid, pid");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().name, "pid");
  const auto empty = parse_retired_pages_query("gpu_uuid,,retired_pages.cause");
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().name, "");
}

TEST(RetiredPagesQuery, OneRowPerPageAndNoneForAGpuWithoutAList) {
  const RpqFixture f;
  const auto columns = *parse_retired_pages_query("gpu_uuid,retired_pages.address,retired_pages.timestamp,retired_pages.cause");
  // 2026/01/01 00:02:00 UTC in µs since the epoch.
  const std::uint64_t at_us = 1767225720ULL * 1000000ULL;
  std::vector<model::RetiredPagesReading> readings(2);
  readings[0].error = 3;  // NOT_SUPPORTED: remaps rows
  readings[1].pages = {{model::RetirementCause::kMultipleSingleBitEcc, 0x1000, std::nullopt},
                       {model::RetirementCause::kDoubleBitEcc, 0x7fff5000, at_us}};
  const std::string rows = retired_pages_csv_rows(columns, f.context(), f.views(), readings);
  const std::string expected_time = smi_timestamp(std::chrono::system_clock::time_point(std::chrono::seconds(1767225720)));
  EXPECT_EQ(rows, f.info1.uuid + ", 0x0000000000001000, [N/A], Single Bit ECC\n" + f.info1.uuid +
                      ", 0x000000007fff5000, " + expected_time + ", Double Bit ECC\n");
}

TEST(RetiredPagesQuery, JsonNamesTheGpusWithoutAListUnderErrors) {
  const RpqFixture f;
  const auto columns = *parse_retired_pages_query("gpu_uuid,retired_pages.address,retired_pages.timestamp");
  std::vector<model::RetiredPagesReading> readings(2);
  readings[0].error = 3;
  readings[1].pages = {{model::RetirementCause::kDoubleBitEcc, 4096, 1767225720ULL * 1000000ULL}};
  const auto doc = retired_pages_json(columns, f.context(), f.views(), readings);
  ASSERT_EQ(doc["retired_pages"].size(), 1u);
  EXPECT_EQ(doc["retired_pages"][0]["gpu_uuid"], f.info1.uuid);
  EXPECT_EQ(doc["retired_pages"][0]["retired_pages.address"], 4096);
  EXPECT_EQ(doc["retired_pages"][0]["retired_pages.timestamp"], "2026-01-01T00:02:00.000Z");
  EXPECT_EQ(doc["retired_pages"][0]["retired_pages.timestamp_unix_seconds"], 1767225720.0);
  ASSERT_EQ(doc["errors"].size(), 1u);
  EXPECT_EQ(doc["errors"][0]["gpu_index"], f.info0.index);
  EXPECT_EQ(doc["errors"][0]["error"], "Not Supported");
}

}  // namespace
}  // namespace gpuscope::exporter
