// Which GPM metrics gpuscope reads, into which catalog fields, and the one MetricsGet that turns two
// GPM samples into them: shared by the GPU's reading (nvml_backend.cc) and each MIG instance's
// (mig_reader.cc).
#pragma once

#include <array>
#include <span>

#include "model/snapshot.h"
#include "nvml/nvml_abi.h"

namespace gpuscope::nvml {

class NvmlLibrary;

struct GpmWanted {
  unsigned metric;
  model::FieldId field;
  double scale;  // GPM gives percent or MiB/s; DCGM gives ratios and bytes/s
};

inline constexpr double kGpmMiB = 1024.0 * 1024.0;

inline constexpr std::array<GpmWanted, 12> kGpmWanted{{
    {NVML_GPM_METRIC_GRAPHICS_UTIL, model::FieldId::kGrEngineActive, 0.01},
    {NVML_GPM_METRIC_SM_UTIL, model::FieldId::kSmActive, 0.01},
    {NVML_GPM_METRIC_SM_OCCUPANCY, model::FieldId::kSmOccupancy, 0.01},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, model::FieldId::kPipeTensorActive, 0.01},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, model::FieldId::kDramActive, 0.01},
    {NVML_GPM_METRIC_FP64_UTIL, model::FieldId::kPipeFp64Active, 0.01},
    {NVML_GPM_METRIC_FP32_UTIL, model::FieldId::kPipeFp32Active, 0.01},
    {NVML_GPM_METRIC_FP16_UTIL, model::FieldId::kPipeFp16Active, 0.01},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, model::FieldId::kPcieTxBytes, kGpmMiB},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, model::FieldId::kPcieRxBytes, kGpmMiB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, model::FieldId::kNvlinkTxBytes, kGpmMiB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, model::FieldId::kNvlinkRxBytes, kGpmMiB},
}};

// The first 8 are the ratios a MIG instance has of its own (model::is_mig_instance_field).
inline constexpr std::span<const GpmWanted> kGpmInstanceWanted{kGpmWanted.data(), 8};

// One nvmlGpmMetricsGet over (prev, cur) for `wanted`, into `fields`: each metric's value, or its
// own return code; a failed call sets every wanted field from its code. Returns the call's code.
nvmlReturn_t read_gpm_metrics(const NvmlLibrary& library, nvmlGpmSample_t prev, nvmlGpmSample_t cur,
                              std::span<const GpmWanted> wanted, std::array<model::FieldValue, model::kFieldCount>& fields);

// NVML's code as a field's status: NOT_SUPPORTED and FUNCTION_NOT_FOUND are "unsupported", others errors.
model::FieldValue field_status_of(nvmlReturn_t rc);

}  // namespace gpuscope::nvml
