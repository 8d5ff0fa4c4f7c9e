#include "export/compute_apps_query.h"

#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "export/sample_gpus.h"
#include "export/timestamp_text.h"

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

// Every field nvidia-smi 580 lists for --query-compute-apps (its own list, read from the reference) is
// accepted, and the header names each as nvidia-smi does.
TEST_F(ComputeApps, AcceptsEveryFieldNvidiaSmiListsWithItsHeader) {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi/query-compute-apps-fields.txt");
  ASSERT_TRUE(in) << "the nvidia-smi reference is missing";
  std::string names, expected_header;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    names += (names.empty() ? "" : ",") + line;
    const std::string header = line == "used_gpu_memory" ? line + " [MiB]" : line;
    expected_header += (expected_header.empty() ? "" : ", ") + header;
  }
  auto c = parse_compute_apps_query(names);
  ASSERT_TRUE(c.has_value()) << c.error().name;
  EXPECT_EQ(c->size(), 8u);
  EXPECT_EQ(compute_apps_csv_header(*c), expected_header + "\n");
}

TEST_F(ComputeApps, TimestampIsTheReadingsInNvidiaSmisFormat) {
  auto v = views();
  QueryContext ctx{system, testing::sample_time(), 1};
  const std::string rows = compute_apps_csv_rows(cols("timestamp,pid"), ctx, v, {});
  EXPECT_EQ(rows, smi_timestamp(ctx.time) + ", 4242\n" + smi_timestamp(ctx.time) + ", 777\n");
  EXPECT_TRUE(std::regex_match(rows.substr(0, rows.find(',')), std::regex(R"(\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}\.\d{3})")))
      << rows;
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
  QueryContext ctx{system, testing::sample_time(), 1};
  EXPECT_EQ(compute_apps_csv_rows(cols("pid,process_name,used_memory,gpu_bus_id"), ctx, v, {}),
            "4242, python3, 61000 MiB, 00000000:18:00.0\n"
            "777, [Not Found], [N/A], 00000000:18:00.0\n");
}

TEST_F(ComputeApps, CsvNoUnits) {
  auto v = views();
  QueryContext ctx{system, testing::sample_time(), 1};
  EXPECT_EQ(compute_apps_csv_rows(cols("pid,used_memory"), ctx, v, {.header = true, .units = false}),
            "4242, 61000\n777, [N/A]\n");
}

TEST_F(ComputeApps, LostGpuHasNoRows) {
  sample.up = false;
  auto v = views();
  QueryContext ctx{system, testing::sample_time(), 1};
  EXPECT_EQ(compute_apps_csv_rows(cols("pid"), ctx, v, {}), "");
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
