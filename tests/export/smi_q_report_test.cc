#include "export/smi_q_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::FieldValue;

const std::string kSqRefPath = std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/nvidia-smi-q.txt";

std::vector<std::string> sq_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string sq_read_reference() {
  std::ifstream in(kSqRefPath);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// A line's key path ("PCI/GPU Link Info/Link Width/Max"), from the indentation, and its value.
struct SqRefLine {
  std::string path;
  std::optional<std::string> value;
};

std::vector<SqRefLine> sq_parse(const std::vector<std::string>& lines) {
  std::vector<SqRefLine> out;
  std::vector<std::string> stack;
  for (const auto& line : lines) {
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) {
      out.push_back({"", std::nullopt});
      continue;
    }
    const std::size_t colon = line.find(" : ");
    std::string key = line.substr(indent, colon == std::string::npos ? std::string::npos : colon - indent);
    key.erase(key.find_last_not_of(' ') + 1);
    stack.resize(indent / 4);
    std::string path;
    for (const auto& s : stack) path += s + "/";
    path += key;
    out.push_back({path, colon == std::string::npos ? std::nullopt : std::optional(line.substr(colon + 3))});
    stack.push_back(key);
  }
  return out;
}

// The real H100's state when nvidia-smi-q.txt was taken, as NVML answered it (figures from that file).
struct SqIdleH100 {
  model::SystemInfo system;
  model::GpuInfo info;
  model::GpuSample sample;
  model::GpuDetails details;
  std::chrono::system_clock::time_point time;

  SqIdleH100() {
    system.driver_version = "580.159.04";
    system.cuda_driver_version = 13000;
    // "Wed Nov 25 10:49:46 2026" read as local time, as nvidia-smi printed it.
    std::tm tm{};
    strptime("Wed Nov 25 10:49:46 2026", "%a %b %d %H:%M:%S %Y", &tm);
    tm.tm_isdst = -1;
    time = std::chrono::system_clock::from_time_t(std::mktime(&tm));

    info.index = 0;
    info.minor_number = 0;
    info.name = "NVIDIA H100 80GB HBM3";
    info.uuid = "GPU-c759a157-aadd-4937-dac5-cc2084d9e920";
    info.serial = "1752824024158";
    info.pci_bus_id = "00000000:00:06.0";
    info.vbios_version = "96.00.DA.00.0C";
    info.architecture = 9;

    auto set = [&](FieldId id, double v) { sample[id] = FieldValue::of(v); };
    set(FieldId::kPcieReplay, 1);
    set(FieldId::kPcieTxThroughput, 1732);
    set(FieldId::kPcieRxThroughput, 483);
    set(FieldId::kPstate, 0);
    set(FieldId::kClocksEventReasons, 1);
    set(FieldId::kFbTotal, 81559);
    set(FieldId::kFbReserved, 480);
    set(FieldId::kFbUsed, 0);
    set(FieldId::kFbFree, 81079);
    set(FieldId::kBar1Used, 1);
    for (auto id : {FieldId::kGpuUtil, FieldId::kMemCopyUtil, FieldId::kEncUtil, FieldId::kDecUtil}) set(id, 0);
    for (auto id : {FieldId::kCorrectableRemappedRows, FieldId::kUncorrectableRemappedRows, FieldId::kRowRemapPending,
                    FieldId::kRowRemapFailure}) {
      set(id, 0);
    }
    set(FieldId::kGpuTemp, 48);
    set(FieldId::kMemoryTemp, 50);
    set(FieldId::kEnforcedPowerLimit, 700);
    set(FieldId::kPowerLimit, 700);
    set(FieldId::kGraphicsClock, 345);
    set(FieldId::kSmClock, 345);
    set(FieldId::kMemClock, 2619);
    set(FieldId::kVideoClock, 765);
    set(FieldId::kMaxGraphicsClock, 1980);
    set(FieldId::kMaxSmClock, 1980);
    set(FieldId::kMaxMemClock, 2619);
    // Fan speed and retired pages: NOT_SUPPORTED on this GPU (left unsupported).

    auto& d = details;
    auto ok = [](auto v) { return model::Answer<decltype(v)>{v, 0}; };
    auto unsupported = [](auto& a) { a.error = 3; };
    d.brand = ok(14);
    d.display_mode = ok(1);
    d.display_active = ok(0);
    d.persistence_mode = ok(1);
    d.addressing_mode = ok(0u);
    d.mig_mode = ok(model::ModePair{0, 0});
    d.accounting_mode = ok(0);
    d.accounting_buffer_size = ok(4000u);
    unsupported(d.driver_model);
    d.multi_gpu_board = ok(0u);
    d.board_id = ok(6u);
    d.board_part_number = ok(std::string("695-2G520-0200-000"));
    unsupported(d.platform);
    d.module_id = ok(7u);
    d.inforom_image = ok(std::string("G520.0200.00.05"));
    d.inforom_oem = ok(std::string("2.1"));
    d.inforom_ecc = ok(std::string("7.16"));
    unsupported(d.inforom_power);
    unsupported(d.gpu_operation_mode);
    d.virtualization_mode = ok(1);
    unsupported(d.host_vgpu_mode);
    d.gpu_recovery_action = ok(0u);
    d.gsp_firmware_version = ok(std::string("580.159.04"));
    d.pci = ok(model::PciIds{0, 0, 6, 0x233010DE, 0x16C110DE});
    d.pcie_gen_max = ok(5u);
    d.pcie_gen_current = ok(5u);
    d.pcie_gen_gpu_max = ok(5u);
    d.pcie_width_max = ok(16u);
    d.pcie_width_current = ok(16u);
    d.clocks_event_reasons_supported = ok(std::uint64_t{0x1FF});
    d.clocks_event_reasons_active = ok(std::uint64_t{1});
    for (auto& c : d.clocks_event_ns) c = ok(std::uint64_t{0});
    d.protected_memory = ok(model::MemoryBytes{0, 0, 0});
    d.compute_mode = ok(0);
    d.jpg_util = ok(0u);
    d.ofa_util = ok(0u);
    d.ecc_mode = ok(model::ModePair{1, 1});
    for (auto& by_kind : d.ecc_errors) {
      for (auto& by_scope : by_kind) {
        for (auto& count : by_scope) count = ok(std::uint64_t{0});
      }
    }
    d.sram_ecc = ok(model::SramEccStatus{});
    d.remap_histogram = ok(model::RemapHistogram{2560, 0, 0, 0, 0});
    d.remap_inactive = ok(model::RemapInactive{0, 0});
    d.temperature_margin = ok(39);
    d.power_average_mw = ok(84930u);
    d.power_instant_mw = ok(73970u);
    d.power_default_limit_mw = ok(700000u);
    d.power_min_limit_mw = ok(200000u);
    d.power_max_limit_mw = ok(700000u);
    for (auto* a : {&d.module_power_average_mw, &d.module_power_instant_mw, &d.module_power_limit_mw,
                    &d.module_enforced_power_limit_mw, &d.module_power_default_limit_mw, &d.module_power_min_limit_mw,
                    &d.module_power_max_limit_mw}) {
      unsupported(*a);
    }
    d.applications_clock_graphics = ok(1980u);
    d.applications_clock_memory = ok(2619u);
    d.default_applications_clock_graphics = ok(1980u);
    d.default_applications_clock_memory = ok(2619u);
    d.max_customer_boost_graphics = ok(1980u);
    d.max_video_clock = ok(1545u);
    d.bar1 = ok(model::MemoryBytes{131072ULL << 20, 1ULL << 20, 131071ULL << 20});
    d.temperature_tlimit = {ok(std::int64_t{-8}), ok(std::int64_t{-2}), ok(std::int64_t{0}), ok(std::int64_t{0})};
    unsupported(d.fabric);
    // The real H100's answers (nvml_answers.json: C2C off; nvidia-smi-q.txt: the rest).
    d.c2c_enabled = ok(false);
    d.pci_class = ok(model::PciClass{0x3, 0x2});
    d.pcie_replay_rollovers = ok(std::uint64_t{0});
    d.encoder_stats = ok(model::SessionStats{});
    d.fbc_stats = ok(model::SessionStats{});
    d.repair = ok(model::RepairStatus{false, false});
    d.unrepairable_memory = ok(false);
    d.capabilities = ok(0u);
    d.pdi = ok(std::uint64_t{0xa11a2a5c87322e86ULL});
  }

  SmiQInput input() const { return SmiQInput{system, time, 1, {SmiQGpu{info, sample, details}}}; }
};

// The reference lines whose value gpuscope does not have (GpuDetails and the catalog hold no reading
// for them): it prints N/A there. Documented in /work/notes/query_q.md; a change here is a change there.
const std::set<std::string> kSqNotAnswered{
    "GPU 00000000:00:06.0/GPU Part Number",
    "GPU 00000000:00:06.0/Sparse Operation Mode",
    "GPU 00000000:00:06.0/GPU Memory Power Readings/Average Power Draw",
};

TEST(SmiQReport, MatchesRealNvidiaSmiLineByLineExceptTheKeysGpuscopeCannotRead) {
  const std::string reference = sq_read_reference();
  ASSERT_FALSE(reference.empty()) << kSqRefPath;
  const SqIdleH100 h100;
  const std::string ours = smi_q_text(h100.input());
  const auto ref_lines = sq_lines(reference);
  const auto our_lines = sq_lines(ours);
  ASSERT_EQ(our_lines.size(), ref_lines.size()) << ours;
  const auto ref = sq_parse(ref_lines);
  const auto mine = sq_parse(our_lines);
  std::set<std::string> differing;
  for (std::size_t i = 0; i < ref_lines.size(); ++i) {
    // Keys, sections, indentation, padding: identical on every line.
    ASSERT_EQ(mine[i].path, ref[i].path) << "line " << i + 1;
    const std::size_t ref_colon = ref_lines[i].find(" : ");
    ASSERT_EQ(our_lines[i].find(" : "), ref_colon) << "line " << i + 1 << ": " << our_lines[i];
    if (ref_colon == std::string::npos) {
      EXPECT_EQ(our_lines[i], ref_lines[i]) << "line " << i + 1;  // section headers, trailing space included
      continue;
    }
    if (our_lines[i] == ref_lines[i]) continue;
    differing.insert(ref[i].path);
    // Where the value differs, gpuscope says it has none; it never prints another value.
    EXPECT_EQ(*mine[i].value, "N/A") << ref[i].path << ": nvidia-smi says " << *ref[i].value;
  }
  EXPECT_EQ(differing, kSqNotAnswered);
  const std::size_t keys =
      std::count_if(ref.begin(), ref.end(), [](const SqRefLine& l) { return l.value.has_value(); });
  EXPECT_EQ(keys, 206u);  // so that 203 of nvidia-smi's 206 keys print exactly as it prints them
}

TEST(SmiQReport, KeysAreAlignedLikeNvidiaSmisWhateverTheirDepth) {
  const auto ref_lines = sq_lines(sq_read_reference());
  std::set<std::size_t> ref_columns, our_columns;
  for (const auto& l : ref_lines) {
    if (auto at = l.find(" : "); at != std::string::npos) ref_columns.insert(at);
  }
  const SqIdleH100 h100;
  for (const auto& l : sq_lines(smi_q_text(h100.input()))) {
    if (auto at = l.find(" : "); at != std::string::npos) our_columns.insert(at);
  }
  ASSERT_EQ(ref_columns.size(), 1u);
  EXPECT_EQ(our_columns, ref_columns);
}

TEST(SmiQReport, JsonIsTheSameTreeWithNumbersAndUnitsInTheKeys) {
  const SqIdleH100 h100;
  const auto doc = nlohmann::json::parse(smi_q_json(h100.input()).dump());
  EXPECT_EQ(doc["driver_version"], "580.159.04");
  EXPECT_EQ(doc["cuda_version"], "13.0");
  EXPECT_EQ(doc["attached_gpus"], 1);
  ASSERT_EQ(doc["gpus"].size(), 1u);
  const auto& g = doc["gpus"][0];
  EXPECT_EQ(g["id"], "00000000:00:06.0");
  EXPECT_EQ(g["product_brand"], "NVIDIA");
  EXPECT_EQ(g["persistence_mode"], true);
  EXPECT_EQ(g["mig_mode"]["current_mig"], false);
  EXPECT_EQ(g["fb_memory_usage"]["total_mib"], 81559);
  EXPECT_EQ(g["fb_memory_usage"]["reserved_mib"], 480);
  EXPECT_EQ(g["bar1_memory_usage"]["used_mib"], 1);
  EXPECT_EQ(g["bar1_memory_usage"]["total_mib"], 131072);
  EXPECT_EQ(g["temperature"]["gpu_temp_max_tlimit_threshold_celsius"], -8);
  EXPECT_FALSE(g.contains("sparse_operation_mode")) << "unanswered keys are absent";
  EXPECT_DOUBLE_EQ(g["gpu_power_readings"]["average_power_draw_watts"].get<double>(), 84.93);
  EXPECT_DOUBLE_EQ(g["gpu_power_readings"]["min_power_limit_watts"].get<double>(), 200);
  EXPECT_EQ(g["temperature"]["gpu_temp_celsius"], 48);
  EXPECT_EQ(g["temperature"]["gpu_temp_tlimit_celsius"], 39);
  EXPECT_EQ(g["clocks"]["sm_clock_mhz"], 345);
  EXPECT_EQ(g["pci"]["tx_util_kb_per_second"], 1732);
  EXPECT_EQ(g["pci"]["pci_device_id"], "0x233010DE");
  EXPECT_EQ(g["pci"]["pci_gpu_link_info"]["link_widths"]["max_link_width"], 16);
  EXPECT_EQ(g["clocks_event_reasons"]["clocks_event_reason_gpu_idle"], true);
  EXPECT_EQ(g["clocks_event_reasons"]["clocks_event_reason_hw_thermal_slowdown"], false);
  EXPECT_EQ(g["clocks_event_reasons_counters"]["clocks_event_reasons_counters_sw_power_cap_us"], 0);
  EXPECT_EQ(g["remapped_rows"]["row_remapper_histogram"]["row_remapper_histogram_max"], 2560);
  EXPECT_EQ(g["processes"], nlohmann::json::array());
  EXPECT_EQ(g["capabilities"]["egm"], false);
  EXPECT_EQ(g["encoder_stats"]["session_count"], 0);
  EXPECT_EQ(g["pci"]["pci_base_class"], 3);
  EXPECT_EQ(g["ecc_errors"]["unrepairable_memory"], false);
  for (const char* absent : {"fan_speed_percent", "module_power_readings", "gpu_memory_power_readings", "fabric",
                             "retired_pages", "errors"}) {
    EXPECT_FALSE(g.contains(absent)) << absent;
  }
  // No value anywhere is text standing for a missing one.
  std::vector<const nlohmann::json*> todo{&g};
  while (!todo.empty()) {
    const auto* j = todo.back();
    todo.pop_back();
    if (j->is_structured()) {
      for (const auto& c : *j) todo.push_back(&c);
    } else {
      EXPECT_NE(*j, "N/A");
      EXPECT_FALSE(j->is_null());
    }
  }
}

// Every number the text prints with a unit is the same number under the JSON key with that unit.
TEST(SmiQReport, JsonNumbersAgreeWithTheText) {
  const SqIdleH100 h100;
  const std::string text = smi_q_text(h100.input());
  const auto g = nlohmann::json::parse(smi_q_json(h100.input()).dump())["gpus"][0];
  auto text_value = [&](const std::string& key_line) {
    const auto at = text.find(key_line);
    EXPECT_NE(at, std::string::npos) << key_line;
    const auto colon = text.find(" : ", at);
    return text.substr(colon + 3, text.find('\n', colon) - colon - 3);
  };
  EXPECT_EQ(text_value("    GPU Power Readings\n        Average Power Draw"),
            fmt::format("{:.2f} W", g["gpu_power_readings"]["average_power_draw_watts"].get<double>()));
  EXPECT_EQ(text_value("    Temperature\n        GPU Current Temp"),
            fmt::format("{} C", g["temperature"]["gpu_temp_celsius"].get<int>()));
  EXPECT_EQ(text_value("    Max Clocks\n        Graphics"),
            fmt::format("{} MHz", g["max_clocks"]["graphics_clock_mhz"].get<int>()));
}

TEST(SmiQReport, FailedReadsPrintNvmlsWordsAndAreNamedInJsonErrors) {
  SqIdleH100 h100;
  h100.sample[FieldId::kGpuTemp] = FieldValue::error(999);
  h100.details.power_average_mw = {std::nullopt, 999};
  const std::string text = smi_q_text(h100.input());
  EXPECT_NE(text.find("        GPU Current Temp                               : Unknown Error\n"), std::string::npos);
  EXPECT_NE(text.find("        Average Power Draw                             : Unknown Error\n"), std::string::npos);
  const auto g = smi_q_json(h100.input())["gpus"][0];
  EXPECT_FALSE(g["temperature"].contains("gpu_temp_celsius"));
  EXPECT_EQ(g["errors"]["temperature.gpu_temp_celsius"], "Unknown Error");
  EXPECT_EQ(g["errors"]["gpu_power_readings.average_power_draw_watts"], "Unknown Error");
  EXPECT_EQ(g["errors"].size(), 2u);
}

TEST(SmiQReport, LostGpuSaysSoOnEveryReadingLine) {
  SqIdleH100 h100;
  h100.sample.up = false;
  h100.sample.down_error_code = 15;
  const std::string text = smi_q_text(h100.input());
  EXPECT_NE(text.find("        Total                                          : GPU is lost\n"), std::string::npos);
  EXPECT_NE(text.find("    Processes                                          : GPU is lost\n"), std::string::npos);
  EXPECT_EQ(smi_q_json(h100.input())["gpus"][0]["errors"]["fb_memory_usage.total_mib"], "GPU is lost");
}

TEST(SmiQReport, ProcessesAreListedWithTheirTypeNameAndMemory) {
  SqIdleH100 h100;
  model::ProcessSample p;
  p.pid = 4242;
  p.kind = model::ProcessKind::kCompute;
  p.used_memory_bytes = 4096ULL * 1024 * 1024;
  p.identity.name = "python3";
  h100.sample.processes = {p};
  const std::string text = smi_q_text(h100.input());
  const std::string pad(54, ' ');
  auto line = [&](std::size_t depth, std::string key, std::string value) {
    std::string k = std::string(depth * 4, ' ') + key;
    return k + pad.substr(k.size()) + " : " + value + "\n";
  };
  const std::string block = "    Processes\n" + line(2, "GPU instance ID", "N/A") +
                            line(2, "Compute instance ID", "N/A") + line(2, "Process ID", "4242") +
                            line(3, "Type", "C") + line(3, "Name", "python3") + line(3, "Used GPU Memory", "4096 MiB") +
                            "    Capabilities\n";
  EXPECT_NE(text.find(block), std::string::npos) << text;
  const auto procs = smi_q_json(h100.input())["gpus"][0]["processes"];
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0]["pid"], 4242);
  EXPECT_EQ(procs[0]["type"], "C");
  EXPECT_EQ(procs[0]["used_memory_mib"], 4096);
  EXPECT_FALSE(procs[0].contains("gpu_instance_id"));
}

TEST(SmiQReport, OneBlockPerGpuEachEndingInABlankLine) {
  SqIdleH100 a;
  SqIdleH100 b;
  b.info.index = 1;
  b.info.pci_bus_id = "00000000:2A:00.0";
  SmiQInput input{a.system, a.time, 8, {SmiQGpu{a.info, a.sample, a.details}, SmiQGpu{b.info, b.sample, b.details}}};
  const std::string text = smi_q_text(input);
  EXPECT_NE(text.find("Attached GPUs                                          : 8\nGPU 00000000:00:06.0\n"),
            std::string::npos);
  // Each block's last line is Capabilities' EGM.
  EXPECT_NE(text.find(" : disabled\n\nGPU 00000000:2A:00.0\n"), std::string::npos);
  EXPECT_TRUE(text.ends_with(" : disabled\n\n"));
  EXPECT_EQ(smi_q_json(input)["gpus"].size(), 2u);
}

TEST(SmiQReport, WithoutAThermalLimitTheAbsoluteThresholdsPrint) {
  SqIdleH100 h100;
  h100.details.temperature_margin = {std::nullopt, 3};
  h100.sample[FieldId::kShutdownTemp] = FieldValue::of(92);
  h100.sample[FieldId::kSlowdownTemp] = FieldValue::of(89);
  const std::string text = smi_q_text(h100.input());
  EXPECT_NE(text.find("        GPU Shutdown Temp                              : 92 C\n"
                      "        GPU Slowdown Temp                              : 89 C\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("T.Limit"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::exporter
