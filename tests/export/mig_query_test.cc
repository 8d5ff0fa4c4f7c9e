// `query --query-mig`: one CSV row or JSON object per MIG device, from a hand-built MIG H100.
#include "export/mig_query.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "export/sample_mig_gpus.h"

namespace gpuscope::exporter {
namespace {

std::vector<const MigColumn*> mig_query_columns(std::string_view names) {
  auto c = parse_mig_query(names);
  EXPECT_TRUE(c.has_value()) << names;
  return c.value_or(std::vector<const MigColumn*>{});
}

struct MigQueryNode {
  model::SystemInfo system = testing::sample_system();
  std::vector<model::GpuInfo> infos{testing::h100_mig_info(0), testing::h100_info(1)};
  std::vector<model::GpuSample> samples{testing::h100_mig_sample(0), testing::h100_sample(1)};
  std::vector<GpuView> views() const { return {{infos[0], samples[0]}, {infos[1], samples[1]}}; }
  QueryContext context() const { return {system, testing::sample_time(), 2}; }
};

constexpr std::string_view kMigQueryAll =
    "gpu_index,mig.index,gpu_instance_id,compute_instance_id,profile,uuid,sm_count,memory.total,memory.used,"
    "memory.free,sm_active,tensor_active,pod";

TEST(MigQuery, CsvHasOneRowPerMigDeviceWithUnitsAndNA) {
  const MigQueryNode node;
  const auto columns = mig_query_columns(kMigQueryAll);
  EXPECT_EQ(mig_query_csv_header(columns),
            "gpu_index, mig.index, gpu_instance_id, compute_instance_id, profile, uuid, sm_count, memory.total [MiB], "
            "memory.used [MiB], memory.free [MiB], sm_active, tensor_active, pod\n");
  // GPU 1 is not in MIG mode: no rows. The 1g.10gb has no GPM ratio yet and no pod: [N/A].
  EXPECT_EQ(mig_query_csv_rows(columns, node.context(), node.views(), {}),
            "0, 0, 1, 0, 3g.40gb, MIG-11111111-aaaa-5bbb-8ccc-000000000001, 60, 40192 MiB, 10240 MiB, 29952 MiB, "
            "0.62, 0.45, trainer-0\n"
            "0, 1, 13, 0, 1g.10gb, MIG-22222222-aaaa-5bbb-8ccc-000000000002, 16, 9728 MiB, 0 MiB, 9728 MiB, "
            "[N/A], [N/A], [N/A]\n");
}

TEST(MigQuery, NoUnitsDropsThemFromValuesOnly) {
  const MigQueryNode node;
  CsvStyle style;
  style.units = false;
  const auto columns = mig_query_columns("memory.used,dram_active,graphics_active,fp16_active,sm_occupancy");
  const auto views = node.views();
  EXPECT_EQ(mig_query_csv_rows(columns, node.context(), views, style),
            "10240, 0.27, 0.70, 0.33, 0.31\n0, [N/A], [N/A], [N/A], [N/A]\n");
}

TEST(MigQuery, GpuDownOrOutOfMigModeHasNoRows) {
  MigQueryNode node;
  const auto columns = mig_query_columns("gpu_index,uuid");
  node.samples[0].up = false;
  EXPECT_EQ(mig_query_csv_rows(columns, node.context(), node.views(), {}), "");
  node.samples[0].up = true;
  node.samples[0].mig_enabled = false;
  EXPECT_EQ(mig_query_csv_rows(columns, node.context(), node.views(), {}), "");
}

TEST(MigQuery, JsonIsNumericWithUnitsInKeysAndAbsentValuesLeftOut) {
  const MigQueryNode node;
  const auto columns = mig_query_columns("timestamp,gpu_index,mig.index,profile,memory.used,sm_active,pod");
  EXPECT_EQ(mig_query_json(columns, node.context(), node.views()).dump(),
            R"({"timestamp":"2026-01-01T00:10:00.000Z","timestamp_unix_seconds":1767226200.0,"mig_devices":[)"
            R"({"gpu_index":0,"mig.index":0,"profile":"3g.40gb","memory.used_mib":10240,"sm_active_ratio":0.62,)"
            R"("pod":"trainer-0"},)"
            R"({"gpu_index":0,"mig.index":1,"profile":"1g.10gb","memory.used_mib":0}]})");
}

TEST(MigQuery, UnknownAndEmptyNamesAreNamed) {
  auto bad = parse_mig_query("gpu_index,mig.uuid");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().name, "mig.uuid");
  auto empty = parse_mig_query("gpu_index,,uuid");
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().name, "");
}

TEST(MigQuery, HelpNamesEveryFieldTheBriefListsWithUnits) {
  const std::string help = mig_query_help();
  for (std::string_view name : {"gpu_index", "gpu_uuid", "mig.index", "gpu_instance_id", "compute_instance_id", "profile",
                                "uuid", "sm_count", "memory.total [MiB]", "memory.used [MiB]", "memory.free [MiB]",
                                "sm_active", "sm_occupancy", "tensor_active", "dram_active", "graphics_active",
                                "fp64_active", "fp32_active", "fp16_active"}) {
    EXPECT_NE(help.find(fmt::format("\n  {} ", name)), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace gpuscope::exporter
