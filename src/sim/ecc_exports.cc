// NVML's ECC and memory-repair queries beyond the totals: the default ECC mode, error counts by
// memory location, SRAM error status, the row remapper's v2 record and its bank histogram. All of
// them from the same HealthCounts the totals (device_exports.cc) come from, so they add up.
#include <algorithm>

#include "nvml/nvml_abi.h"
#include "sim/query_helpers.h"

using namespace gpuscope::sim;

namespace {

bool ecc_args_ok(int errorType, int counterType) {
  return (errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED || errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) &&
         (counterType == NVML_VOLATILE_ECC || counterType == NVML_AGGREGATE_ECC);
}

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDefaultEccMode(nvmlDevice_t device, int* defaultMode) {
  return out_value("nvmlDeviceGetDefaultEccMode", device, defaultMode,
                   [](Simulator&, SimDevice&, double) { return NVML_FEATURE_ENABLED; });
}

// The scenario's ECC errors are all in device memory (DRAM): that location holds the total
// nvmlDeviceGetTotalEccErrors answers, SRAM none. Boards that count by SRAM/DRAM (Ampere and newer)
// do not count by register file, texture memory or CBU (nvidia-smi's ecc.errors.*: [N/A]); the older
// ones count by L1, L2, device memory, register file and texture memory and have no SRAM total.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device, int errorType, int counterType,
                                                                 int locationType, unsigned long long* count) {
  return device_call("nvmlDeviceGetMemoryErrorCounter", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (count == nullptr || !ecc_args_ok(errorType, counterType) || locationType < NVML_MEMORY_LOCATION_L1_CACHE ||
        locationType > NVML_MEMORY_LOCATION_SRAM) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const bool sram_board = board_facts(d.model).sram_ecc;
    switch (locationType) {
      case NVML_MEMORY_LOCATION_DEVICE_MEMORY: {
        const HealthCounts h = sim.health(d.index, t);
        *count = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? h.sbe : h.dbe;
        return NVML_SUCCESS;
      }
      case NVML_MEMORY_LOCATION_SRAM:
        if (!sram_board) return NVML_ERROR_NOT_SUPPORTED;
        *count = 0;
        return NVML_SUCCESS;
      case NVML_MEMORY_LOCATION_L1_CACHE:
      case NVML_MEMORY_LOCATION_L2_CACHE:
      case NVML_MEMORY_LOCATION_REGISTER_FILE:
      case NVML_MEMORY_LOCATION_TEXTURE_MEMORY:
        if (sram_board) return NVML_ERROR_NOT_SUPPORTED;
        *count = 0;
        return NVML_SUCCESS;
      default:  // texture shared memory, CBU: Kepler-era locations
        return NVML_ERROR_NOT_SUPPORTED;
    }
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSramEccErrorStatus(nvmlDevice_t device, nvmlEccSramErrorStatus_t* status) {
  return device_call("nvmlDeviceGetSramEccErrorStatus", device, [&](Simulator&, SimDevice& d, double) {
    if (status == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (status->version != nvmlEccSramErrorStatus_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!board_facts(d.model).sram_ecc) return NVML_ERROR_NOT_SUPPORTED;
    const unsigned version = status->version;
    *status = nvmlEccSramErrorStatus_t{};
    status->version = version;
    return NVML_SUCCESS;
  });
}

// The v2 record separates remaps still active from those replaced by a later repair; the scenario's
// remaps are all active.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows_v2(nvmlDevice_t device, nvmlRemappedRowsInfo_v2_t* info) {
  return device_call("nvmlDeviceGetRemappedRows_v2", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.model.has_row_remapping()) return NVML_ERROR_NOT_SUPPORTED;
    const HealthCounts h = sim.health(d.index, t);
    *info = nvmlRemappedRowsInfo_v2_t{};
    info->corrActiveRemaps = h.remapped_correctable;
    info->uncActiveRemaps = h.remapped_uncorrectable;
    info->bPending = h.remap_pending ? 1 : 0;
    info->bFailureOccurred = h.remap_failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

// Banks by how many spare rows they have left: every bank starts with all of them ("max"); each
// remapped row (the scenario's remaps land in distinct banks) moves one bank to "high". A failed
// remap means some bank ran out: one bank in "none".
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRowRemapperHistogram(nvmlDevice_t device,
                                                                   nvmlRowRemapperHistogramValues_t* values) {
  return device_call("nvmlDeviceGetRowRemapperHistogram", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (values == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned banks = board_facts(d.model).row_remap_banks;
    if (!d.model.has_row_remapping() || banks == 0) return NVML_ERROR_NOT_SUPPORTED;
    const HealthCounts h = sim.health(d.index, t);
    *values = nvmlRowRemapperHistogramValues_t{};
    values->none = h.remap_failure ? 1 : 0;
    values->high = std::min(banks - values->none, h.remapped_correctable + h.remapped_uncorrectable);
    values->max = banks - values->none - values->high;
    return NVML_SUCCESS;
  });
}
