#include "analysis/gpu_signals.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

namespace gpuscope::analysis {
namespace {

using namespace std::string_view_literals;

struct SignalRow {
  Signal signal;
  std::string_view title;
  std::vector<std::string_view> series;
};

// Per-reason throttle series (gpuscope's) carry the reason in a label; the DCGM field is the mask.
constexpr std::string_view kThrottleReasonSeries = "gpuscope_throttle_reason_active";

const std::vector<SignalRow>& table() {
  static const std::vector<SignalRow> rows = {
      {Signal::kGrActive, "GR engine active", {"DCGM_FI_PROF_GR_ENGINE_ACTIVE"}},
      {Signal::kSmActive, "SM active", {"DCGM_FI_PROF_SM_ACTIVE"}},
      {Signal::kSmOccupancy, "SM occupancy", {"DCGM_FI_PROF_SM_OCCUPANCY"}},
      {Signal::kTensorActive, "tensor pipes active", {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}},
      {Signal::kFp64Active, "FP64 pipes active", {"DCGM_FI_PROF_PIPE_FP64_ACTIVE"}},
      {Signal::kFp32Active, "FP32 pipes active", {"DCGM_FI_PROF_PIPE_FP32_ACTIVE"}},
      {Signal::kFp16Active, "FP16 pipes active", {"DCGM_FI_PROF_PIPE_FP16_ACTIVE"}},
      {Signal::kDramActive, "DRAM active", {"DCGM_FI_PROF_DRAM_ACTIVE"}},
      {Signal::kPcieRxBytes, "PCIe RX", {"DCGM_FI_PROF_PCIE_RX_BYTES"}},
      {Signal::kPcieTxBytes, "PCIe TX", {"DCGM_FI_PROF_PCIE_TX_BYTES"}},
      {Signal::kNvlinkRxBytes, "NVLink RX", {"DCGM_FI_PROF_NVLINK_RX_BYTES"}},
      {Signal::kNvlinkTxBytes, "NVLink TX", {"DCGM_FI_PROF_NVLINK_TX_BYTES"}},
      {Signal::kUtilization, "utilization.gpu", {"DCGM_FI_DEV_GPU_UTIL"}},
      {Signal::kMemoryUtilization, "utilization.memory", {"DCGM_FI_DEV_MEM_COPY_UTIL"}},
      {Signal::kPower, "power", {"DCGM_FI_DEV_POWER_USAGE"}},
      {Signal::kPowerLimit, "power limit", {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_POWER_MGMT_LIMIT"}},
      {Signal::kSmClock, "SM clock", {"DCGM_FI_DEV_SM_CLOCK"}},
      {Signal::kMaxSmClock, "max SM clock", {"DCGM_FI_DEV_MAX_SM_CLOCK"}},
      {Signal::kGpuTemp, "GPU temperature", {"DCGM_FI_DEV_GPU_TEMP"}},
      {Signal::kMemoryTemp, "memory temperature", {"DCGM_FI_DEV_MEMORY_TEMP"}},
      {Signal::kSlowdownTemp, "slowdown temperature", {"DCGM_FI_DEV_SLOWDOWN_TEMP"}},
      {Signal::kFbUsed, "memory used", {"DCGM_FI_DEV_FB_USED"}},
      {Signal::kFbFree, "memory free", {"DCGM_FI_DEV_FB_FREE"}},
      {Signal::kFbReserved, "memory reserved", {"DCGM_FI_DEV_FB_RESERVED"}},
      {Signal::kEccDbeVolatile, "uncorrectable ECC errors", {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}},
      {Signal::kEccSbeVolatile, "correctable ECC errors", {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"}},
      {Signal::kRowRemapFailure, "row remap failure", {"DCGM_FI_DEV_ROW_REMAP_FAILURE"}},
      {Signal::kRowRemapPending, "row remap pending", {"DCGM_FI_DEV_ROW_REMAP_PENDING"}},
      {Signal::kXid, "last XID", {"DCGM_FI_DEV_XID_ERRORS"}},
      {Signal::kGpuUp, "GPU answering", {"gpuscope_gpu_up"}},
      {Signal::kPcieLinkGen, "PCIe link generation", {"gpuscope_pcie_link_gen", "DCGM_FI_DEV_PCIE_LINK_GEN"}},
      {Signal::kPcieLinkWidth, "PCIe link width", {"gpuscope_pcie_link_width", "DCGM_FI_DEV_PCIE_LINK_WIDTH"}},
      {Signal::kPcieLinkGenMax, "PCIe max generation",
       {"gpuscope_pcie_link_gen_max", "DCGM_FI_DEV_PCIE_MAX_LINK_GEN"}},
      {Signal::kPcieLinkWidthMax, "PCIe max width",
       {"gpuscope_pcie_link_width_max", "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH"}},
      {Signal::kThrottleReasons, "throttle reasons",
       {kThrottleReasonSeries, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"}},
  };
  return rows;
}

const SignalRow& row(Signal s) { return table()[static_cast<std::size_t>(s)]; }

// gpuscope_throttle_reason_active's reason label → NVML's bit.
std::uint64_t throttle_reason_bit(std::string_view reason) {
  static const std::map<std::string_view, std::uint64_t> bits = {
      {"gpu_idle", 0x1},          {"applications_clocks_setting", 0x2}, {"sw_power_cap", kThrottleSwPowerCap},
      {"hw_slowdown", kThrottleHwSlowdown}, {"sync_boost", 0x10},       {"sw_thermal_slowdown", kThrottleSwThermal},
      {"hw_thermal_slowdown", kThrottleHwThermal}, {"hw_power_brake_slowdown", kThrottleHwPowerBrake},
      {"display_clock_setting", 0x100},
  };
  const auto it = bits.find(reason);
  return it == bits.end() ? 0 : it->second;
}

// Labels that differ between the series of one GPU and so are not part of its identity.
const std::vector<std::string>& non_identity_labels() {
  static const std::vector<std::string> names = {std::string(store::kMetricNameLabel), "reason", "xid", "le",
                                                 "err_code", "err_msg"};
  return names;
}

std::string host_of(const store::Labels& l) {
  for (std::string_view name : {"Hostname"sv, "hostname"sv, "instance"sv}) {
    if (auto v = l.get(name); !v.empty()) return std::string(v);
  }
  return {};
}

std::size_t signal_of(std::string_view name, std::size_t& preference) {
  // A hash, not a walk of the table: the agent groups ~300 series at every evaluation.
  static const std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> by_name = [] {
    std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> out;
    const auto& rows = table();
    for (std::size_t s = 0; s < rows.size(); ++s) {
      for (std::size_t p = 0; p < rows[s].series.size(); ++p) out.emplace(rows[s].series[p], std::pair(s, p));
    }
    return out;
  }();
  const auto it = by_name.find(name);
  if (it == by_name.end()) return kSignalCount;
  preference = it->second.second;
  return it->second.first;
}

int index_of(const std::string& gpu) {
  int n = 0;
  for (char c : gpu) {
    if (c < '0' || c > '9') return 1 << 30;
    n = n * 10 + (c - '0');
    if (n > (1 << 20)) return 1 << 30;
  }
  return gpu.empty() ? 1 << 30 : n;
}

}  // namespace

std::span<const std::string_view> signal_series(Signal signal) { return row(signal).series; }
std::string_view signal_title(Signal signal) { return row(signal).title; }

std::span<const std::string_view> signal_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const auto& r : table()) out.insert(out.end(), r.series.begin(), r.series.end());
    return out;
  }();
  return names;
}

const std::string& signal_name_regex() {
  static const std::string regex = [] {
    std::string out;
    for (std::string_view name : signal_names()) {
      if (!out.empty()) out += '|';
      out += name;
    }
    return out;
  }();
  return regex;
}

std::span<const Point> GpuHistory::window(Signal s, std::int64_t from_ms, std::int64_t to_ms) const {
  const auto& pts = points(s);
  const auto lo = std::upper_bound(pts.begin(), pts.end(), from_ms,
                                   [](std::int64_t t, const Point& p) { return t < p.t_ms; });
  const auto hi = std::upper_bound(lo, pts.end(), to_ms, [](std::int64_t t, const Point& p) { return t < p.t_ms; });
  return {lo, hi};
}

std::string gpu_key(const store::Labels& labels) {
  const std::string_view uuid = labels.get("UUID");
  const std::string_view gpu = labels.get("gpu");
  if (uuid.empty() && gpu.empty()) return {};
  const std::string_view mig = labels.get("GPU_I_ID");
  return host_of(labels) + "/" + (uuid.empty() ? "gpu" + std::string(gpu) : std::string(uuid)) +
         (mig.empty() ? "" : "/mig" + std::string(mig));
}

std::vector<GpuHistory> group_by_gpu(std::vector<store::SeriesSamples> series) {
  struct Slot {
    GpuHistory history;
    // Which spelling fed each signal (a lower number is preferred; a GPU with both keeps one).
    std::array<std::size_t, kSignalCount> preference;
    std::map<std::int64_t, std::uint64_t> throttle_bits;  // from the per-reason series
  };
  std::map<std::string, Slot> by_key;
  for (auto& s : series) {
    const std::string_view name = s.labels.metric_name();
    std::size_t preference = 0;
    const std::size_t signal = signal_of(name, preference);
    if (signal == kSignalCount) continue;
    const std::string key = gpu_key(s.labels);
    if (key.empty()) continue;
    const std::string uuid(s.labels.get("UUID"));
    const std::string gpu(s.labels.get("gpu"));
    const std::string host = host_of(s.labels);
    auto [it, fresh] = by_key.try_emplace(key);
    Slot& slot = it->second;
    if (fresh) {
      slot.preference.fill(static_cast<std::size_t>(-1));
      GpuIdentity& id = slot.history.identity;
      id.key = key;
      id.labels = s.labels.without(non_identity_labels());
      id.gpu = gpu;
      id.uuid = uuid;
      id.host = host;
      id.model = std::string(s.labels.get("modelName"));
      id.job = std::string(s.labels.get("hpc_job"));
      id.mig_instance = std::string(s.labels.get("GPU_I_ID"));
      id.mig_profile = std::string(s.labels.get("GPU_I_PROFILE"));
    }
    if (name == kThrottleReasonSeries) {
      if (preference > slot.preference[signal]) continue;
      slot.preference[signal] = preference;
      const std::uint64_t bit = throttle_reason_bit(s.labels.get("reason"));
      for (const auto& sample : s.samples) {
        if (!std::isfinite(sample.value)) continue;
        auto& bits = slot.throttle_bits[sample.t_ms];
        if (sample.value > 0.5) bits |= bit;
      }
      continue;
    }
    if (preference > slot.preference[signal]) continue;
    auto& points = slot.history.signals[signal];
    if (preference < slot.preference[signal]) points.clear();  // a preferred spelling replaces another
    slot.preference[signal] = preference;
    points.reserve(points.size() + s.samples.size());
    for (const auto& sample : s.samples) {
      if (!std::isfinite(sample.value)) continue;  // staleness markers, NaN
      points.push_back({sample.t_ms, sample.value});
    }
  }
  std::vector<GpuHistory> out;
  out.reserve(by_key.size());
  for (auto& [key, slot] : by_key) {
    auto& throttle = slot.history.signals[static_cast<std::size_t>(Signal::kThrottleReasons)];
    if (!slot.throttle_bits.empty()) {
      throttle.clear();
      for (const auto& [t, bits] : slot.throttle_bits) throttle.push_back({t, static_cast<double>(bits)});
    }
    for (auto& points : slot.history.signals) {
      const auto by_time = [](const Point& a, const Point& b) { return a.t_ms < b.t_ms; };
      // One series per signal, the usual case, comes sorted: no sort (and no buffer for one).
      if (!std::is_sorted(points.begin(), points.end(), by_time)) std::stable_sort(points.begin(), points.end(), by_time);
      // Two series of one signal (a relabelled duplicate) may repeat a time: keep one point per time.
      points.erase(std::unique(points.begin(), points.end(),
                               [](const Point& a, const Point& b) { return a.t_ms == b.t_ms; }),
                   points.end());
    }
    out.push_back(std::move(slot.history));
  }
  std::sort(out.begin(), out.end(), [](const GpuHistory& a, const GpuHistory& b) {
    return std::tuple(a.identity.host, index_of(a.identity.gpu), a.identity.key) <
           std::tuple(b.identity.host, index_of(b.identity.gpu), b.identity.key);
  });
  return out;
}

}  // namespace gpuscope::analysis
