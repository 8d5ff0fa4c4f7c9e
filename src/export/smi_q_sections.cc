#include <array>
#include <tuple>

#include "export/smi_q_values.h"

namespace gpuscope::exporter {
namespace smi_q {
namespace {

constexpr std::uint32_t kSqCapEgm = 1U << 0;  // NVML_DEV_CAP_EGM

// nvmlClocksEventReasons bits.
SmiQNode sq_event_reasons(const SmiQGpu& g) {
  const auto& d = g.details;
  Answer<std::uint64_t> active = d.clocks_event_reasons_active;
  if (!active.ok() && active.error == 13 && g.sample.up && g.sample[FieldId::kClocksEventReasons].valid()) {
    active = {static_cast<std::uint64_t>(g.sample[FieldId::kClocksEventReasons].value), 0};
  }
  auto reason = [&](std::string label, std::string key, std::uint64_t bit) {
    const auto& supported = d.clocks_event_reasons_supported;
    if (active.ok() && supported.ok() && (*supported.value & bit) == 0) return sq_na(std::move(label), std::move(key));
    return sq_answer(std::move(label), std::move(key), active, [bit](std::uint64_t mask) {
      const bool on = (mask & bit) != 0;
      return SqValue{on ? "Active" : "Not Active", Json(on)};
    });
  };
  SmiQNode hw = reason("HW Slowdown", "clocks_event_reason_hw_slowdown", 0x8);
  hw.children = {reason("HW Thermal Slowdown", "clocks_event_reason_hw_thermal_slowdown", 0x40),
                 reason("HW Power Brake Slowdown", "clocks_event_reason_hw_power_brake_slowdown", 0x80)};
  return sq_section("Clocks Event Reasons", "clocks_event_reasons",
                    {reason("Idle", "clocks_event_reason_gpu_idle", 0x1),
                     reason("Applications Clocks Setting", "clocks_event_reason_applications_clocks_setting", 0x2),
                     reason("SW Power Cap", "clocks_event_reason_sw_power_cap", 0x4), std::move(hw),
                     reason("Sync Boost", "clocks_event_reason_sync_boost", 0x10),
                     reason("SW Thermal Slowdown", "clocks_event_reason_sw_thermal_slowdown", 0x20),
                     reason("Display Clock Setting", "clocks_event_reason_display_clocks_setting", 0x100)});
}

SmiQNode sq_event_counters(const model::GpuDetails& d) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, model::kClockEventCounterCount> kRows{{
      {"SW Power Capping", "clocks_event_reasons_counters_sw_power_cap"},
      {"Sync Boost", "clocks_event_reasons_counters_sync_boost"},
      {"SW Thermal Slowdown", "clocks_event_reasons_counters_sw_therm_slowdown"},
      {"HW Thermal Slowdown", "clocks_event_reasons_counters_hw_therm_slowdown"},
      {"HW Power Braking", "clocks_event_reasons_counters_hw_power_brake"},
  }};
  std::vector<SmiQNode> rows;
  for (std::size_t i = 0; i < kRows.size(); ++i) {
    // NVML counts ns; nvidia-smi prints whole microseconds.
    rows.push_back(sq_answer(std::string(kRows[i].first), json_key(kRows[i].second, "us"), d.clocks_event_ns[i],
                             [](std::uint64_t ns) { return sq_int(static_cast<double>(ns / 1000), "us"); }));
  }
  return sq_section("Clocks Event Reasons Counters", "clocks_event_reasons_counters", std::move(rows));
}

SmiQNode sq_mib_field(const model::GpuSample& s, FieldId id, std::string label, std::string_view key) {
  return sq_field(s, id, std::move(label), json_key(key, "MiB"), [](double v) { return sq_int(v, "MiB"); });
}

std::vector<SmiQNode> sq_memory(const SmiQGpu& g) {
  const auto& d = g.details;
  const auto& s = g.sample;
  std::vector<SmiQNode> out;
  out.push_back(sq_na("Sparse Operation Mode", "sparse_operation_mode"));
  out.push_back(sq_section(
      "FB Memory Usage", "fb_memory_usage",
      {sq_mib_field(s, FieldId::kFbTotal, "Total", "total"),
       sq_mib_field(s, FieldId::kFbReserved, "Reserved", "reserved"), sq_mib_field(s, FieldId::kFbUsed, "Used", "used"),
       sq_mib_field(s, FieldId::kFbFree, "Free", "free")}));
  out.push_back(
      sq_section("BAR1 Memory Usage", "bar1_memory_usage",
                 {sq_answer("Total", json_key("total", "MiB"), d.bar1,
                            [](const model::MemoryBytes& m) { return sq_int(static_cast<double>(m.total / kMiB), "MiB"); }),
                  sq_mib_field(s, FieldId::kBar1Used, "Used", "used"),
                  sq_answer("Free", json_key("free", "MiB"), d.bar1,
                            [](const model::MemoryBytes& m) { return sq_int(static_cast<double>(m.free / kMiB), "MiB"); })}));
  auto cc = [&](std::string label, std::string_view key, std::uint64_t model::MemoryBytes::*member) {
    return sq_answer(std::move(label), json_key(key, "MiB"), d.protected_memory, [member](const model::MemoryBytes& m) {
      return sq_int(static_cast<double>(m.*member / kMiB), "MiB");
    });
  };
  out.push_back(
      sq_section("Conf Compute Protected Memory Usage", "cc_protected_memory_usage",
                 {cc("Total", "total", &model::MemoryBytes::total), cc("Used", "used", &model::MemoryBytes::used),
                  cc("Free", "free", &model::MemoryBytes::free)}));
  out.push_back(sq_answer("Compute Mode", "compute_mode", d.compute_mode, [](int v) {
    return sq_text(sq_enum(v, {"Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process"}));
  }));
  auto pct = [](double v) { return sq_int(v, "%"); };
  auto pct_answer = [](std::uint32_t v) { return sq_int(v, "%"); };
  out.push_back(sq_section("Utilization", "utilization",
                           {sq_field(s, FieldId::kGpuUtil, "GPU", json_key("gpu_util", "%"), pct),
                            sq_field(s, FieldId::kMemCopyUtil, "Memory", json_key("memory_util", "%"), pct),
                            sq_field(s, FieldId::kEncUtil, "Encoder", json_key("encoder_util", "%"), pct),
                            sq_field(s, FieldId::kDecUtil, "Decoder", json_key("decoder_util", "%"), pct),
                            sq_answer("JPEG", json_key("jpeg_util", "%"), d.jpg_util, pct_answer),
                            sq_answer("OFA", json_key("ofa_util", "%"), d.ofa_util, pct_answer)}));
  // Latency in microseconds, printed bare as nvidia-smi does.
  for (auto [label, key, stats] : {std::tuple{"Encoder Stats", "encoder_stats", &d.encoder_stats},
                                   std::tuple{"FBC Stats", "fbc_stats", &d.fbc_stats}}) {
    out.push_back(sq_section(
        label, key,
        {sq_answer("Active Sessions", "session_count", *stats, [](const model::SessionStats& v) { return sq_int(v.sessions); }),
         sq_answer("Average FPS", "average_fps", *stats, [](const model::SessionStats& v) { return sq_int(v.average_fps); }),
         sq_answer("Average Latency", "average_latency", *stats,
                   [](const model::SessionStats& v) { return sq_int(v.average_latency_us); })}));
  }
  out.push_back(sq_section("DRAM Encryption Mode", "dram_encryption_mode",
                           {sq_na("Current", "current_dram_encryption"), sq_na("Pending", "pending_dram_encryption")}));
  auto ecc_mode = d.ecc_mode;
  if (!ecc_mode.ok() && ecc_mode.error == 13 && g.info.ecc_enabled) {
    out.push_back(sq_section(
        "ECC Mode", "ecc_mode",
        {sq_leaf("Current", "current_ecc", sq_enabled(*g.info.ecc_enabled)), sq_na("Pending", "pending_ecc")}));
  } else {
    out.push_back(sq_section("ECC Mode", "ecc_mode", sq_pair(ecc_mode, "current_ecc", "pending_ecc", [](int v) {
                               return sq_enabled(v != 0);
                             })));
  }
  return out;
}

SmiQNode sq_ecc_errors(const model::GpuDetails& d) {
  using model::EccLocation;
  auto count = [](std::uint64_t v) { return sq_int(static_cast<double>(v)); };
  auto counter = [&](std::string label, std::string key, int uncorrected, int aggregate, EccLocation where) {
    return sq_answer(std::move(label), std::move(key),
                     d.ecc_errors[uncorrected][aggregate][static_cast<std::size_t>(where)], count);
  };
  auto sram = [&](std::string label, std::string key, std::uint64_t model::SramEccStatus::*member) {
    return sq_answer(std::move(label), std::move(key), d.sram_ecc,
                     [member](const model::SramEccStatus& st) { return sq_int(static_cast<double>(st.*member)); });
  };
  auto scope = [&](std::string label, std::string key, int aggregate) {
    std::vector<SmiQNode> rows;
    rows.push_back(counter("SRAM Correctable", "sram_correctable", 0, aggregate, EccLocation::kSram));
    rows.push_back(sram("SRAM Uncorrectable Parity", "sram_uncorrectable_parity",
                        aggregate ? &model::SramEccStatus::aggregate_uncorrected_parity
                                  : &model::SramEccStatus::volatile_uncorrected_parity));
    rows.push_back(sram("SRAM Uncorrectable SEC-DED", "sram_uncorrectable_secded",
                        aggregate ? &model::SramEccStatus::aggregate_uncorrected_secded
                                  : &model::SramEccStatus::volatile_uncorrected_secded));
    rows.push_back(counter("DRAM Correctable", "dram_correctable", 0, aggregate, EccLocation::kDram));
    rows.push_back(counter("DRAM Uncorrectable", "dram_uncorrectable", 1, aggregate, EccLocation::kDram));
    if (aggregate) {
      rows.push_back(sq_answer("SRAM Threshold Exceeded", "sram_threshold_exceeded", d.sram_ecc,
                               [](const model::SramEccStatus& st) { return sq_yes(st.threshold_exceeded); }));
    }
    return sq_section(std::move(label), std::move(key), std::move(rows));
  };
  // GpuDetails holds NVML's L2 and "other" buckets as one sum: only a sum of 0 says what each is.
  auto split_bucket = [&](std::string label, std::string key) {
    if (d.sram_ecc.ok() && d.sram_ecc.value->aggregate_bucket_other == 0)
      return sq_leaf(std::move(label), std::move(key), sq_int(0));
    if (d.sram_ecc.ok()) return sq_na(std::move(label), std::move(key));
    return sq_failed(std::move(label), std::move(key), d.sram_ecc.error);
  };
  return sq_section(
      "ECC Errors", "ecc_errors",
      {scope("Volatile", "volatile", 0), scope("Aggregate", "aggregate", 1),
       sq_section(
           "Aggregate Uncorrectable SRAM Sources", "aggregate_uncorrectable_sram_sources",
           {split_bucket("SRAM L2", "sram_l2"), sram("SRAM SM", "sram_sm", &model::SramEccStatus::aggregate_bucket_sm),
            sram("SRAM Microcontroller", "sram_microcontroller", &model::SramEccStatus::aggregate_bucket_mcu),
            sram("SRAM PCIE", "sram_pcie", &model::SramEccStatus::aggregate_bucket_pcie),
            split_bucket("SRAM Other", "sram_other")}),
       sq_answer("Channel Repair Pending", "channel_repair_pending", d.repair,
                 [](const model::RepairStatus& r) { return sq_yes(r.channel_pending); }),
       sq_answer("TPC Repair Pending", "tpc_repair_pending", d.repair,
                 [](const model::RepairStatus& r) { return sq_yes(r.tpc_pending); }),
       sq_answer("Unrepairable Memory", "unrepairable_memory", d.unrepairable_memory, sq_yes)});
}

std::vector<SmiQNode> sq_health(const SmiQGpu& g) {
  const auto& d = g.details;
  const auto& s = g.sample;
  auto count = [](double v) { return sq_int(v); };
  auto yes = [](double v) { return sq_yes(v != 0); };
  std::vector<SmiQNode> out;
  out.push_back(sq_ecc_errors(d));
  out.push_back(
      sq_section("Retired Pages", "retired_pages",
                 {sq_field(s, FieldId::kRetiredSbe, "Single Bit ECC", "multiple_single_bit_retirement", count),
                  sq_field(s, FieldId::kRetiredDbe, "Double Bit ECC", "double_bit_retirement", count),
                  sq_field(s, FieldId::kRetiredPending, "Pending Page Blacklist", "pending_blacklist", yes)}));
  auto inactive = [&](std::string label, std::string key, std::uint32_t model::RemapInactive::*member) {
    return sq_answer(std::move(label), std::move(key), d.remap_inactive,
                     [member](const model::RemapInactive& r) { return sq_int(r.*member); });
  };
  auto bank = [&](std::string label, std::string key, std::uint32_t model::RemapHistogram::*member) {
    return sq_answer(std::move(label), std::move(key), d.remap_histogram,
                     [member](const model::RemapHistogram& h) { return sq_int(h.*member, "bank(s)"); });
  };
  out.push_back(sq_section(
      "Remapped Rows", "remapped_rows",
      {sq_field(s, FieldId::kCorrectableRemappedRows, "Correctable Error", "remapped_row_corr", count),
       inactive("Inactive Correctable Error", "remapped_row_corr_inactive", &model::RemapInactive::correctable),
       sq_field(s, FieldId::kUncorrectableRemappedRows, "Uncorrectable Error", "remapped_row_unc", count),
       inactive("Inactive Uncorrectable Error", "remapped_row_unc_inactive", &model::RemapInactive::uncorrectable),
       sq_field(s, FieldId::kRowRemapPending, "Pending", "remapped_row_pending", yes),
       sq_field(s, FieldId::kRowRemapFailure, "Remapping Failure Occurred", "remapped_row_failure", yes),
       sq_section("Bank Remap Availability Histogram", "row_remapper_histogram",
                  {bank("Max", "row_remapper_histogram_max", &model::RemapHistogram::max),
                   bank("High", "row_remapper_histogram_high", &model::RemapHistogram::high),
                   bank("Partial", "row_remapper_histogram_partial", &model::RemapHistogram::partial),
                   bank("Low", "row_remapper_histogram_low", &model::RemapHistogram::low),
                   bank("None", "row_remapper_histogram_none", &model::RemapHistogram::none)})}));
  return out;
}

SmiQNode sq_temperature(const SmiQGpu& g) {
  const auto& d = g.details;
  const auto& s = g.sample;
  auto celsius = [](double v) { return sq_int(v, "C"); };
  auto temp = [&](FieldId id, std::string label, std::string_view key) {
    return sq_field(s, id, std::move(label), json_key(key, "C"), celsius);
  };
  std::vector<SmiQNode> rows;
  rows.push_back(temp(FieldId::kGpuTemp, "GPU Current Temp", "gpu_temp"));
  if (d.temperature_margin.ok() || !sq_unsupported(d.temperature_margin.error)) {
    // A GPU with a T.Limit states its thresholds as margins to it; gpuscope reads the margin itself only.
    rows.push_back(sq_answer("GPU T.Limit Temp", json_key("gpu_temp_tlimit", "C"), d.temperature_margin,
                             [](int v) { return sq_int(v, "C"); }));
    // The thresholds as offsets from T.Limit (fields 193-196: shutdown, slowdown, memory max, GPU max).
    auto offset = [&](std::size_t k, std::string label, std::string_view key) {
      return sq_answer(std::move(label), json_key(key, "C"), d.temperature_tlimit[k],
                       [](std::int64_t v) { return sq_int(static_cast<double>(v), "C"); });
    };
    rows.push_back(offset(0, "GPU Shutdown T.Limit Temp", "gpu_temp_max_tlimit_threshold"));
    rows.push_back(offset(1, "GPU Slowdown T.Limit Temp", "gpu_temp_slow_tlimit_threshold"));
    rows.push_back(offset(3, "GPU Max Operating T.Limit Temp", "gpu_temp_max_gpu_tlimit_threshold"));
    rows.push_back(sq_na("GPU Target Temperature", json_key("gpu_target_temperature", "C")));
    rows.push_back(temp(FieldId::kMemoryTemp, "Memory Current Temp", "memory_temp"));
    rows.push_back(offset(2, "Memory Max Operating T.Limit Temp", "gpu_temp_max_mem_tlimit_threshold"));
  } else {
    rows.push_back(temp(FieldId::kShutdownTemp, "GPU Shutdown Temp", "gpu_temp_max_threshold"));
    rows.push_back(temp(FieldId::kSlowdownTemp, "GPU Slowdown Temp", "gpu_temp_slow_threshold"));
    rows.push_back(sq_na("GPU Max Operating Temp", json_key("gpu_temp_max_gpu_threshold", "C")));
    rows.push_back(sq_na("GPU Target Temperature", json_key("gpu_target_temperature", "C")));
    rows.push_back(temp(FieldId::kMemoryTemp, "Memory Current Temp", "memory_temp"));
    rows.push_back(sq_na("Memory Max Operating Temp", json_key("gpu_temp_max_mem_threshold", "C")));
  }
  return sq_section("Temperature", "temperature", std::move(rows));
}

std::vector<SmiQNode> sq_power(const SmiQGpu& g) {
  const auto& d = g.details;
  const auto& s = g.sample;
  auto w = [](std::string_view key) { return json_key(key, "W"); };
  auto mw = [](std::uint32_t v) { return sq_milliwatts(v); };
  auto watts_field = [](double v) { return sq_watts(v); };
  Answer<std::uint32_t> default_limit = d.power_default_limit_mw;
  if (!default_limit.ok() && default_limit.error == 13 && g.info.power_default_limit_watts) {
    default_limit = {static_cast<std::uint32_t>(std::llround(*g.info.power_default_limit_watts * 1000)), 0};
  }
  std::vector<SmiQNode> out;
  out.push_back(sq_section(
      "GPU Power Readings", "gpu_power_readings",
      {sq_answer("Average Power Draw", w("average_power_draw"), d.power_average_mw, mw),
       sq_answer("Instantaneous Power Draw", w("instant_power_draw"), d.power_instant_mw, mw),
       sq_field(s, FieldId::kEnforcedPowerLimit, "Current Power Limit", w("current_power_limit"), watts_field),
       sq_field(s, FieldId::kPowerLimit, "Requested Power Limit", w("requested_power_limit"), watts_field),
       sq_answer("Default Power Limit", w("default_power_limit"), default_limit, mw),
       sq_answer("Min Power Limit", w("min_power_limit"), d.power_min_limit_mw, mw),
       sq_answer("Max Power Limit", w("max_power_limit"), d.power_max_limit_mw, mw)}));
  SmiQNode memory = sq_section("GPU Memory Power Readings", "gpu_memory_power_readings",
                               {sq_na("Average Power Draw", w("average_power_draw")),
                                sq_na("Instantaneous Power Draw", w("instant_power_draw"))});
  memory.trailing_space = true;
  out.push_back(std::move(memory));
  out.push_back(
      sq_section("Module Power Readings", "module_power_readings",
                 {sq_answer("Average Power Draw", w("average_power_draw"), d.module_power_average_mw, mw),
                  sq_answer("Instantaneous Power Draw", w("instant_power_draw"), d.module_power_instant_mw, mw),
                  sq_answer("Current Power Limit", w("current_power_limit"), d.module_enforced_power_limit_mw, mw),
                  sq_answer("Requested Power Limit", w("requested_power_limit"), d.module_power_limit_mw, mw),
                  sq_answer("Default Power Limit", w("default_power_limit"), d.module_power_default_limit_mw, mw),
                  sq_answer("Min Power Limit", w("min_power_limit"), d.module_power_min_limit_mw, mw),
                  sq_answer("Max Power Limit", w("max_power_limit"), d.module_power_max_limit_mw, mw)}));
  out.push_back(sq_na("Power Smoothing", "power_smoothing"));
  out.push_back(sq_section("Workload Power Profiles", "power_profiles",
                           {sq_na("Requested Profiles", "power_profile_requested_profiles"),
                            sq_na("Enforced Profiles", "power_profile_enforced_profiles")}));
  return out;
}

std::vector<SmiQNode> sq_clocks(const SmiQGpu& g) {
  const auto& d = g.details;
  const auto& s = g.sample;
  auto mhz = [](double v) { return sq_int(v, "MHz"); };
  auto mhz_answer = [](std::uint32_t v) { return sq_int(v, "MHz"); };
  auto k = [](std::string_view key) { return json_key(key, "MHz"); };
  std::vector<SmiQNode> out;
  out.push_back(sq_section("Clocks", "clocks",
                           {sq_field(s, FieldId::kGraphicsClock, "Graphics", k("graphics_clock"), mhz),
                            sq_field(s, FieldId::kSmClock, "SM", k("sm_clock"), mhz),
                            sq_field(s, FieldId::kMemClock, "Memory", k("mem_clock"), mhz),
                            sq_field(s, FieldId::kVideoClock, "Video", k("video_clock"), mhz)}));
  out.push_back(sq_section("Applications Clocks", "applications_clocks",
                           {sq_answer("Graphics", k("graphics_clock"), d.applications_clock_graphics, mhz_answer),
                            sq_answer("Memory", k("mem_clock"), d.applications_clock_memory, mhz_answer)}));
  out.push_back(
      sq_section("Default Applications Clocks", "default_applications_clocks",
                 {sq_answer("Graphics", k("graphics_clock"), d.default_applications_clock_graphics, mhz_answer),
                  sq_answer("Memory", k("mem_clock"), d.default_applications_clock_memory, mhz_answer)}));
  out.push_back(sq_section("Deferred Clocks", "deferred_clocks", {sq_na("Memory", k("mem_clock"))}));
  out.push_back(sq_section(
      "Max Clocks", "max_clocks",
      {sq_field(s, FieldId::kMaxGraphicsClock, "Graphics", k("graphics_clock"), mhz),
       sq_field(s, FieldId::kMaxSmClock, "SM", k("sm_clock"), mhz),
       sq_field(s, FieldId::kMaxMemClock, "Memory", k("mem_clock"), mhz),
       sq_answer("Video", k("video_clock"), d.max_video_clock, mhz_answer)}));
  out.push_back(sq_section("Max Customer Boost Clocks", "max_customer_boost_clocks",
                           {sq_answer("Graphics", k("graphics_clock"), d.max_customer_boost_graphics, mhz_answer)}));
  out.push_back(sq_section("Clock Policy", "clock_policy",
                           {sq_na("Auto Boost", "auto_boost"), sq_na("Auto Boost Default", "auto_boost_default")}));
  return out;
}

std::string sq_uuid(const std::array<std::uint8_t, 16>& b) {
  std::string out;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", b[i]);
  }
  return out;
}

SmiQNode sq_fabric(const model::GpuDetails& d) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kHealth{{
      {"Bandwidth", "bandwidth"},
      {"Route Recovery in progress", "route_recovery_in_progress"},
      {"Route Unhealthy", "route_unhealthy"},
      {"Access Timeout Recovery", "access_timeout_recovery"},
      {"Incorrect Configuration", "incorrect_configuration"},
      {"Partition Assigned", "partition_assigned"},
  }};
  // State NOT_SUPPORTED (0): the GPU is not on a fabric; nvidia-smi prints N/A throughout.
  const bool on_fabric = d.fabric.ok() && d.fabric.value->state != 0;
  const int why = d.fabric.ok() ? 3 : d.fabric.error;
  std::vector<SmiQNode> health;
  if (on_fabric) {
    const auto summary = d.fabric.value->health_summary;
    health.push_back(summary == 0
                         ? sq_na("Summary", "summary")
                         : sq_leaf("Summary", "summary",
                                   sq_text(sq_enum(summary, {"N/A", "Healthy", "Unhealthy", "Limited Capacity"}))));
  } else {
    health.push_back(sq_failed("Summary", "summary", why));
  }
  // The health mask's per-condition words are not read yet: N/A, not a guess.
  for (auto [label, key] : kHealth)
    health.push_back(on_fabric ? sq_na(std::string(label), std::string(key))
                               : sq_failed(std::string(label), std::string(key), why));
  std::vector<SmiQNode> rows;
  if (on_fabric) {
    const auto& f = *d.fabric.value;
    rows.push_back(
        sq_leaf("State", "state", sq_text(sq_enum(f.state, {"N/A", "Not Started", "In Progress", "Completed"}))));
    rows.push_back(f.state == 3 ? sq_leaf("Status", "status", sq_text(nvml_error_text(f.status)))
                                : sq_na("Status", "status"));
    rows.push_back(sq_leaf("CliqueId", "clique_id", sq_int(f.clique_id)));
    rows.push_back(sq_leaf("ClusterUUID", "cluster_uuid", sq_text(sq_uuid(f.cluster_uuid))));
  } else {
    for (auto [label, key] : {std::pair{"State", "state"},
                              {"Status", "status"},
                              {"CliqueId", "clique_id"},
                              {"ClusterUUID", "cluster_uuid"}}) {
      rows.push_back(sq_failed(label, key, why));
    }
  }
  rows.push_back(sq_section("Health", "health", std::move(health)));
  return sq_section("Fabric", "fabric", std::move(rows));
}

SmiQNode sq_processes(const model::GpuSample& s) {
  if (!s.up) return sq_failed("Processes", "processes", s.down_error_code != 0 ? s.down_error_code : kGpuIsLost);
  if (s.processes_error_code) return sq_failed("Processes", "processes", *s.processes_error_code);
  if (s.processes.empty()) {
    SmiQNode none = sq_leaf("Processes", "processes", {"None", Json::array()});
    return none;
  }
  SmiQNode list = sq_section("Processes", "processes", {});
  list.json = Json::array();  // marks the children as array elements
  for (const auto& p : s.processes) {
    auto id = [](const std::optional<unsigned>& v) { return v ? sq_int(*v) : SqValue{"N/A", nullptr}; };
    SmiQNode pid = sq_leaf("Process ID", "pid", sq_int(p.pid));
    const char* type = p.kind == model::ProcessKind::kCompute    ? "C"
                       : p.kind == model::ProcessKind::kGraphics ? "G"
                                                                 : "C+G";
    pid.children.push_back(sq_leaf("Type", "type", sq_text(type)));
    pid.children.push_back(
        sq_leaf("Name", "process_name", sq_text(p.identity.name.empty() ? "[Not Found]" : p.identity.name)));
    pid.children.push_back(p.used_memory_bytes
                               ? sq_leaf("Used GPU Memory", json_key("used_memory", "MiB"),
                                         sq_int(static_cast<double>(*p.used_memory_bytes / kMiB), "MiB"))
                               : sq_na("Used GPU Memory", json_key("used_memory", "MiB")));
    SmiQNode element;  // no label: its lines print at the list's depth
    element.children = {sq_leaf("GPU instance ID", "gpu_instance_id", id(p.gpu_instance_id)),
                        sq_leaf("Compute instance ID", "compute_instance_id", id(p.compute_instance_id)),
                        std::move(pid)};
    list.children.push_back(std::move(element));
  }
  return list;
}

}  // namespace
}  // namespace smi_q

std::vector<SmiQNode> smi_q_gpu_nodes(const SmiQGpu& gpu) {
  using namespace smi_q;
  std::vector<SmiQNode> out = smi_q::board_nodes(gpu);
  out.push_back(smi_q::pci_node(gpu));
  out.push_back(sq_field(gpu.sample, FieldId::kFanSpeed, "Fan Speed", json_key("fan_speed", "%"),
                         [](double v) { return sq_int(v, "%"); }));
  out.push_back(sq_field(gpu.sample, FieldId::kPstate, "Performance State", "performance_state",
                         [](double v) { return sq_text(fmt::format("P{}", std::llround(v))); }));
  out.push_back(sq_event_reasons(gpu));
  out.push_back(sq_event_counters(gpu.details));
  for (auto&& n : sq_memory(gpu)) out.push_back(std::move(n));
  for (auto&& n : sq_health(gpu)) out.push_back(std::move(n));
  out.push_back(sq_temperature(gpu));
  for (auto&& n : sq_power(gpu)) out.push_back(std::move(n));
  for (auto&& n : sq_clocks(gpu)) out.push_back(std::move(n));
  out.push_back(sq_fabric(gpu.details));
  out.push_back(sq_processes(gpu.sample));
  // nvidia-smi writes this one in lower case.
  out.push_back(sq_section("Capabilities", "capabilities",
                           {sq_answer("EGM", "egm", gpu.details.capabilities, [](std::uint32_t mask) {
                             const bool egm = (mask & kSqCapEgm) != 0;
                             return SqValue{egm ? "enabled" : "disabled", Json(egm)};
                           })}));
  return out;
}

}  // namespace gpuscope::exporter
