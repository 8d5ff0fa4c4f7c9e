#include "export/compute_apps_query.h"

#include <gtest/gtest.h>

#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

class ComputeApps : public ::testing::Test {
 protected:
  void SetUp() override {
    model::ProcessSample train;
    train.pid = 4242;
    train.used_memory_bytes = 61000ULL * 1024 * 1024;
    train.identity.visible = true;
    train.identity.name = "python3";
    model::ProcessSample hidden;  // another PID namespace: no name, no memory figure
    hidden.pid = 777;
    model::ProcessSample display;
    display.pid = 900;
    display.kind = model::ProcessKind::kGraphics;
    display.identity.name = "Xorg";
    sample.processes = {train, hidden, display};
  }

  std::vector<AppColumn> cols(std::string_view names) {
    auto c = parse_compute_apps_query(names);
    EXPECT_TRUE(c.has_value());
    return c.value_or(std::vector<AppColumn>{});
  }

  std::vector<GpuView> views() { return {{info, sample}}; }

  model::SystemInfo system = testing::sample_system();
  model::GpuInfo info = testing::h100_info();
  model::GpuSample sample = testing::h100_sample();
};

TEST_F(ComputeApps, ParsesNamesAndAliases) {
  auto c = cols("pid,process_name,used_gpu_memory,used_memory,gpu_uuid,gpu_bus_id,gpu_name,gpu_serial");
  EXPECT_EQ(c.size(), 8u);
  EXPECT_EQ(c[2], AppColumn::kUsedMemory);
  EXPECT_EQ(c[3], AppColumn::kUsedMemory);
}

TEST_F(ComputeApps, RejectsUnknownName) {
  auto c = parse_compute_apps_query("pid,proces_name");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().name, "proces_name");
}

TEST_F(ComputeApps, CsvHeaderUsesSmiNames) {
  EXPECT_EQ(compute_apps_csv_header(cols("pid,process_name,used_memory,gpu_uuid,gpu_bus_id")),
            "pid, process_name, used_gpu_memory [MiB], gpu_uuid, gpu_bus_id\n");
}

TEST_F(ComputeApps, CsvRowsOnlyComputeProcesses) {
  auto v = views();
  EXPECT_EQ(compute_apps_csv_rows(cols("pid,process_name,used_memory,gpu_bus_id"), v, {}),
            "4242, python3, 61000 MiB, 00000000:18:00.0\n"
            "777, [Not Found], [N/A], 00000000:18:00.0\n");
}

TEST_F(ComputeApps, CsvNoUnits) {
  auto v = views();
  EXPECT_EQ(compute_apps_csv_rows(cols("pid,used_memory"), v, {.header = true, .units = false}),
            "4242, 61000\n777, [N/A]\n");
}

TEST_F(ComputeApps, LostGpuHasNoRows) {
  sample.up = false;
  auto v = views();
  EXPECT_EQ(compute_apps_csv_rows(cols("pid"), v, {}), "");
}

TEST_F(ComputeApps, JsonBytesAndAbsentUnknowns) {
  QueryContext ctx{system, testing::sample_time(), 1};
  auto v = views();
  auto doc = compute_apps_json(cols("pid,process_name,used_memory,gpu_uuid"), ctx, v);
  ASSERT_EQ(doc["processes"].size(), 2u);
  EXPECT_EQ(doc["processes"][0].dump(),
            R"({"pid":4242,"process_name":"python3","used_memory_bytes":63963136000,)"
            R"("gpu_uuid":"GPU-5e5c1a8a-1111-2222-3333-444455556666"})");
  EXPECT_EQ(doc["processes"][1].dump(), R"({"pid":777,"gpu_uuid":"GPU-5e5c1a8a-1111-2222-3333-444455556666"})");
  EXPECT_FALSE(doc.contains("errors"));
}

TEST_F(ComputeApps, JsonNamesGpusWhoseListFailed) {
  sample.processes.clear();
  sample.processes_error_code = 4;
  QueryContext ctx{system, testing::sample_time(), 1};
  auto v = views();
  auto doc = compute_apps_json(cols("pid"), ctx, v);
  EXPECT_TRUE(doc["processes"].empty());
  EXPECT_EQ(doc["errors"][0]["error"], "Insufficient Permissions");
  EXPECT_EQ(doc["errors"][0]["gpu_index"], 0);
}

}  // namespace
}  // namespace gpuscope::exporter
