// NVML's GPU Performance Monitoring (Hopper and newer): samples hold the integrals of every modeled
// metric, so the metrics between two samples are exact averages over that interval.
#include <algorithm>
#include <array>
#include <optional>

#include "nvml/nvml_abi.h"
#include "sim/library_state.h"

#if !GPUSCOPE_SIM_LEGACY  // an old driver has no GPM at all

using namespace gpuscope::sim;

namespace {

struct GpmMetricInfo {
  unsigned id;
  Metric metric;
  const char* short_name;
  const char* long_name;
  const char* unit;
};

constexpr std::array<GpmMetricInfo, 17> kGpmMetrics{{
    {NVML_GPM_METRIC_GRAPHICS_UTIL, kGrActive, "gr_util", "Graphics engine utilization", "%"},
    {NVML_GPM_METRIC_SM_UTIL, kSmActive, "sm_util", "SM utilization", "%"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, kSmOccupancy, "sm_occupancy", "SM occupancy", "%"},
    {NVML_GPM_METRIC_INTEGER_UTIL, kIntegerActive, "integer_util", "Integer pipe utilization", "%"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, kTensorActive, "any_tensor_util", "Tensor pipe utilization (any)", "%"},
    {NVML_GPM_METRIC_DFMA_TENSOR_UTIL, kDfmaActive, "dfma_tensor_util", "DFMA tensor pipe utilization", "%"},
    {NVML_GPM_METRIC_HMMA_TENSOR_UTIL, kHmmaActive, "hmma_tensor_util", "HMMA tensor pipe utilization", "%"},
    {NVML_GPM_METRIC_DMMA_TENSOR_UTIL, kDmmaActive, "dmma_tensor_util", "DMMA tensor pipe utilization", "%"},
    {NVML_GPM_METRIC_IMMA_TENSOR_UTIL, kImmaActive, "imma_tensor_util", "IMMA tensor pipe utilization", "%"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, kDramActive, "dram_bw_util", "DRAM bandwidth utilization", "%"},
    {NVML_GPM_METRIC_FP64_UTIL, kFp64Active, "fp64_util", "FP64 pipe utilization", "%"},
    {NVML_GPM_METRIC_FP32_UTIL, kFp32Active, "fp32_util", "FP32 pipe utilization", "%"},
    {NVML_GPM_METRIC_FP16_UTIL, kFp16Active, "fp16_util", "FP16 pipe utilization", "%"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, kPcieTxMiBps, "pcie_tx_per_sec", "PCIe transmit bandwidth", "MiB/sec"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, kPcieRxMiBps, "pcie_rx_per_sec", "PCIe receive bandwidth", "MiB/sec"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, kNvlinkRxMiBps, "nvlink_total_rx_per_sec", "NVLink receive bandwidth",
     "MiB/sec"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, kNvlinkTxMiBps, "nvlink_total_tx_per_sec", "NVLink transmit bandwidth",
     "MiB/sec"},
}};

const GpmMetricInfo* find_metric(unsigned id) {
  for (const GpmMetricInfo& m : kGpmMetrics) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

// Percent for ratios, MiB/s for rates, as GPM reports them.
double reported(Metric m, double value) { return is_rate_metric(m) ? value : std::clamp(value * 100.0, 0.0, 100.0); }

}  // namespace

// A MIG device answers as its GPU (GPM reads each instance on Hopper).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport) {
  return any_device_call("nvmlGpmQueryDeviceSupport", device, [&](Simulator&, SimDevice& d, MigDevice*, double) {
    if (gpmSupport == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    gpmSupport->isSupportedDevice = d.model.gpm ? 1 : 0;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  return node_call("nvmlGpmSampleAlloc", [&](Simulator& sim, double) {
    if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *gpmSample = sim.alloc_gpm_sample();
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  return node_call("nvmlGpmSampleFree", [&](Simulator& sim, double) {
    return sim.free_gpm_sample(gpmSample) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  });
}

namespace {

void take_mig_sample(GpmSample& sample, MigDevice& mig, double t) {
  const MigMeter::Value v = mig.meter.at(t);
  sample.taken = true;
  sample.gpu = mig.gpu;
  sample.mig = &mig;
  sample.t = t;
  sample.integral = v.integral;
  sample.instant = v.activity.metric;
}

}  // namespace

// On a GPU: the whole GPU (in MIG mode its instances' SM-weighted sum); on a MIG device: its instance.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  return any_device_call("nvmlGpmSampleGet", device, [&](Simulator& sim, SimDevice& d, MigDevice* mig, double t) {
    GpmSample* sample = sim.find(gpmSample);
    if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.model.gpm) return NVML_ERROR_NOT_SUPPORTED;
    if (mig != nullptr) {
      take_mig_sample(*sample, *mig, t);
      return NVML_SUCCESS;
    }
    const Reading& r = d.physics.at(t);
    sample->taken = true;
    sample->gpu = d.index;
    sample->mig = nullptr;
    sample->t = r.t;
    sample->integral = r.metric_integral;
    sample->instant = r.activity.metric;
    return NVML_SUCCESS;
  });
}

// The GPU instance `gpuInstanceId` of a GPU in MIG mode; an id it does not have is INVALID_ARGUMENT.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                                     nvmlGpmSample_t gpmSample) {
  return device_call("nvmlGpmMigSampleGet", device, [&](Simulator& sim, SimDevice& d, double t) {
    GpmSample* sample = sim.find(gpmSample);
    if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.model.gpm) return NVML_ERROR_NOT_SUPPORTED;
    MigDevice* mig = sim.mig_device(d.index, gpuInstanceId, t);
    if (mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    take_mig_sample(*sample, *mig, t);
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  return node_call("nvmlGpmMetricsGet", [&](Simulator& sim, double) {
    if (metricsGet == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX) return NVML_ERROR_INVALID_ARGUMENT;
    const GpmSample* s1 = sim.find(metricsGet->sample1);
    const GpmSample* s2 = sim.find(metricsGet->sample2);
    if (s1 == nullptr || s2 == nullptr || !s1->taken || !s2->taken || s1->gpu != s2->gpu || s1->mig != s2->mig) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const double dt = s2->t - s1->t;
    for (unsigned i = 0; i < metricsGet->numMetrics; ++i) {
      nvmlGpmMetric_t& out = metricsGet->metrics[i];
      const GpmMetricInfo* info = find_metric(out.metricId);
      if (info == nullptr) {
        out.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        out.value = 0;
        out.metricInfo = {nullptr, nullptr, nullptr};
        continue;
      }
      // Two samples of one frozen instant give that instant's value rather than 0/0.
      const double value =
          dt == 0 ? s2->instant[info->metric] : (s2->integral[info->metric] - s1->integral[info->metric]) / dt;
      out.nvmlReturn = NVML_SUCCESS;
      out.value = reported(info->metric, value);
      // NVML's struct has non-const pointers; callers only read them.
      out.metricInfo.shortName = const_cast<char*>(info->short_name);
      out.metricInfo.longName = const_cast<char*>(info->long_name);
      out.metricInfo.unit = const_cast<char*>(info->unit);
    }
    return NVML_SUCCESS;
  });
}

#endif  // !GPUSCOPE_SIM_LEGACY
