#include "analysis/health_checks.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "analysis/gpu_signals.h"

namespace gpuscope::analysis {
namespace {

using model::FieldId;
using model::FieldValue;
using model::GpuSample;

constexpr std::array<std::string_view, kHealthCheckCount> kCheckIds{"ecc",     "xid",         "remap", "pcie",
                                                                    "thermal", "persistence", "driver"};
constexpr std::array<HealthCheck, kHealthCheckCount> kAllChecks{
    HealthCheck::kEcc,     HealthCheck::kXid,         HealthCheck::kRemap, HealthCheck::kPcie,
    HealthCheck::kThermal, HealthCheck::kPersistence, HealthCheck::kDriver};

// NVIDIA's XID catalog; the reason each one means the GPU itself (not the job) needs attention.
constexpr std::array<CriticalXid, 11> kCriticalXids{{
    {48, "double-bit ECC error", "uncorrectable memory error: data in the GPU's memory is corrupt"},
    {62, "internal micro-controller halt", "the GPU's firmware stopped; only a GPU reset recovers it"},
    {63, "ECC page retirement or row remap recorded",
     "memory was found bad; the remap takes effect at the next GPU reset"},
    {64, "ECC page retirement or row remap failure", "bad memory could not be taken out of use"},
    {74, "NVLink error", "a link is down or erroring: collectives over it hang or run slowly"},
    {79, "GPU has fallen off the bus", "the GPU stopped answering on PCIe; it needs a reset or a reboot"},
    {92, "high single-bit ECC error rate", "the memory is degrading; double-bit errors tend to follow"},
    {94, "contained ECC error", "an uncorrectable error killed a job; the GPU needs a reset to reuse the memory"},
    {95, "uncontained ECC error", "an uncorrectable error that may have reached every job on the GPU"},
    {119, "GSP RPC timeout", "the GPU's system processor stopped answering the driver"},
    {120, "GSP error", "the GPU's system processor failed"},
}};

// A whole number as an integer in JSON and text ("3", not "3.000000").
std::string number_text(double v) {
  if (v == static_cast<double>(static_cast<long long>(v))) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:g}", v);
}

// Why a value is missing, for a "not checked" summary.
std::string missing_text(const FieldValue& v) {
  if (v.status == model::ValueStatus::kError) return fmt::format("NVML error {}", v.error_code);
  return "not reported by the GPU";
}

const GpuSample* health_sample_of(const model::Snapshot& snapshot, unsigned index, std::size_t position) {
  // The backend keeps samples in discovery order; the index check guards a snapshot built otherwise.
  if (position < snapshot.gpus.size() && snapshot.gpus[position].index == index) return &snapshot.gpus[position];
  for (const auto& s : snapshot.gpus) {
    if (s.index == index) return &s;
  }
  return nullptr;
}

CheckResult ecc_check(const model::GpuInfo& info, const GpuSample& s) {
  CheckResult r;
  r.check = HealthCheck::kEcc;
  if (info.ecc_enabled == false) {
    r.summary = "ECC is disabled on this GPU";
    return r;
  }
  const FieldValue& dbe = s[FieldId::kEccDbeVolTotal];
  const std::uint64_t dbe_events = s.events.double_bit_ecc;
  if (dbe.valid()) {
    r.values.push_back({"ecc_dbe_volatile_total", dbe.value});
    if (const FieldValue& sbe = s[FieldId::kEccSbeVolTotal]; sbe.valid()) {
      r.values.push_back({"ecc_sbe_volatile_total", sbe.value});
    }
  }
  if (dbe_events > 0) r.values.push_back({"ecc_dbe_events", static_cast<double>(dbe_events)});
  const double errors = std::max(dbe.valid() ? dbe.value : 0.0, static_cast<double>(dbe_events));
  if (errors > 0) {
    r.status = CheckStatus::kFail;
    r.summary = fmt::format("{} uncorrectable (double-bit) ECC error{} since the driver loaded: data in "
                            "its memory may be corrupt (reset the GPU)",
                            number_text(errors), errors == 1 ? "" : "s");
  } else if (dbe.valid()) {
    r.status = CheckStatus::kPass;
    r.summary = "no uncorrectable ECC errors since the driver loaded";
  } else {
    r.summary = fmt::format("volatile ECC counts: {}", missing_text(dbe));
  }
  return r;
}

CheckResult remap_check(const GpuSample& s) {
  CheckResult r;
  r.check = HealthCheck::kRemap;
  const FieldValue& pending = s[FieldId::kRowRemapPending];
  const FieldValue& failure = s[FieldId::kRowRemapFailure];
  const FieldValue& retired_pending = s[FieldId::kRetiredPending];
  std::vector<std::string> wrong;
  // Ampere and newer remap rows ...
  if (pending.valid() || failure.valid()) {
    if (pending.valid()) r.values.push_back({"row_remap_pending", pending.value});
    if (failure.valid()) r.values.push_back({"row_remap_failure", failure.value});
    if (const FieldValue& unc = s[FieldId::kUncorrectableRemappedRows]; unc.valid()) {
      r.values.push_back({"remapped_rows_uncorrectable", unc.value});
    }
    if (const FieldValue& corr = s[FieldId::kCorrectableRemappedRows]; corr.valid()) {
      r.values.push_back({"remapped_rows_correctable", corr.value});
    }
    if (pending.valid() && pending.value != 0) wrong.emplace_back("a row remap is pending (reset the GPU to apply it)");
    if (failure.valid() && failure.value != 0) {
      wrong.emplace_back("row remapping failed: a bank ran out of spare rows (the GPU needs replacing)");
    }
  }
  // ... older GPUs retire pages.
  if (retired_pending.valid()) {
    r.values.push_back({"retired_pages_pending", retired_pending.value});
    if (const FieldValue& dbe = s[FieldId::kRetiredDbe]; dbe.valid()) r.values.push_back({"retired_pages_dbe", dbe.value});
    if (const FieldValue& sbe = s[FieldId::kRetiredSbe]; sbe.valid()) r.values.push_back({"retired_pages_sbe", sbe.value});
    if (retired_pending.value != 0) {
      wrong.emplace_back("retired pages are pending (reset the GPU or reload the driver to retire them)");
    }
  }
  if (!wrong.empty()) {
    r.status = CheckStatus::kFail;
    r.summary = fmt::format("{}", fmt::join(wrong, "; "));
  } else if (!r.values.empty()) {
    r.status = CheckStatus::kPass;
    r.summary = "no row remap pending or failed, no page retirement pending";
  } else {
    r.summary = fmt::format("row remapping and page retirement: {}", missing_text(pending));
  }
  return r;
}

// A link below its maximum generation while the GPU idles is power management (ASPM parks it at gen 1
// until traffic returns), not a fault. Performance states from P8 on are idle ones.
// The GpuIdle clocks event reason says the same.
constexpr double kFirstIdlePstate = 8;
constexpr std::uint64_t kClocksReasonGpuIdle = 0x1;

CheckResult pcie_check(const GpuSample& s) {
  CheckResult r;
  r.check = HealthCheck::kPcie;
  const FieldValue& gen = s[FieldId::kPcieLinkGenCurrent];
  const FieldValue& gen_max = s[FieldId::kPcieLinkGenMax];
  const FieldValue& width = s[FieldId::kPcieLinkWidthCurrent];
  const FieldValue& width_max = s[FieldId::kPcieLinkWidthMax];
  const FieldValue& pstate = s[FieldId::kPstate];
  const FieldValue& reasons = s[FieldId::kClocksEventReasons];
  const bool gen_known = gen.valid() && gen_max.valid();
  const bool width_known = width.valid() && width_max.valid();
  if (!gen_known && !width_known) {
    r.summary = fmt::format("PCIe link: {}", missing_text(gen.valid() ? width : gen));
    return r;
  }
  if (gen_known) {
    r.values.push_back({"pcie_link_gen_current", gen.value});
    r.values.push_back({"pcie_link_gen_max", gen_max.value});
  }
  if (width_known) {
    r.values.push_back({"pcie_link_width_current", width.value});
    r.values.push_back({"pcie_link_width_max", width_max.value});
  }
  const bool idle = (pstate.valid() && pstate.value >= kFirstIdlePstate) ||
                    (reasons.valid() && (static_cast<std::uint64_t>(reasons.value) & kClocksReasonGpuIdle) != 0);
  std::vector<std::string> wrong;
  if (width_known && width.value < width_max.value) {
    wrong.push_back(fmt::format("link width x{} below its maximum x{} (a badly seated card or riser)",
                                number_text(width.value), number_text(width_max.value)));
  }
  if (gen_known && gen.value < gen_max.value && !idle) {
    if (pstate.valid()) r.values.push_back({"pstate", pstate.value});
    wrong.push_back(fmt::format("link at gen {} below its maximum gen {} while the GPU is not idle",
                                number_text(gen.value), number_text(gen_max.value)));
  }
  if (!wrong.empty()) {
    r.status = CheckStatus::kFail;
    r.summary = fmt::format("{}", fmt::join(wrong, "; "));
    return r;
  }
  r.status = CheckStatus::kPass;
  if (gen_known && width_known) {
    r.summary = gen.value < gen_max.value
                    ? fmt::format("link x{} at gen {} (parked below gen {} while idle)", number_text(width.value),
                                  number_text(gen.value), number_text(gen_max.value))
                    : fmt::format("link at gen {} x{}, its maximum", number_text(gen.value), number_text(width.value));
  } else {
    r.summary = "link at its maximum";
  }
  return r;
}

CheckResult thermal_check(const GpuSample& s) {
  CheckResult r;
  r.check = HealthCheck::kThermal;
  const FieldValue& temp = s[FieldId::kGpuTemp];
  const FieldValue& slowdown = s[FieldId::kSlowdownTemp];
  const FieldValue& reasons = s[FieldId::kClocksEventReasons];
  const bool by_temperature = temp.valid() && slowdown.valid();
  if (!by_temperature && !reasons.valid()) {
    r.summary = fmt::format("temperature and clock event reasons: {}", missing_text(temp.valid() ? reasons : temp));
    return r;
  }
  if (temp.valid()) r.values.push_back({"gpu_temp_celsius", temp.value});
  if (slowdown.valid()) r.values.push_back({"slowdown_temp_celsius", slowdown.value});
  std::uint64_t thermal_bits = 0;
  if (reasons.valid()) {
    r.values.push_back({"clocks_event_reasons", reasons.value});
    thermal_bits = static_cast<std::uint64_t>(reasons.value) & (kThrottleSwThermal | kThrottleHwThermal);
  }
  std::vector<std::string> wrong;
  if (by_temperature && temp.value >= slowdown.value) {
    wrong.push_back(fmt::format("{} °C, at or above its slowdown threshold {} °C", number_text(temp.value),
                                number_text(slowdown.value)));
  }
  if (thermal_bits != 0) {
    std::vector<std::string_view> names;
    if ((thermal_bits & kThrottleSwThermal) != 0) names.emplace_back("sw_thermal_slowdown");
    if ((thermal_bits & kThrottleHwThermal) != 0) names.emplace_back("hw_thermal_slowdown");
    wrong.push_back(fmt::format("clocks held down by {}{}", fmt::join(names, " and "),
                                temp.valid() ? fmt::format(" at {} °C", number_text(temp.value)) : ""));
  }
  if (!wrong.empty()) {
    r.status = CheckStatus::kFail;
    r.summary = fmt::format("{} (check the cooling)", fmt::join(wrong, "; "));
    return r;
  }
  r.status = CheckStatus::kPass;
  r.summary = by_temperature ? fmt::format("{} °C, below its slowdown threshold {} °C", number_text(temp.value),
                                           number_text(slowdown.value))
                             : "no thermal slowdown";
  return r;
}

CheckResult persistence_check(const model::GpuInfo& info) {
  CheckResult r;
  r.check = HealthCheck::kPersistence;
  if (!info.persistence_mode) {
    r.summary = "persistence mode: not reported by the GPU";
    return r;
  }
  r.values.push_back({"persistence_mode", *info.persistence_mode ? 1.0 : 0.0});
  if (*info.persistence_mode) {
    r.status = CheckStatus::kPass;
    r.summary = "persistence mode is on";
  } else {
    r.status = CheckStatus::kFail;
    r.summary = "persistence mode is off: the driver tears the GPU down between jobs (slow starts, reset "
                "clocks); run nvidia-persistenced or nvidia-smi -pm 1";
  }
  return r;
}

// XIDs grouped by (code, source), in code order.
struct XidTally {
  std::map<std::pair<unsigned, std::string>, XidSighting> by_key;

  void add(unsigned xid, std::string_view source, std::uint64_t count, std::string text) {
    auto& s = by_key[{xid, std::string(source)}];
    s.xid = xid;
    s.count += count;
    s.critical = find_critical_xid(xid) != nullptr;
    s.source = std::string(source);
    if (!text.empty()) s.text = std::move(text);
  }
  std::vector<XidSighting> sightings() const {
    std::vector<XidSighting> out;
    for (const auto& [key, s] : by_key) out.push_back(s);
    return out;
  }
};

// "XID 79 (GPU has fallen off the bus) x2 in the kernel log".
std::string sighting_text(const XidSighting& s) {
  const CriticalXid* known = find_critical_xid(s.xid);
  std::string text = fmt::format("XID {}", s.xid);
  if (known != nullptr) text += fmt::format(" ({})", known->meaning);
  if (s.count > 1) text += fmt::format(" x{}", s.count);
  text += s.source == "kernel_log" ? " in the kernel log" : " from NVML events";
  return text;
}

CheckResult xid_result(std::vector<XidSighting> sightings, bool looked, std::string not_looked_why) {
  CheckResult r;
  r.check = HealthCheck::kXid;
  std::uint64_t critical = 0, total = 0;
  std::vector<std::string> critical_texts, other_codes;
  for (const auto& s : sightings) {
    total += s.count;
    if (s.critical) {
      critical += s.count;
      critical_texts.push_back(sighting_text(s));
    } else {
      other_codes.push_back(fmt::format("{}", s.xid));
    }
  }
  r.xids = std::move(sightings);
  const std::string others =
      other_codes.empty() ? "" : fmt::format("; also XID {} (application errors, not counted)", fmt::join(other_codes, ", "));
  if (critical > 0) {
    r.status = CheckStatus::kFail;
    r.summary = fmt::format("{}{}", fmt::join(critical_texts, ", "), others);
  } else if (looked) {
    r.status = CheckStatus::kPass;
    r.summary = fmt::format("no critical XID{}", others);
  } else {
    r.summary = std::move(not_looked_why);
  }
  if (looked || critical > 0) {
    r.values.push_back({"critical_xid_count", static_cast<double>(critical)});
    r.values.push_back({"xid_count", static_cast<double>(total)});
  }
  return r;
}

// Why the xid check could not look (the kernel log's own state is reported beside it).
std::string xid_sources_missing(const HealthCheckOptions& options) {
  if (options.kernel_log && !options.kernel_log->readable) return "kernel log unreadable and no XID events watched";
  return "no kernel log read and no XID events watched";
}

CheckResult driver_check(const model::SystemInfo& system, const HealthCheckOptions& options) {
  CheckResult r;
  r.check = HealthCheck::kDriver;
  if (!options.cuda_runtime_version) {
    r.summary = "no CUDA runtime version given to compare the driver with";
    return r;
  }
  r.values.push_back({"cuda_runtime_version", static_cast<double>(*options.cuda_runtime_version)});
  if (!system.cuda_driver_version) {
    r.summary = "the driver does not report the CUDA version it supports";
    return r;
  }
  r.values.push_back({"cuda_driver_version", static_cast<double>(*system.cuda_driver_version)});
  const std::string driver = cuda_version_text(*system.cuda_driver_version);
  const std::string runtime = cuda_version_text(*options.cuda_runtime_version);
  if (*system.cuda_driver_version < *options.cuda_runtime_version) {
    r.status = CheckStatus::kFail;
    r.summary = fmt::format("the driver{} supports CUDA {}, older than the job's CUDA runtime {} "
                            "(cudaErrorInsufficientDriver); install a newer driver or CUDA's compat package",
                            system.driver_version.empty() ? "" : " " + system.driver_version, driver, runtime);
  } else {
    r.status = CheckStatus::kPass;
    r.summary = fmt::format("the driver supports CUDA {}, the job's runtime is {}", driver, runtime);
  }
  return r;
}

}  // namespace

std::string_view health_check_id(HealthCheck check) { return kCheckIds.at(static_cast<std::size_t>(check)); }

std::optional<HealthCheck> health_check_by_id(std::string_view id) {
  for (std::size_t i = 0; i < kCheckIds.size(); ++i) {
    if (kCheckIds[i] == id) return kAllChecks[i];
  }
  return std::nullopt;
}

std::span<const HealthCheck> all_health_checks() { return kAllChecks; }

std::expected<HealthCheckSet, std::string> parse_health_checks(std::string_view list) {
  HealthCheckSet set;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view word = list.substr(start, end - start);
    if (word == "all") {
      set = HealthCheckSet::all();
    } else if (auto check = health_check_by_id(word)) {
      set.add(*check);
    } else if (word.empty()) {
      return std::unexpected(std::string("empty check name"));
    } else {
      return std::unexpected(fmt::format("unknown check '{}' (ecc, xid, remap, pcie, thermal, persistence, driver, all)",
                                         word));
    }
    start = end + 1;
  }
  return set;
}

std::optional<int> parse_cuda_version(std::string_view text) {
  int parts[3] = {0, 0, 0};
  std::size_t count = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (true) {
    if (count == 3) return std::nullopt;
    auto [ptr, ec] = std::from_chars(p, end, parts[count]);
    if (ec != std::errc{} || ptr == p || parts[count] < 0) return std::nullopt;
    ++count;
    p = ptr;
    if (p == end) break;
    if (*p != '.') return std::nullopt;
    ++p;
  }
  // The driver API's encoding gives the minor version one digit's worth of room before it carries.
  if (parts[0] < 1 || parts[0] > 99 || parts[1] > 99) return std::nullopt;
  return parts[0] * 1000 + parts[1] * 10;
}

std::string cuda_version_text(int version) { return fmt::format("{}.{}", version / 1000, (version % 1000) / 10); }

std::span<const CriticalXid> critical_xids() { return kCriticalXids; }

const CriticalXid* find_critical_xid(unsigned xid) {
  for (const auto& c : kCriticalXids) {
    if (c.xid == xid) return &c;
  }
  return nullptr;
}

std::string_view check_status_id(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kNotChecked:
      break;
  }
  return "not_checked";
}

bool GpuHealth::healthy() const {
  return up && std::none_of(checks.begin(), checks.end(),
                            [](const CheckResult& c) { return c.gating && c.status == CheckStatus::kFail; });
}

bool HealthReport::healthy() const { return problem_count() == 0; }

std::size_t HealthReport::problem_count() const {
  std::size_t n = 0;
  auto gating_failures = [](const std::vector<CheckResult>& checks) {
    return static_cast<std::size_t>(std::count_if(checks.begin(), checks.end(), [](const CheckResult& c) {
      return c.gating && c.status == CheckStatus::kFail;
    }));
  };
  for (const auto& g : gpus) n += gating_failures(g.checks) + (g.up ? 0 : 1);
  return n + gating_failures(node);
}

HealthReport check_health(const model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus,
                          const model::SystemInfo& system, const HealthCheckOptions& options) {
  HealthReport report;
  report.fail_on = options.fail_on;
  if (options.kernel_log) {
    report.kernel_log_source = options.kernel_log->source;
    report.kernel_log_readable = options.kernel_log->readable;
    report.kernel_log_error = options.kernel_log->error;
  } else {
    report.kernel_log_error = options.kernel_log_not_read.empty() ? "no kernel log given" : options.kernel_log_not_read;
  }
  const bool log_readable = options.kernel_log && options.kernel_log->readable;
  const std::vector<KernelXid> no_xids;
  const std::vector<KernelXid>& log_xids = log_readable ? options.kernel_log->xids : no_xids;
  std::vector<bool> log_xid_matched(log_xids.size(), false);

  for (std::size_t pos = 0; pos < gpus.size(); ++pos) {
    const model::GpuInfo& info = gpus[pos];
    GpuHealth g;
    g.index = info.index;
    g.uuid = info.uuid;
    g.name = info.name;
    g.pci_bus_id = info.pci_bus_id;
    const GpuSample* sample = health_sample_of(snapshot, info.index, pos);
    // Kernel-log XIDs belong to the GPU at their PCI address, down or not: a GPU that fell off the bus
    // is the one whose XID 79 matters most.
    const auto address = parse_pci_address(info.pci_bus_id);
    XidTally tally;
    for (std::size_t k = 0; k < log_xids.size(); ++k) {
      if (address && log_xids[k].pci == *address) {
        log_xid_matched[k] = true;
        tally.add(log_xids[k].xid, "kernel_log", 1, log_xids[k].text);
      }
    }
    if (sample == nullptr || !sample->up) {
      g.up = false;
      g.down_error_code = sample == nullptr ? 15 : sample->down_error_code;  // 15: NVML_ERROR_GPU_IS_LOST
      // Nothing can be read from it; the kernel log may still say why it went (XID 79).
      if (log_readable && address) {
        g.checks.push_back(xid_result(tally.sightings(), true, ""));
        g.checks.back().gating = options.fail_on.contains(HealthCheck::kXid);
      }
      report.gpus.push_back(std::move(g));
      continue;
    }
    const GpuSample& s = *sample;
    for (const auto& [code, count] : s.events.xid_by_code) {
      const CriticalXid* known = find_critical_xid(static_cast<unsigned>(code));
      tally.add(static_cast<unsigned>(code), "nvml_events", count, known != nullptr ? std::string(known->meaning) : "");
    }
    const bool xid_looked = (log_readable && address) || options.xid_events_watched;
    g.checks.push_back(ecc_check(info, s));
    g.checks.push_back(xid_result(tally.sightings(), xid_looked,
                                  log_readable ? "the GPU's PCI bus id is unknown: kernel-log XIDs cannot be matched to it"
                                               : xid_sources_missing(options)));
    g.checks.push_back(remap_check(s));
    g.checks.push_back(pcie_check(s));
    g.checks.push_back(thermal_check(s));
    g.checks.push_back(persistence_check(info));
    for (auto& c : g.checks) c.gating = options.fail_on.contains(c.check);
    report.gpus.push_back(std::move(g));
  }

  // A critical XID at an address where no GPU answers: a GPU lost before discovery still fails the node.
  if (options.node_wide && log_readable) {
    std::map<std::string, XidTally> unmatched;  // by the address as the log wrote it
    for (std::size_t k = 0; k < log_xids.size(); ++k) {
      if (!log_xid_matched[k]) unmatched[log_xids[k].pci_text].add(log_xids[k].xid, "kernel_log", 1, log_xids[k].text);
    }
    for (auto& [pci, tally] : unmatched) {
      CheckResult r = xid_result(tally.sightings(), true, "");
      r.summary = fmt::format("at PCI {}, where no GPU was discovered: {}", pci, r.summary);
      r.pci_bus_id = pci;
      r.gating = options.fail_on.contains(HealthCheck::kXid);
      report.node.push_back(std::move(r));
    }
  }
  CheckResult driver = driver_check(system, options);
  driver.gating = options.fail_on.contains(HealthCheck::kDriver);
  report.node.push_back(std::move(driver));
  return report;
}

}  // namespace gpuscope::analysis
