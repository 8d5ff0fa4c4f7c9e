// `query -q`'s MIG Devices section, from the hand-built MIG H100.
#include <gtest/gtest.h>

#include <string>

#include "export/sample_mig_gpus.h"
#include "export/smi_q_report.h"

namespace gpuscope::exporter {
namespace {

struct SmiQMigNode {
  model::SystemInfo system = testing::sample_system();
  model::GpuInfo info = testing::h100_mig_info();
  model::GpuSample sample = testing::h100_mig_sample();
  model::GpuDetails details;
  SmiQInput input() const { return {system, testing::sample_time(), 1, {SmiQGpu{info, sample, details}}}; }
};

// nvidia-smi -q's line: the key indented 4 per level and padded to 54, then " : value".
std::string smi_q_mig_line(std::size_t depth, const std::string& key, const std::string& value) {
  const std::string k = std::string(depth * 4, ' ') + key;
  return k + std::string(54 - k.size(), ' ') + " : " + value + "\n";
}

std::string smi_q_mig_device(const std::string& index, const std::string& gi, const std::string& sms,
                             const std::string& total, const std::string& reserved, const std::string& used,
                             const std::string& free) {
  auto l = smi_q_mig_line;
  return "        MIG Device\n" + l(3, "Index", index) + l(3, "GPU Instance ID", gi) + l(3, "Compute Instance ID", "0") +
         "            Device Attributes\n" + "                Shared\n" + l(5, "Multiprocessor count", sms) +
         l(5, "Copy Engine count", "N/A") + l(5, "Encoder count", "N/A") + l(5, "Decoder count", "N/A") +
         l(5, "OFA count", "N/A") + l(5, "JPG count", "N/A") + "            ECC Errors\n" + "                Volatile\n" +
         l(5, "SRAM Uncorrectable", "N/A") + "            FB Memory Usage\n" + l(4, "Total", total) +
         l(4, "Reserved", reserved) + l(4, "Used", used) + l(4, "Free", free) + "            BAR1 Memory Usage\n" +
         l(4, "Total", "N/A") + l(4, "Used", "N/A") + l(4, "Free", "N/A");
}

TEST(SmiQMig, EachMigDeviceGetsABlockAfterMigModeWithWhatGpuscopeReads) {
  const SmiQMigNode node;
  const std::string text = smi_q_text(node.input());
  const std::string block = "    MIG Devices\n" +
                            smi_q_mig_device("0", "1", "60", "40192 MiB", "0 MiB", "10240 MiB", "29952 MiB") +
                            smi_q_mig_device("1", "13", "16", "9728 MiB", "N/A", "0 MiB", "9728 MiB") +
                            "    Accounting Mode";
  EXPECT_NE(text.find(block), std::string::npos) << text;
  EXPECT_LT(text.find("    MIG Mode\n"), text.find("    MIG Devices\n"));
}

TEST(SmiQMig, JsonHasTheDevicesAsAnArrayWithUnitsInKeys) {
  const SmiQMigNode node;
  const auto devices = smi_q_json(node.input())["gpus"][0]["mig_devices"];
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0]["index"], 0);
  EXPECT_EQ(devices[0]["gpu_instance_id"], 1);
  EXPECT_EQ(devices[0]["device_attributes"]["shared"]["multiprocessor_count"], 60);
  EXPECT_EQ(devices[0]["fb_memory_usage"]["used_mib"], 10240);
  EXPECT_EQ(devices[1]["gpu_instance_id"], 13);
  EXPECT_EQ(devices[1]["fb_memory_usage"]["total_mib"], 9728);
  EXPECT_FALSE(devices[1]["fb_memory_usage"].contains("reserved_mib"));  // unsupported: absent, never 0
  EXPECT_FALSE(devices[0].contains("bar1_memory_usage"));
}

TEST(SmiQMig, OutsideMigModeThereIsNoSectionAndInMigModeWithoutDevicesItSaysNone) {
  SmiQMigNode node;
  node.sample.mig_enabled = false;
  EXPECT_EQ(smi_q_text(node.input()).find("MIG Devices"), std::string::npos);
  EXPECT_FALSE(smi_q_json(node.input())["gpus"][0].contains("mig_devices"));
  node.sample.mig_enabled = true;
  node.sample.mig_instances.clear();
  EXPECT_NE(smi_q_text(node.input()).find(smi_q_mig_line(1, "MIG Devices", "None")), std::string::npos);
  EXPECT_EQ(smi_q_json(node.input())["gpus"][0]["mig_devices"].dump(), "[]");
}

}  // namespace
}  // namespace gpuscope::exporter
