// The detail columns' formatting, from hand-filled GpuDetails: each NVML code's text, each enum's word,
// hex widths, units and decimals, CSV and JSON, and a GPU that is down.
#include "export/smi_detail_columns.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "export/gpu_query.h"
#include "export/gpu_query_csv.h"
#include "export/gpu_query_json.h"
#include "export/sample_gpus.h"

namespace gpuscope::exporter {
namespace {

using model::Answer;
using model::GpuDetails;

DetailColumn sdt_col(std::string_view name) {
  auto c = detail_column_by_name(name);
  EXPECT_TRUE(c.has_value()) << name;
  return c.value_or(DetailColumn{});
}

// The CSV text of `name` for `d`, with units.
std::string sdt_text(std::string_view name, const GpuDetails& d, bool units = true) {
  const DetailColumn c = sdt_col(name);
  return detail_csv_text(c, detail_cell(c, d), units);
}

template <class T>
Answer<T> sdt_ok(T v) {
  Answer<T> a;
  a.value = v;
  a.error = 0;
  return a;
}

template <class T>
Answer<T> sdt_failed(int code) {
  Answer<T> a;
  a.error = code;
  return a;
}

TEST(SmiDetailColumns, EachNvmlCodeHasNvidiaSmisText) {
  GpuDetails d;
  // Never read (13: the library lacks the function) and not supported both print [N/A].
  EXPECT_EQ(sdt_text("accounting.mode", d), "[N/A]");
  d.accounting_mode = sdt_failed<int>(3);
  EXPECT_EQ(sdt_text("accounting.mode", d), "[N/A]");
  d.accounting_mode = sdt_failed<int>(15);
  EXPECT_EQ(sdt_text("accounting.mode", d), "[GPU is lost]");
  d.accounting_mode = sdt_failed<int>(999);
  EXPECT_EQ(sdt_text("accounting.mode", d), "[Unknown Error]");
  d.accounting_mode = sdt_failed<int>(4);
  EXPECT_EQ(sdt_text("accounting.mode", d), "[Insufficient Permissions]");
  d.power_default_limit_mw = sdt_failed<std::uint32_t>(26);
  EXPECT_EQ(sdt_text("power.default_limit", d), "[Requested functionality has been deprecated]");
  EXPECT_EQ(detail_error_text(13), "[N/A]");
  // nvidia-smi 580 prints display_mode as deprecated whatever NVML answers (display_attached replaced it).
  d.display_mode = sdt_ok(1);
  EXPECT_EQ(sdt_text("display_mode", d), "[Requested functionality has been deprecated]");
  EXPECT_EQ(sdt_text("display_attached", d), "Yes");
  d.display_mode = sdt_ok(0);
  EXPECT_EQ(sdt_text("display_attached", d), "No");
}

TEST(SmiDetailColumns, EnumsPrintNvidiaSmisWords) {
  GpuDetails d;
  const std::pair<int, const char*> compute[] = {{0, "Default"}, {1, "Exclusive_Thread"}, {2, "Prohibited"}, {3, "Exclusive_Process"}};
  for (const auto& [v, word] : compute) {
    d.compute_mode = sdt_ok(v);
    EXPECT_EQ(sdt_text("compute_mode", d), word);
  }
  d.persistence_mode = sdt_ok(1);
  d.display_active = sdt_ok(0);
  d.power_management_mode = sdt_ok(1);
  EXPECT_EQ(sdt_text("persistence_mode", d), "Enabled");
  EXPECT_EQ(sdt_text("display_active", d), "Disabled");
  EXPECT_EQ(sdt_text("power.management", d), "Enabled");
  d.ecc_mode = sdt_ok(model::ModePair{1, 0});
  d.mig_mode = sdt_ok(model::ModePair{0, 1});
  d.gsp_mode = sdt_ok(model::ModePair{1, 0});
  EXPECT_EQ(sdt_text("ecc.mode.current", d), "Enabled");
  EXPECT_EQ(sdt_text("ecc.mode.pending", d), "Disabled");
  EXPECT_EQ(sdt_text("mig.mode.current", d), "Disabled");
  EXPECT_EQ(sdt_text("mig.mode.pending", d), "Enabled");
  EXPECT_EQ(sdt_text("gsp.mode.default", d), "Disabled");
  d.gpu_operation_mode = sdt_ok(model::ModePair{0, 2});
  EXPECT_EQ(sdt_text("gom.current", d), "All On");
  EXPECT_EQ(sdt_text("gom.pending", d), "Low Double Precision");
  d.driver_model = sdt_ok(model::ModePair{0, 1});
  EXPECT_EQ(sdt_text("driver_model.current", d), "WDDM");
  EXPECT_EQ(sdt_text("driver_model.pending", d), "TCC");
  const char* addressing[] = {"None", "HMM", "ATS"};
  for (std::uint32_t v = 0; v < 3; ++v) {
    d.addressing_mode = sdt_ok(v);
    EXPECT_EQ(sdt_text("addressing_mode", d), addressing[v]);
  }
  const char* recovery[] = {"None", "Reset", "Reboot", "Drain P2P", "Drain and Reset"};
  for (std::uint32_t v = 0; v < 5; ++v) {
    d.gpu_recovery_action = sdt_ok(v);
    EXPECT_EQ(sdt_text("gpu_recovery_action", d), recovery[v]);
  }
  d.inforom_validation = 0;
  EXPECT_EQ(sdt_text("inforom.checksum_validation", d), "valid");
  d.inforom_validation = 14;  // CORRUPTED_INFOROM
  EXPECT_EQ(sdt_text("inforom.checksum_validation", d), "invalid");
  d.inforom_validation = 3;
  EXPECT_EQ(sdt_text("inforom.checksum_validation", d), "[N/A]");
  d.remap_inactive = sdt_ok(model::RemapInactive{3, 1});
  EXPECT_EQ(sdt_text("remapped_rows.correctable_inactive", d), "3");
  EXPECT_EQ(sdt_text("remapped_rows.uncorrectable_inactive", d), "1");
}

TEST(SmiDetailColumns, ClockEventReasonsAreBitsOfTheActiveMask) {
  GpuDetails d;
  d.clocks_event_reasons_supported = sdt_ok<std::uint64_t>(0x1FF);
  d.clocks_event_reasons_active = sdt_ok<std::uint64_t>(0x4 | 0x20);  // sw power cap, sw thermal
  EXPECT_EQ(sdt_text("clocks_event_reasons.supported", d), "0x00000000000001FF");
  const std::pair<const char*, const char*> expected[] = {
      {"gpu_idle", "Not Active"},     {"applications_clocks_setting", "Not Active"}, {"sw_power_cap", "Active"},
      {"hw_slowdown", "Not Active"},  {"hw_thermal_slowdown", "Not Active"},          {"hw_power_brake_slowdown", "Not Active"},
      {"sw_thermal_slowdown", "Active"}, {"sync_boost", "Not Active"}};
  for (const auto& [reason, word] : expected) {
    EXPECT_EQ(sdt_text(std::string("clocks_event_reasons.") + reason, d), word) << reason;
  }
  // A reason the GPU cannot report is not "Not Active".
  d.clocks_event_reasons_supported = sdt_ok<std::uint64_t>(0x1FF & ~0x10ULL);
  EXPECT_EQ(sdt_text("clocks_event_reasons.sync_boost", d), "[N/A]");
  // Counters: NVML's ns as whole µs.
  d.clocks_event_ns[0] = sdt_ok<std::uint64_t>(42'000'999'999ULL);
  EXPECT_EQ(sdt_text("clocks_event_reasons_counters.sw_power_cap", d), "42000999 us");
  EXPECT_EQ(sdt_text("clocks_event_reasons_counters.sw_power_cap", d, false), "42000999");
  d.clocks_event_ns[4] = sdt_ok<std::uint64_t>(999);
  EXPECT_EQ(sdt_text("clocks_event_reasons_counters.hw_power_brake_slowdown", d), "0 us");
}

TEST(SmiDetailColumns, PciIdsAreUpperCaseHexOfNvidiaSmisWidths) {
  GpuDetails d;
  d.pci = sdt_ok(model::PciIds{0x1, 0x1a, 0x6, 0x233010de, 0x16c110de});
  EXPECT_EQ(sdt_text("pci.domain", d), "0x0001");
  EXPECT_EQ(sdt_text("pci.bus", d), "0x1A");
  EXPECT_EQ(sdt_text("pci.device", d), "0x06");
  EXPECT_EQ(sdt_text("pci.device_id", d), "0x233010DE");
  EXPECT_EQ(sdt_text("pci.sub_device_id", d), "0x16C110DE");
  model::PlatformInfo p;
  p.ib_guid = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0xAB};
  p.peer_type = 1;
  p.host_id = 3;
  d.platform = sdt_ok(p);
  EXPECT_EQ(sdt_text("platform.gpu_fabric_guid", d), "0x00112233445566AB");
  EXPECT_EQ(sdt_text("platform.peer_type", d), "Switch Connected");
  EXPECT_EQ(sdt_text("platform.host_id", d), "3");
  EXPECT_EQ(sdt_text("platform.chassis_serial_number", d), "");
}

TEST(SmiDetailColumns, PowerClocksAndMemoryCarryUnitsAndDecimals) {
  GpuDetails d;
  d.power_average_mw = sdt_ok<std::uint32_t>(71145);
  d.power_min_limit_mw = sdt_ok<std::uint32_t>(200000);
  d.module_power_instant_mw = sdt_ok<std::uint32_t>(5);
  EXPECT_EQ(sdt_text("power.draw.average", d), "71.14 W");  // 71.145 rounds as printf does
  EXPECT_EQ(sdt_text("power.draw.average", d, false), "71.14");
  EXPECT_EQ(sdt_text("power.min_limit", d), "200.00 W");
  EXPECT_EQ(sdt_text("module.power.draw.instant", d), "0.01 W");
  EXPECT_EQ(sdt_text("module.power.limit", d), "[N/A]");
  d.applications_clock_memory = sdt_ok<std::uint32_t>(2619);
  EXPECT_EQ(sdt_text("clocks.applications.memory", d), "2619 MHz");
  d.jpg_util = sdt_ok<std::uint32_t>(7);
  EXPECT_EQ(sdt_text("utilization.jpeg", d), "7 %");
  d.protected_memory = sdt_ok(model::MemoryBytes{3ULL << 30, (1ULL << 20) + 5, (3ULL << 30) - (1ULL << 20) - 5});
  EXPECT_EQ(sdt_text("protected_memory.total", d), "3072 MiB");
  EXPECT_EQ(sdt_text("protected_memory.used", d), "1 MiB");
  EXPECT_EQ(sdt_text("protected_memory.free", d, false), "3070");
  d.temperature_margin = sdt_ok(-3);
  EXPECT_EQ(sdt_text("temperature.gpu.tlimit", d), "-3");
  d.power_smoothing_floors[0] = sdt_ok<std::uint64_t>(350);
  d.power_smoothing_floors[4] = sdt_ok<std::uint64_t>(5);
  d.power_smoothing_floors[5] = sdt_ok<std::uint64_t>(1);
  EXPECT_EQ(sdt_text("power_smoothing.primary_power_floor", d), "350.00 W");
  EXPECT_EQ(sdt_text("power_smoothing.window_multiplier", d), "5 ms");
  EXPECT_EQ(sdt_text("power_smoothing.delayed_power_smoothing_supported", d), "Supported");
}

TEST(SmiDetailColumns, FabricPrintsBareNaWithoutAFabric) {
  GpuDetails d;
  d.fabric = sdt_failed<model::FabricInfo>(3);
  for (const char* name : {"fabric.state", "fabric.status", "fabric.health.summary", "fabric.health.bandwidth"}) {
    EXPECT_EQ(sdt_text(name, d), "N/A") << name;
  }
  model::FabricInfo f;
  f.state = 0;  // the call succeeds, the GPU has no fabric (a single H100)
  d.fabric = sdt_ok(f);
  EXPECT_EQ(sdt_text("fabric.state", d), "N/A");
  f.state = 3;
  f.status = 0;
  f.health_summary = 2;
  // bandwidth degraded (1), route recovery false (2), route unhealthy true (1), access timeout n/a (0),
  // incorrect configuration "no partition" (4), partition assigned true (1).
  f.health_mask = 1U | (2U << 2) | (1U << 4) | (0U << 6) | (4U << 8) | (1U << 12);
  d.fabric = sdt_ok(f);
  EXPECT_EQ(sdt_text("fabric.state", d), "Completed");
  EXPECT_EQ(sdt_text("fabric.status", d), "Success");
  EXPECT_EQ(sdt_text("fabric.health.summary", d), "Unhealthy");
  EXPECT_EQ(sdt_text("fabric.health.bandwidth", d), "Degraded");
  EXPECT_EQ(sdt_text("fabric.health.route_recovery_in_progress", d), "False");
  EXPECT_EQ(sdt_text("fabric.health.route_unhealthy", d), "True");
  EXPECT_EQ(sdt_text("fabric.health.access_timeout_recovery", d), "N/A");
  EXPECT_EQ(sdt_text("fabric.health.incorrect_configuration", d), "No Partition");
  EXPECT_EQ(sdt_text("fabric.health.partition_assigned", d), "True");
  f.state = 2;
  d.fabric = sdt_ok(f);
  EXPECT_EQ(sdt_text("fabric.state", d), "In Progress");
  EXPECT_EQ(sdt_text("fabric.status", d), "N/A");
  d.fabric = sdt_failed<model::FabricInfo>(999);
  EXPECT_EQ(sdt_text("fabric.state", d), "[Unknown Error]");
}

TEST(SmiDetailColumns, EccByLocationAndSram) {
  GpuDetails d;
  d.ecc_errors[1][1][static_cast<std::size_t>(model::EccLocation::kDram)] = sdt_ok<std::uint64_t>(7);
  d.ecc_errors[0][0][static_cast<std::size_t>(model::EccLocation::kCbu)] = sdt_failed<std::uint64_t>(3);
  EXPECT_EQ(sdt_text("ecc.errors.uncorrected.aggregate.dram", d), "7");
  EXPECT_EQ(sdt_text("ecc.errors.uncorrected.volatile.dram", d), "[N/A]");
  EXPECT_EQ(sdt_text("ecc.errors.corrected.volatile.cbu", d), "[N/A]");
  model::SramEccStatus s;
  s.volatile_uncorrected_parity = 1;
  s.aggregate_uncorrected_secded = 2;
  s.aggregate_bucket_mcu = 3;
  s.aggregate_bucket_other = 4;
  d.sram_ecc = sdt_ok(s);
  EXPECT_EQ(sdt_text("ecc.errors.uncorrected.volatile.sram.parity", d), "1");
  EXPECT_EQ(sdt_text("ecc.errors.uncorrected.aggregate.sram.secded", d), "2");
  EXPECT_EQ(sdt_text("ecc.errors.uncorrected.aggregate.sram.mcu", d), "3");
  EXPECT_EQ(sdt_text("ecc.errors.uncorrected.aggregate.sram.other", d), "4");
  EXPECT_EQ(sdt_text("ecc.errors.uncorrected.aggregate.sram.sm", d), "0");
}

// The 188 names nvidia-smi 580 accepts for --query-gpu, as the real tool listed them.
std::vector<std::string> sdt_real_names() {
  std::ifstream in(std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi-query-gpu-fields.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

TEST(SmiDetailColumns, EveryNvidiaSmiNameParsesAndIsListed) {
  const auto real = sdt_real_names();
  ASSERT_EQ(real.size(), 188u);
  const auto listed = gpu_query_names();
  const std::set<std::string> listed_set(listed.begin(), listed.end());
  EXPECT_EQ(listed.size(), listed_set.size()) << "a name is listed twice";
  for (const auto& name : real) {
    auto cols = parse_gpu_query(name);
    ASSERT_TRUE(cols.has_value()) << name;
    EXPECT_EQ((*cols)[0].name, name);
    EXPECT_TRUE(listed_set.contains(name)) << name;
  }
  EXPECT_EQ(listed.size(), real.size());
  const std::string help = gpu_query_help();
  for (const auto& name : real) EXPECT_NE(help.find("\"" + name + "\""), std::string::npos) << name;
}

TEST(SmiDetailColumns, AliasesResolveToNvidiaSmisName) {
  auto cols = parse_gpu_query("clocks_throttle_reasons.sw_power_cap,inforom.image,gpu_operation_mode.current,clocks.applications.mem,retired_pages.sbe");
  ASSERT_TRUE(cols.has_value());
  EXPECT_EQ((*cols)[0].name, "clocks_event_reasons.sw_power_cap");
  EXPECT_EQ((*cols)[1].name, "inforom.img");
  EXPECT_EQ((*cols)[2].name, "gom.current");
  EXPECT_EQ((*cols)[3].name, "clocks.applications.memory");
  EXPECT_EQ((*cols)[4].name, "retired_pages.single_bit_ecc.count");
  EXPECT_TRUE(needs_details(*cols));
  EXPECT_FALSE(needs_details(*parse_gpu_query("index,retired_pages.sbe,power.draw")));
  EXPECT_NE(gpu_query_help().find("\"clocks_event_reasons.sync_boost\" or \"clocks_throttle_reasons.sync_boost\""),
            std::string::npos);
}

class SmiDetailRender : public ::testing::Test {
 protected:
  void SetUp() override {
    details.resize(1);
    details[0].pci = sdt_ok(model::PciIds{0, 0x18, 0, 0x233010de, 0x16c110de});
    details[0].power_max_limit_mw = sdt_ok<std::uint32_t>(700000);
    details[0].persistence_mode = sdt_ok(1);
    details[0].hostname = sdt_failed<std::string>(3);
    details[0].inforom_image = sdt_failed<std::string>(999);
  }
  std::vector<GpuColumn> cols(std::string_view names) {
    auto c = parse_gpu_query(names);
    EXPECT_TRUE(c.has_value());
    return c.value_or(std::vector<GpuColumn>{});
  }
  model::SystemInfo system = testing::sample_system();
  model::GpuInfo info = testing::h100_info();
  model::GpuSample sample = testing::h100_sample();
  std::vector<model::GpuDetails> details;
};

TEST_F(SmiDetailRender, CsvHeaderAndRowsMixDetailAndCatalogColumns) {
  const auto c = cols("index,pci.device_id,power.max_limit,temperature.gpu,persistence_mode,hostname,inforom.img");
  EXPECT_EQ(gpu_query_csv_header(c),
            "index, pci.device_id, power.max_limit [W], temperature.gpu, persistence_mode, hostname, inforom.img\n");
  QueryContext ctx{system, testing::sample_time(), 1};
  std::vector<GpuView> views{{info, sample}};
  EXPECT_EQ(gpu_query_csv_rows(c, ctx, views, {}, details),
            "0, 0x233010DE, 700.00 W, 45, Enabled, [N/A], [Unknown Error]\n");
  EXPECT_EQ(gpu_query_csv_rows(c, ctx, views, {.header = false, .units = false}, details),
            "0, 0x233010DE, 700.00, 45, Enabled, [N/A], [Unknown Error]\n");
  // Without details (not read) the detail columns have nothing to show.
  EXPECT_EQ(gpu_query_csv_rows(c, ctx, views, {}), "0, [N/A], [N/A], 45, [N/A], [N/A], [N/A]\n");
}

TEST_F(SmiDetailRender, ADownGpuPrintsItsErrorInDetailColumns) {
  sample.up = false;
  sample.down_error_code = 15;
  const auto c = cols("index,pci.domain,display_mode,fabric.state");
  QueryContext ctx{system, testing::sample_time(), 1};
  std::vector<GpuView> views{{info, sample}};
  EXPECT_EQ(gpu_query_csv_rows(c, ctx, views, {}, details), "0, [GPU is lost], [GPU is lost], [GPU is lost]\n");
  const auto doc = gpu_query_json(c, ctx, views, details);
  EXPECT_EQ(doc["gpus"][0]["errors"]["pci.domain"], "GPU is lost");
  EXPECT_EQ(doc["gpus"][0]["errors"]["fabric.state"], "GPU is lost");
}

TEST_F(SmiDetailRender, JsonHasNumbersWithUnitsWordsAsStringsAndNoUnsupported) {
  const auto c = cols("power.max_limit,pci.device_id,persistence_mode,hostname,inforom.img,display_mode");
  QueryContext ctx{system, testing::sample_time(), 1};
  std::vector<GpuView> views{{info, sample}};
  const auto doc = gpu_query_json(c, ctx, views, details);
  const auto& row = doc["gpus"][0];
  EXPECT_EQ(row["power.max_limit_watts"], 700);
  details[0].temperature_margin = sdt_ok(47);
  EXPECT_EQ(gpu_query_json(cols("temperature.gpu.tlimit"), ctx, views, details)["gpus"][0]["temperature.gpu.tlimit_celsius"], 47);
  EXPECT_EQ(row["pci.device_id"], "0x233010DE");
  EXPECT_EQ(row["persistence_mode"], "Enabled");
  EXPECT_FALSE(row.contains("hostname"));
  EXPECT_FALSE(row["errors"].contains("hostname"));
  EXPECT_EQ(row["errors"]["inforom.img"], "Unknown Error");
  EXPECT_EQ(row["errors"]["display_mode"], "Requested functionality has been deprecated");
}

}  // namespace
}  // namespace gpuscope::exporter
