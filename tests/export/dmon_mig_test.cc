// dmon on a GPU in MIG mode: one row per GPU instance under its GPU, in nvidia-smi's and dcgmi's layouts.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "export/dcgmi_dmon_table.h"
#include "export/dmon_table.h"
#include "export/mig_instance_rows.h"
#include "export/sample_mig_gpus.h"

namespace gpuscope::exporter {
namespace {

using namespace std::chrono_literals;

DmonTable dmon_mig_table(std::string_view letters) {
  auto t = DmonTable::from_groups(letters);
  EXPECT_TRUE(t.has_value()) << letters;
  return t.value_or(*DmonTable::from_groups("p"));
}

std::string dmon_mig_cells(const char* cell, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += fmt::format(" {:>6}", cell);
  return out;
}

std::string dmon_mig_spaces(std::size_t n) { return std::string(n, ' '); }

TEST(DmonMig, InstanceIdIsGpuSlashGpuInstance) {
  EXPECT_EQ(mig_instance_id(0, 1), "0/1");
  EXPECT_EQ(mig_instance_id(7, 13), "7/13");
}

TEST(DmonMig, OneRowPerGpuInstanceEvenWithSeveralComputeInstances) {
  auto sample = testing::h100_mig_sample();
  auto second_ci = testing::mig_3g(2);
  second_ci.compute_instance_id = 1;
  sample.mig_instances.push_back(second_ci);
  const auto rows = gpu_instances_of(sample);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]->gpu_instance_id, 1u);
  EXPECT_EQ(rows[1]->gpu_instance_id, 13u);
  sample.mig_enabled = false;  // MIG turned off: stale instances are not shown
  EXPECT_TRUE(gpu_instances_of(sample).empty());
}

TEST(DmonMig, InstanceRowHasItsMemoryAndDashesElsewhere) {
  const auto info = testing::h100_mig_info();
  const auto sample = testing::h100_mig_sample();
  const auto t = dmon_mig_table("um");  // sm mem enc dec jpg ofa | fb bar1 ccpm
  // The MIG GPU itself: no utilization rates (NVML does not give them in MIG mode), the whole GPU's fb.
  EXPECT_EQ(t.row({info, sample}, nullptr, 1s),
            "    0" + dmon_mig_cells("-", 2) + dmon_mig_cells("0", 2) + dmon_mig_cells("-", 2) + "  61234" +
                dmon_mig_cells("-", 2) + " \n");
  EXPECT_EQ(t.instance_row({}, {}, {info, sample}, sample.mig_instances[0]),
            "  0/1" + dmon_mig_cells("-", 6) + "  10240" + dmon_mig_cells("-", 2) + " \n");
  EXPECT_EQ(t.instance_row({}, {}, {info, sample}, sample.mig_instances[1]),
            " 0/13" + dmon_mig_cells("-", 6) + "      0" + dmon_mig_cells("-", 2) + " \n");
}

TEST(DmonMig, InstanceViolationsAreDashNotTheFirstRowsZero) {
  const auto info = testing::h100_mig_info();
  const auto sample = testing::h100_mig_sample();
  const auto t = dmon_mig_table("v");
  EXPECT_EQ(t.row({info, sample}, nullptr, 1s), "    0      0      0 \n");
  EXPECT_EQ(t.instance_row({}, {}, {info, sample}, sample.mig_instances[0]), "  0/1      -      - \n");
}

TEST(DmonMig, InstanceOfALostGpuIsAllDashes) {
  const auto info = testing::h100_mig_info();
  auto sample = testing::h100_mig_sample();
  sample.up = false;
  EXPECT_EQ(dmon_mig_table("m").instance_row({}, {}, {info, sample}, sample.mig_instances[0]),
            "  0/1      -      -      - \n");
}

TEST(DmonMig, CsvInstanceRowNamesItInTheGpuColumn) {
  const auto info = testing::h100_mig_info();
  const auto sample = testing::h100_mig_sample();
  DmonLayout csv;
  csv.csv = true;
  EXPECT_EQ(dmon_mig_table("m").instance_row(csv, {}, {info, sample}, sample.mig_instances[0]), " 0/1, 10240, -, -\n");
}

TEST(DmonMig, JsonRowCarriesTheInstancesAsObjects) {
  const auto info = testing::h100_mig_info();
  const auto sample = testing::h100_mig_sample();
  EXPECT_EQ(dmon_mig_table("um").row_json({info, sample}, nullptr, 1s).dump(),
            R"({"index":0,"enc_percent":0,"dec_percent":0,"fb_mib":61234,"mig_instances":[)"
            R"({"id":"0/1","gpu_instance_id":1,"profile":"3g.40gb","fb_mib":10240},)"
            R"({"id":"0/13","gpu_instance_id":13,"profile":"1g.10gb","fb_mib":0}]})");
  // A GPU outside MIG mode has no mig_instances key at all.
  EXPECT_EQ(dmon_mig_table("m").row_json({info, testing::h100_sample()}, nullptr, 1s).dump(),
            R"({"index":0,"fb_mib":61234})");
}

// dcgmi's cells: entity 14 + 2, FBUSD 10 + 8, SMACT and TMPTR 5 + 8.
TEST(DmonMig, DcgmiRowsNameTheGpuInstanceAndHaveItsOwnFieldsOnly) {
  auto t = DcgmiDmonTable::from_ids("252,1002,150");
  ASSERT_TRUE(t.has_value());
  const auto info = testing::h100_mig_info();
  const auto sample = testing::h100_mig_sample();
  EXPECT_EQ(t->instance_row({info, sample}, sample.mig_instances[0]),
            "GPU-I 0/1" + dmon_mig_spaces(7) + "10240" + dmon_mig_spaces(13) + "0.620" + dmon_mig_spaces(8) + "N/A" +
                dmon_mig_spaces(10) + "\n");
  EXPECT_EQ(t->instance_row({info, sample}, sample.mig_instances[1]),
            "GPU-I 0/13" + dmon_mig_spaces(6) + "0" + dmon_mig_spaces(17) + "N/A" + dmon_mig_spaces(10) + "N/A" +
                dmon_mig_spaces(10) + "\n");
}

}  // namespace
}  // namespace gpuscope::exporter
