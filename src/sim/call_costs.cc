#include "sim/call_costs.h"

#include <time.h>

#include <cerrno>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace gpuscope::sim {
namespace {

using std::chrono::nanoseconds;

struct FunctionRow {
  std::string_view function;
  double cpu_us;
  double blocked_us;
};

struct FieldRow {
  unsigned field_id;
  double cpu_us;
  std::string_view shared;
};

// The h100-580 profile: one H100 80GB HBM3 (SXM) on driver 580.159.04, idle, one process. The
// measured rows are the "cpu" column of shared/reference/real-h100/nvml_call_costs.txt (callcost.c,
// gpmcost.c); a call blocks (sleeps) for wall - cpu only where its wall time is more than twice its
// CPU time (GetPcieThroughput: it measures a 20 ms window); elsewhere the difference is noise.
// tests/sim/call_costs_test.cc reads that file and checks these rows against it.
constexpr auto kH100Measured = std::to_array<FunctionRow>({
    {"nvmlInit_v2", 11000.0, 0},  // "nvmlInit: wall 10.9 ms cpu 11.0 ms"
    {"nvmlDeviceGetUtilizationRates", 2.2, 0},
    {"nvmlDeviceGetMemoryInfo_v2", 6.1, 0},
    {"nvmlDeviceGetMemoryInfo", 5.4, 0},
    {"nvmlDeviceGetTemperature", 0.5, 0},
    {"nvmlDeviceGetPowerUsage", 1.2, 0},
    {"nvmlDeviceGetTotalEnergyConsumption", 3975.6, 0},
    {"nvmlDeviceGetClockInfo", 0.7, 0},  // measured for SM; every clock type is one call
    {"nvmlDeviceGetCurrentClocksEventReasons", 0.6, 0},
    {"nvmlDeviceGetPerformanceState", 0.4, 0},
    {"nvmlDeviceGetComputeRunningProcesses_v3", 10.7, 0},
    {"nvmlDeviceGetEncoderUtilization", 0.4, 0},
    {"nvmlDeviceGetViolationStatus", 784.5, 0},  // measured for POWER; each policy is a call of its own
    {"nvmlDeviceGetTotalEccErrors", 4.6, 0},
    {"nvmlDeviceGetRemappedRows", 0.5, 0},
    {"nvmlDeviceGetPcieReplayCounter", 167.2, 0},
    {"nvmlDeviceGetCurrPcieLinkGeneration", 0.6, 0},
    {"nvmlDeviceGetPcieThroughput", 793.5, 20963.4 - 793.5},
    {"nvmlDeviceGetPciInfo_v3", 1.1, 0},
    {"nvmlDeviceGetName", 0.4, 0},
    {"nvmlGpmSampleGet", 40.0, 0},
    // ~1.24 ms a call whatever the number of metrics (gpmcost.c: 1 to 24 metrics, 1232-1408 us).
    {"nvmlGpmMetricsGet", 1238.5, 0},
    // The 1000 ms wait's CPU (100 ms: 53.4 us; 10 ms: 38.6). The wait itself is the simulator's own.
    {"nvmlEventSetWait_v2", 56.6, 0},
});

// Other names of a measured call: the same driver query behind another version or argument.
constexpr auto kH100Aliases = std::to_array<std::pair<std::string_view, std::string_view>>({
    {"nvmlInit", "nvmlInit_v2"},
    {"nvmlInitWithFlags", "nvmlInit_v2"},
    {"nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetCurrentClocksEventReasons"},
    {"nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses_v3"},
    {"nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetComputeRunningProcesses_v3"},
    {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v3"},
    {"nvmlDeviceGetGraphicsRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses_v3"},
    {"nvmlDeviceGetGraphicsRunningProcesses", "nvmlDeviceGetComputeRunningProcesses_v3"},
    {"nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v3"},
    {"nvmlDeviceGetDecoderUtilization", "nvmlDeviceGetEncoderUtilization"},
    {"nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo_v3"},
    {"nvmlDeviceGetPciInfo", "nvmlDeviceGetPciInfo_v3"},
    {"nvmlDeviceGetPciInfoExt", "nvmlDeviceGetPciInfo_v3"},
    {"nvmlDeviceGetRunningProcessDetailList", "nvmlDeviceGetComputeRunningProcesses_v3"},
    {"nvmlGpmMigSampleGet", "nvmlGpmSampleGet"},
    {"nvmlEventSetWait", "nvmlEventSetWait_v2"},
});

// Not in nvml_call_costs.txt, inferred from the real agent's own per-reading timings on the same
// machine (history.json.gz, gpuscope_collector_duration_seconds, 174 readings):
// - "processes" took 1.83 ms (median) with one process on the GPU and 0.05 ms with none; what a
//   process adds is nvmlDeviceGetProcessUtilization's count probe and read: ~0.89 ms a call.
// - "device" took 1.06 ms (median) on readings without the slow counters, of which the measured
//   calls above are ~16 us: ~1.0 ms per reading goes to the per-reading calls nobody timed, split
//   evenly here (140 us each) for want of a per-call figure.
constexpr auto kH100Inferred = std::to_array<FunctionRow>({
    {"nvmlDeviceGetProcessUtilization", 890.0, 0},
    {"nvmlDeviceGetPowerManagementLimit", 140.0, 0},
    {"nvmlDeviceGetEnforcedPowerLimit", 140.0, 0},
    {"nvmlDeviceGetFanSpeed", 140.0, 0},
    {"nvmlDeviceGetMaxPcieLinkGeneration", 140.0, 0},
    {"nvmlDeviceGetCurrPcieLinkWidth", 140.0, 0},
    {"nvmlDeviceGetMaxPcieLinkWidth", 140.0, 0},
    {"nvmlDeviceGetBAR1MemoryInfo", 140.0, 0},
});

// The queries nvidia-smi adds beyond the sampled catalog, never timed on the real driver: charged like
// the measured call that reads the same driver state (a static fact cached by the library: ~1 us like
// GetName/GetPciInfo; ECC by location like the ECC totals; per-process utilization like
// GetProcessUtilization, the same sample buffer).
constexpr auto kH100Unmeasured = std::to_array<FunctionRow>({
    {"nvmlDeviceGetJpgUtilization", 0.4, 0},  // as GetEncoderUtilization
    {"nvmlDeviceGetOfaUtilization", 0.4, 0},
    {"nvmlDeviceGetProcessesUtilizationInfo", 890.0, 0},
    {"nvmlDeviceGetSamples", 10.0, 0},
    {"nvmlDeviceGetMemoryErrorCounter", 4.6, 0},  // as GetTotalEccErrors
    {"nvmlDeviceGetSramEccErrorStatus", 4.6, 0},
    {"nvmlDeviceGetRemappedRows_v2", 0.5, 0},  // as GetRemappedRows
    {"nvmlDeviceGetRowRemapperHistogram", 0.5, 0},
    {"nvmlDeviceGetCurrentClockFreqs", 5.0, 0},
    {"nvmlDeviceGetDynamicPstatesInfo", 2.0, 0},
    {"nvmlDeviceGetMarginTemperature", 0.5, 0},  // as GetTemperature
    {"nvmlDeviceGetPlatformInfo", 5.0, 0},
    {"nvmlDeviceGetGpuFabricInfoV", 5.0, 0},
    {"nvmlDeviceGetPcieSpeed", 0.6, 0},  // as GetCurrPcieLinkGeneration
    {"nvmlDeviceGetPcieLinkMaxSpeed", 0.6, 0},
    {"nvmlDeviceGetGpuMaxPcieLinkGeneration", 0.6, 0},
    {"nvmlDeviceGetPowerManagementLimitConstraints", 1.2, 0},  // as GetPowerUsage
    {"nvmlDeviceGetPowerState", 0.4, 0},                       // as GetPerformanceState
    {"nvmlDeviceGetSupportedClocksEventReasons", 0.6, 0},
    {"nvmlDeviceGetSupportedClocksThrottleReasons", 0.6, 0},
    {"nvmlDeviceGetApplicationsClock", 0.7, 0},  // as GetClockInfo
    {"nvmlDeviceGetDefaultApplicationsClock", 0.7, 0},
    {"nvmlDeviceGetMaxCustomerBoostClock", 0.7, 0},
    {"nvmlDeviceGetSupportedMemoryClocks", 1.0, 0},
    {"nvmlDeviceGetInforomImageVersion", 1.0, 0},
    {"nvmlDeviceGetInforomVersion", 1.0, 0},
    {"nvmlDeviceGetInforomConfigurationChecksum", 1.0, 0},
    {"nvmlDeviceValidateInforom", 10.0, 0},
    {"nvmlDeviceGetGspFirmwareVersion", 1.0, 0},
    {"nvmlDeviceGetGspFirmwareMode", 1.0, 0},
    {"nvmlDeviceGetConfComputeMemSizeInfo", 1.0, 0},
    {"nvmlDeviceGetConfComputeProtectedMemoryUsage", 1.0, 0},
    {"nvmlDeviceGetMemoryBusWidth", 0.4, 0},
    {"nvmlDeviceGetBoardId", 0.4, 0},
    {"nvmlDeviceGetModuleId", 0.4, 0},
    {"nvmlDeviceGetBrand", 0.4, 0},
    {"nvmlDeviceGetNumFans", 0.4, 0},
    {"nvmlDeviceGetIrqNum", 0.4, 0},
    {"nvmlDeviceGetAccountingMode", 0.4, 0},
    {"nvmlDeviceGetAccountingBufferSize", 0.4, 0},
    {"nvmlDeviceGetPowerManagementMode", 0.4, 0},
    {"nvmlDeviceGetPowerSource", 0.4, 0},
    {"nvmlDeviceGetDefaultEccMode", 0.4, 0},
    {"nvmlDeviceGetVirtualizationMode", 0.4, 0},
    {"nvmlDeviceGetAddressingMode", 0.4, 0},
    {"nvmlDeviceGetC2cModeInfoV", 0.4, 0},
    {"nvmlDeviceGetEncoderStats", 0.4, 0},
    {"nvmlDeviceGetFBCStats", 0.4, 0},
    {"nvmlDeviceGetRepairStatus", 0.4, 0},
    {"nvmlDeviceGetUnrepairableMemoryFlag_v1", 0.4, 0},
    {"nvmlDeviceGetCapabilities", 0.4, 0},
    {"nvmlDeviceGetPdi", 0.4, 0},
    {"nvmlDeviceGetAdaptiveClockInfoStatus", 0.4, 0},
    {"nvmlDeviceGetGpcClkVfOffset", 0.4, 0},
    {"nvmlDeviceGetMemClkVfOffset", 0.4, 0},
    {"nvmlDeviceGetNvLinkState", 0.4, 0},
    {"nvmlGpmQueryIfStreamingEnabled", 0.4, 0},
    // MIG: the driver's cached partition state, a static fact like GetName; a MIG device's memory and
    // processes as the GPU's (GetMemoryInfo, GetComputeRunningProcesses_v3 share their rows by name).
    {"nvmlDeviceGetMigMode", 0.4, 0},
    {"nvmlDeviceGetMaxMigDeviceCount", 0.4, 0},
    {"nvmlDeviceGetMigDeviceHandleByIndex", 0.4, 0},
    {"nvmlDeviceGetGpuInstanceId", 0.4, 0},
    {"nvmlDeviceGetComputeInstanceId", 0.4, 0},
    {"nvmlDeviceIsMigDeviceHandle", 0.4, 0},
    {"nvmlDeviceGetDeviceHandleFromMigDeviceHandle", 0.4, 0},
    {"nvmlDeviceGetGpuInstanceById", 0.4, 0},
    {"nvmlGpuInstanceGetInfo", 0.4, 0},
    {"nvmlDeviceGetGpuInstances", 0.4, 0},
    {"nvmlDeviceGetGpuInstanceProfileInfoV", 1.0, 0},
    {"nvmlDeviceGetGpuInstanceProfileInfoByIdV", 1.0, 0},
    {"nvmlDeviceGetAttributes_v2", 1.0, 0},
});

// nvmlDeviceGetFieldValues: the call itself, then each field. nvml_call_costs.txt times batches of
// callcost.c's ids[] list (1, 2, 4, 8, 16, 32 fields); these rows reproduce all six figures:
//   {186}                       0.9 us   = call 0.5 + power 0.4
//   + {83}                   4018.4 us   energy 4017.5 (the energy query, as GetTotalEnergyConsumption)
//   + {82, 94}               4182.9 us   memory temp 0.5, PCIe replays 164.0 (as GetPcieReplayCounter)
//   + {3, 4, 5, 6}           4206.9 us   ECC totals 6.0 each
//   + {142-145, 74-77}       4788.7 us   remapped rows 0.5 each; the 4 perf policies only 579.8 together:
//                                        one violation query per batch, not 4 x 784.5
//   + 16 more               12981.7 us   perf policies 78, 79 (already paid), energy 83 again and 191
//                                        (NVML_FI_DEV_ENERGY): 2 x 4017.5 (repeats pay again), 82 and 186
//                                        again (0.9), and 9 others 17.5 each (the 157 us left)
constexpr double kFieldValuesCallUs = 0.5;
constexpr auto kH100Fields = std::to_array<FieldRow>({
    {186, 0.4, ""},     // POWER_INSTANT
    {83, 4017.5, ""},   // TOTAL_ENERGY_CONSUMPTION
    {191, 4017.5, ""},  // ENERGY (the same counter)
    {82, 0.5, ""},      // MEMORY_TEMP
    {94, 164.0, ""},    // PCIE_REPLAY_COUNTER
    {3, 6.0, ""},       // ECC_SBE_VOL_TOTAL
    {4, 6.0, ""},       // ECC_DBE_VOL_TOTAL
    {5, 6.0, ""},       // ECC_SBE_AGG_TOTAL
    {6, 6.0, ""},       // ECC_DBE_AGG_TOTAL
    {142, 0.5, ""},     // REMAPPED_COR
    {143, 0.5, ""},     // REMAPPED_UNC
    {144, 0.5, ""},     // REMAPPED_PENDING
    {145, 0.5, ""},     // REMAPPED_FAILURE
    {74, 579.8, "perf_policy"},  // PERF_POLICY_POWER
    {75, 579.8, "perf_policy"},  // PERF_POLICY_THERMAL
    {76, 579.8, "perf_policy"},  // PERF_POLICY_SYNC_BOOST
    {77, 579.8, "perf_policy"},  // PERF_POLICY_BOARD_LIMIT
    {78, 579.8, "perf_policy"},  // PERF_POLICY_LOW_UTILIZATION
    {79, 579.8, "perf_policy"},  // PERF_POLICY_RELIABILITY
    {197, 17.5, ""},    // PCIE_COUNT_TX_BYTES
    {198, 17.5, ""},    // PCIE_COUNT_RX_BYTES
    {185, 17.5, ""},    // POWER_AVERAGE
    {66, 17.5, ""},     // NVLINK_BANDWIDTH_C0_TOTAL (NOT_SUPPORTED there)
    {29, 17.5, ""},     // RETIRED_SBE (NOT_SUPPORTED)
    {30, 17.5, ""},     // RETIRED_DBE (NOT_SUPPORTED)
    {31, 17.5, ""},     // RETIRED_PENDING (NOT_SUPPORTED)
    {187, 17.5, ""},    // POWER_MIN_LIMIT
    {190, 17.5, ""},    // POWER_CURRENT_LIMIT
});

nanoseconds us(double v) { return nanoseconds(std::llround(v * 1000.0)); }

CallCostTable h100_580() {
  CallCostTable t;
  t.profile = "h100-580";
  for (const auto& r : kH100Measured) t.functions[std::string(r.function)] = {us(r.cpu_us), us(r.blocked_us)};
  for (const auto& [alias, of] : kH100Aliases) t.functions[std::string(alias)] = t.functions.at(std::string(of));
  for (const auto& r : kH100Inferred) t.functions[std::string(r.function)] = {us(r.cpu_us), us(r.blocked_us)};
  for (const auto& r : kH100Unmeasured) t.functions[std::string(r.function)] = {us(r.cpu_us), us(r.blocked_us)};
  t.functions["nvmlDeviceGetFieldValues"] = {us(kFieldValuesCallUs), {}};
  for (const auto& r : kH100Fields) t.fields[r.field_id] = FieldCost{{us(r.cpu_us), {}}, std::string(r.shared)};
  return t;
}

// initial-exec: in the static TLS block, not a dynamic one. A client that dlcloses the library (each
// in-process CLI test does) otherwise leaves a stale dynamic-TLS entry behind, and LeakSanitizer's
// exit-time scan of it crashes.
__attribute__((tls_model("initial-exec"))) thread_local CallCharge* current_charge = nullptr;

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

CallCost CallCostTable::call(std::string_view function) const {
  const auto it = functions.find(function);
  return it == functions.end() ? CallCost{} : it->second;
}

CallCost CallCostTable::field_values(std::span<const unsigned> field_ids) const {
  CallCost total;
  std::map<std::string_view, CallCost> shared;  // per shared query: the most any of its fields costs
  for (const unsigned id : field_ids) {
    const auto it = fields.find(id);
    if (it == fields.end()) continue;
    const FieldCost& f = it->second;
    if (f.shared.empty()) {
      total += f.cost;
      continue;
    }
    CallCost& s = shared[f.shared];
    s.cpu = std::max(s.cpu, f.cost.cpu);
    s.blocked = std::max(s.blocked, f.cost.blocked);
  }
  for (const auto& [name, cost] : shared) total += cost;
  return total;
}

std::optional<CallCostTable> cost_profile(std::string_view name) {
  if (name == "none") return CallCostTable{};
  if (name == "h100-580") return h100_580();
  return std::nullopt;
}

std::string cost_profile_names() { return "none, h100-580"; }

std::expected<nanoseconds, std::string> parse_cost_duration(std::string_view text) {
  const auto bad = [&] {
    return std::unexpected("bad cost '" + std::string(text) + "' (e.g. 4ms, 784.5us, 250ns, 0)");
  };
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || !std::isfinite(value) || value < 0) return bad();
  const std::string_view unit(ptr, static_cast<std::size_t>(text.data() + text.size() - ptr));
  double factor = 0;
  if (unit == "ns") {
    factor = 1;
  } else if (unit == "us" || unit == "µs") {
    factor = 1e3;
  } else if (unit == "ms") {
    factor = 1e6;
  } else if (unit == "s") {
    factor = 1e9;
  } else if (unit.empty() && value == 0) {
    factor = 0;
  } else {
    return bad();
  }
  const double ns = value * factor;
  if (ns > 60e9) return std::unexpected("cost '" + std::string(text) + "' longer than 60s");
  return nanoseconds(std::llround(ns));
}

void spend(const CallCost& cost) noexcept {
  if (cost.cpu.count() > 0) {
    // Spinning on the thread's own CPU clock spends exactly this much CPU however busy the machine
    // is: a preempted thread's clock stops, so it spins longer in wall time, as a real ioctl would.
    const std::int64_t until = thread_cpu_ns() + cost.cpu.count();
    while (thread_cpu_ns() < until) {
    }
  }
  if (cost.blocked.count() > 0) {
    timespec ts{static_cast<time_t>(cost.blocked.count() / 1'000'000'000),
                static_cast<long>(cost.blocked.count() % 1'000'000'000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
}

CallCharge::CallCharge() noexcept : outer_(current_charge) { current_charge = this; }

CallCharge::~CallCharge() {
  current_charge = outer_;
  spend(cost_);
}

void CallCharge::add(const CallCost& cost) noexcept {
  if (current_charge != nullptr) current_charge->cost_ += cost;
}

}  // namespace gpuscope::sim
