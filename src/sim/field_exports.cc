// nvmlDeviceGetFieldValues: every field id the real H100 on driver 580 answers (1-259, plus 269-271),
// each with the return code and value type that driver gives it (nvml_answers.json), its value from
// the same physics, health counters and catalog the single queries answer from.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "nvml/nvml_abi.h"
#include "sim/query_helpers.h"

using namespace gpuscope::sim;

namespace {

enum : unsigned {
  kFiEccCurrent = 1,
  kFiEccPending = 2,
  kFiEccSbeAggTotal = 5,
  kFiEccDbeAggTotal = 6,
  kFiEccSbeVolDev = 11,
  kFiEccDbeVolDev = 12,
  kFiEccDbeVolCbu = 17,
  kFiEccSbeAggDev = 22,
  kFiEccDbeAggDev = 23,
  kFiEccDbeAggCbu = 28,
  kFiRetiredSbe = 29,
  kFiRetiredDbe = 30,
  kFiRetiredPending = 31,
  kFiPerfPolicyTotalAppClocks = 80,
  kFiPerfPolicyTotalBaseClocks = 81,
  kFiRetiredPendingSbe = 92,
  kFiRetiredPendingDbe = 93,
  kFiPcieReplayRollover = 95,
  kFiNvlinkThroughputRawTx = 140,
  kFiNvlinkThroughputRawRx = 141,
  kFiNvswitchConnectedLinks = 147,
  kFiPcieL0ToRecovery = 169,
  kFiPcieCorrectableErrors = 173,
  kFiPcieLaneErrors = 183,
  kFiResetlessMig = 184,
  kFiPowerMinLimit = 187,
  kFiPowerMaxLimit = 188,
  kFiPowerDefaultLimit = 189,
  kFiPowerCurrentLimit = 190,
  kFiEnergy = 191,
  kFiPowerRequestedLimit = 192,
  kFiPcieTxBytes = 197,
  kFiPcieRxBytes = 198,
  kFiMigIndependentQuery = 199,
  kFiResetStatus = 226,
  kFiPcieInboundAtomics = 229,
};

// The value type the driver gives each field id, whether it answers it or not (the real H100's
// nvml_answers.json: NVLink error and bandwidth counters double, PCIe and policy fields unsigned).
nvmlValueType_t field_type(unsigned id) {
  if (id <= 31) return NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  if (id <= 73) return NVML_VALUE_TYPE_DOUBLE;
  if (id <= 81 || id == 83 || id == 92 || id == 93 || id == 191 || (id >= 138 && id <= 145) ||
      (id >= 161 && id <= 163) || (id >= 269 && id <= 271)) {
    return NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  }
  if ((id >= 84 && id <= 90) || (id >= 96 && id <= 137) || (id >= 147 && id <= 160) || (id >= 201 && id <= 222) ||
      (id >= 235 && id <= 250) || (id >= 254 && id <= 258)) {
    return NVML_VALUE_TYPE_DOUBLE;
  }
  if (id >= 193 && id <= 196) return NVML_VALUE_TYPE_SIGNED_INT;
  return NVML_VALUE_TYPE_UNSIGNED_INT;
}

bool is_nvlink_field(unsigned id) {
  return (id >= 32 && id <= 73) || (id >= 84 && id <= 91) || (id >= 96 && id <= 141) || id == 146 ||
         (id >= 148 && id <= 168) || (id >= 200 && id <= 225) || (id >= 235 && id <= 250);
}

struct FieldContext {
  Simulator& sim;
  SimDevice& d;
  double t;
  const Reading& r;
  std::optional<HealthCounts> health;
  const HealthCounts& counts() {
    if (!health) health = sim.health(d.index, t);
    return *health;
  }
};

unsigned long long field_ns(double seconds) { return static_cast<unsigned long long>(std::llround(seconds * 1e9)); }
unsigned field_milli(double x) { return static_cast<unsigned>(std::lround(x * 1000.0)); }

// Fills f.value for f.fieldId; the return code, or SUCCESS.
nvmlReturn_t field_value(FieldContext& c, nvmlFieldValue_t& f) {
  const unsigned id = f.fieldId;
  const GpuModel& m = c.d.model;
  const BoardFacts& facts = board_facts(m);
  const unsigned links = nvlink_links(c.d);
  auto& v = f.value;
  if (c.sim.scenario().node.driver_profile == DriverProfile::kR535 &&
      (id == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION || id > NVML_FI_PWR_SMOOTHING_ENABLED)) {
    return NVML_ERROR_NOT_SUPPORTED;  // ids driver 535 did not know
  }
  // The power fields answer per scope (scopeId): the GPU's; the module's (Grace Hopper boards) and the
  // memory's are not modeled (the real H100: module N/A, memory average 49.71 W).
  if (((id >= NVML_FI_DEV_POWER_AVERAGE && id <= kFiPowerCurrentLimit) || id == kFiPowerRequestedLimit) &&
      f.scopeId != NVML_POWER_SCOPE_GPU) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  switch (id) {
    case kFiEccCurrent:
    case kFiEccPending:
      v.ullVal = 1;
      return NVML_SUCCESS;
    case NVML_FI_DEV_ECC_SBE_VOL_TOTAL:
    case kFiEccSbeAggTotal:
      v.ullVal = c.counts().sbe;
      return NVML_SUCCESS;
    case NVML_FI_DEV_ECC_DBE_VOL_TOTAL:
    case kFiEccDbeAggTotal:
      v.ullVal = c.counts().dbe;
      return NVML_SUCCESS;
    case kFiRetiredSbe:
    case kFiRetiredDbe:
    case kFiRetiredPending:
    case kFiRetiredPendingSbe:
    case kFiRetiredPendingDbe: {
      if (!m.has_page_retirement()) return NVML_ERROR_NOT_SUPPORTED;
      const auto& pages = c.counts().retired_pages;
      const int cause = id == kFiRetiredSbe || id == kFiRetiredPendingSbe
                            ? NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
                            : NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR;
      const auto n = static_cast<unsigned long long>(
          std::count_if(pages.begin(), pages.end(), [&](const RetiredPage& p) { return p.cause == cause; }));
      v.ullVal = id == kFiRetiredPending ? (pages.empty() ? 0 : 1) : n;
      return NVML_SUCCESS;
    }
    case NVML_FI_DEV_PERF_POLICY_POWER:
    case NVML_FI_DEV_PERF_POLICY_THERMAL:
    case NVML_FI_DEV_PERF_POLICY_SYNC_BOOST:
    case NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT:
    case NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION:
    case NVML_FI_DEV_PERF_POLICY_RELIABILITY:
      // The violation counters of nvmlDeviceGetViolationStatus, in the same nanoseconds.
      v.ullVal = field_ns(c.r.violation_s[id - NVML_FI_DEV_PERF_POLICY_POWER]);
      return NVML_SUCCESS;
    case kFiPerfPolicyTotalAppClocks:
    case kFiPerfPolicyTotalBaseClocks: {
      // Time below the application (base) clocks for any reason: the policies' union, bounded by their sum.
      double total = 0;
      for (const double s : c.r.violation_s) total = std::max(total, s);
      v.ullVal = field_ns(total);
      return NVML_SUCCESS;
    }
    case NVML_FI_DEV_MEMORY_TEMP:
      if (!m.hbm) return NVML_ERROR_NOT_SUPPORTED;
      v.uiVal = static_cast<unsigned>(std::lround(c.r.mem_temp_c));
      return NVML_SUCCESS;
    case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
    case kFiEnergy:
      v.ullVal = static_cast<unsigned long long>(c.r.energy_j * 1000.0);
      return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_LINK_COUNT:
      if (links == 0) return NVML_ERROR_NOT_SUPPORTED;
      v.uiVal = links;
      return NVML_SUCCESS;
    case NVML_FI_DEV_PCIE_REPLAY_COUNTER:
      v.uiVal = static_cast<unsigned>(c.r.pcie_replays);
      return NVML_SUCCESS;
    case kFiPcieReplayRollover:
      v.uiVal = 0;
      return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
    case kFiNvlinkThroughputRawTx:
    case kFiNvlinkThroughputRawRx: {
      // KiB since the driver loaded, summed over links (scopeId is not looked at); raw counts the
      // same payload (the simulator models no protocol overhead).
      if (links == 0) return NVML_ERROR_NOT_SUPPORTED;
      const bool tx = id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX || id == kFiNvlinkThroughputRawTx;
      v.ullVal = static_cast<unsigned long long>(c.r.metric_integral[tx ? kNvlinkTxMiBps : kNvlinkRxMiBps] * 1024.0);
      return NVML_SUCCESS;
    }
    case NVML_FI_DEV_REMAPPED_COR:
    case NVML_FI_DEV_REMAPPED_UNC:
    case NVML_FI_DEV_REMAPPED_PENDING:
    case NVML_FI_DEV_REMAPPED_FAILURE: {
      if (!m.has_row_remapping()) return NVML_ERROR_NOT_SUPPORTED;
      const HealthCounts& h = c.counts();
      v.ullVal = id == NVML_FI_DEV_REMAPPED_COR   ? h.remapped_correctable
                 : id == NVML_FI_DEV_REMAPPED_UNC ? h.remapped_uncorrectable
                 : id == NVML_FI_DEV_REMAPPED_PENDING ? (h.remap_pending ? 1 : 0)
                                                      : (h.remap_failure ? 1 : 0);
      return NVML_SUCCESS;
    }
    case kFiNvswitchConnectedLinks:
      // The real H100 without NVLink answers SUCCESS with an unset (double 0) value.
      if (links > 0 && m.architecture >= NVML_DEVICE_ARCH_AMPERE) {
        f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v.uiVal = links;
      }
      return NVML_SUCCESS;
    case kFiPcieL0ToRecovery:
    case kFiPcieCorrectableErrors:
      // Link retraining and correctable errors follow the replays (a replay is a corrected TLP).
      v.uiVal = static_cast<unsigned>(c.r.pcie_replays);
      return NVML_SUCCESS;
    case kFiResetlessMig:
      if (m.max_mig_devices == 0) return NVML_ERROR_NOT_SUPPORTED;
      v.uiVal = facts.resetless_mig ? 1 : 0;
      return NVML_SUCCESS;
    case NVML_FI_DEV_POWER_AVERAGE:
    case NVML_FI_DEV_POWER_INSTANT:
      v.uiVal = field_milli(c.r.power_w);
      return NVML_SUCCESS;
    case kFiPowerMinLimit:
      v.uiVal = field_milli(m.min_limit_w);
      return NVML_SUCCESS;
    case kFiPowerMaxLimit:
    case kFiPowerDefaultLimit:
      v.uiVal = field_milli(m.tdp_w);
      return NVML_SUCCESS;
    case kFiPowerCurrentLimit:
      v.uiVal = field_milli(c.r.limit_w);
      return NVML_SUCCESS;
    case kFiPowerRequestedLimit:
      v.uiVal = field_milli(c.d.spec.power_limit_w);
      return NVML_SUCCESS;
    // Thresholds relative to the maximum operating temperature (nvidia-smi's "T.Limit" lines).
    case NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT:
      v.siVal = static_cast<int>(m.gpu_max_c) - static_cast<int>(m.shutdown_c);
      return NVML_SUCCESS;
    case NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT:
      v.siVal = static_cast<int>(m.gpu_max_c) - static_cast<int>(m.slowdown_c);
      return NVML_SUCCESS;
    case NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT:
      if (!m.hbm) return NVML_ERROR_NOT_SUPPORTED;
      v.siVal = 0;
      return NVML_SUCCESS;
    case NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT:
      v.siVal = 0;
      return NVML_SUCCESS;
    case kFiPcieTxBytes:
    case kFiPcieRxBytes: {
      // Bytes since the driver loaded in a 32-bit counter that wraps.
      const double mib = c.r.metric_integral[id == kFiPcieTxBytes ? kPcieTxMiBps : kPcieRxMiBps];
      v.uiVal = static_cast<unsigned>(static_cast<unsigned long long>(mib * 1048576.0) & 0xFFFFFFFFULL);
      return NVML_SUCCESS;
    }
    case kFiMigIndependentQuery:
      if (m.max_mig_devices == 0) return NVML_ERROR_NOT_SUPPORTED;
      v.uiVal = 1;
      return NVML_SUCCESS;
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN:
      // The physics sets hardware thermal slowdown only on top of the software one, so the thermal
      // policy's time is the software slowdown's.
      v.ullVal = field_ns(c.r.violation_s[kViolThermal]);
      return NVML_SUCCESS;
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN:
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN:
      v.ullVal = 0;  // not kept apart by the physics (hardware thermal) / never modeled (power brake)
      return NVML_SUCCESS;
    default:
      break;
  }
  if (id >= 7 && id <= kFiEccDbeAggCbu) {
    // ECC by location: the SRAM/DRAM boards (Ampere and newer) count none of these; the older ones count
    // by L1, L2, device memory, register file and texture (never CBU), the errors all in device memory.
    if (facts.sram_ecc || id == kFiEccDbeVolCbu || id == kFiEccDbeAggCbu) return NVML_ERROR_NOT_SUPPORTED;
    v.ullVal = id == kFiEccSbeVolDev || id == kFiEccSbeAggDev   ? c.counts().sbe
               : id == kFiEccDbeVolDev || id == kFiEccDbeAggDev ? c.counts().dbe
                                                                 : 0;
    return NVML_SUCCESS;
  }
  if (id >= kFiPcieCorrectableErrors && id <= kFiPcieLaneErrors) {
    v.uiVal = 0;  // PCIe error counters besides the correctable ones: a healthy link
    return NVML_SUCCESS;
  }
  if (id >= kFiResetStatus && id <= NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) {
    v.uiVal = 0;  // no reset pending, no drain, no atomics, recovery action none
    return NVML_SUCCESS;
  }
  if (is_nvlink_field(id)) return NVML_ERROR_NOT_SUPPORTED;  // per-link counters: not modeled
  return NVML_ERROR_NOT_SUPPORTED;  // C2C, power smoothing, ids past 271
}

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                          nvmlFieldValue_t* values) {
  return device_call("nvmlDeviceGetFieldValues", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (valuesCount < 0 || (valuesCount > 0 && values == nullptr)) return NVML_ERROR_INVALID_ARGUMENT;
    // The driver charges a batch by its field ids (call_costs.h): the energy counter's 4 ms each time.
    if (!sim.costs().fields.empty()) {
      std::vector<unsigned> ids(static_cast<std::size_t>(valuesCount));
      for (int i = 0; i < valuesCount; ++i) ids[static_cast<std::size_t>(i)] = values[i].fieldId;
      CallCharge::add(sim.costs().field_values(ids));
    }
    FieldContext c{sim, d, t, d.physics.at(t), std::nullopt};
    const auto timestamp_us = static_cast<long long>(sim.clock().wall_ns_at(t) / 1000);
    for (int i = 0; i < valuesCount; ++i) {
      nvmlFieldValue_t& f = values[i];
      f.timestamp = timestamp_us;
      f.latencyUsec = 0;
      f.valueType = field_type(f.fieldId);
      f.value.ullVal = 0;
      f.nvmlReturn = field_value(c, f);
    }
    return NVML_SUCCESS;
  });
}
