// NVML's sampled utilization beyond GPU/memory: the JPEG and optical-flow engines, per-process
// utilization in its v1 struct (with jpg/ofa), and nvmlDeviceGetSamples' per-cell history of power,
// utilization and clocks. All from the physics the sampled catalog reads, one sample per 1 s cell.
#include <algorithm>
#include <cmath>
#include <vector>

#include "nvml/nvml_abi.h"
#include "sim/process_samples.h"
#include "sim/query_helpers.h"

using namespace gpuscope::sim;

namespace {

// The real H100's JPEG/OFA (and encoder/decoder) sampling period when idle.
constexpr unsigned kSampleEnginePeriodUs = 100000;
// How many past cells nvmlDeviceGetSamples hands back at most (the driver's ring buffer holds ~120 at
// its own rate; one per simulated second keeps going back in time cheap).
constexpr unsigned kSampleHistoryCells = 20;

enum class Engine { kJpg, kOfa };

// No scenario profile decodes JPEG or computes optical flow: a board with the engine reads 0.
nvmlReturn_t engine_utilization(std::string_view function, Engine engine, nvmlDevice_t device,
                                unsigned int* utilization, unsigned int* period) {
  return device_call(function, device, [&](Simulator& sim, SimDevice& d, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (utilization == nullptr || period == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const BoardFacts& f = board_facts(d.model);
    if ((engine == Engine::kJpg ? f.jpg_engines : f.ofa_engines) == 0) return NVML_ERROR_NOT_SUPPORTED;
    *utilization = 0;
    *period = kSampleEnginePeriodUs;
    return NVML_SUCCESS;
  });
}

unsigned long long sample_stamp_us(Simulator& sim, double t) {
  return static_cast<unsigned long long>(std::max<std::int64_t>(0, sim.clock().wall_ns_at(t) / 1000));
}

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetJpgUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                             unsigned int* samplingPeriodUs) {
  return engine_utilization("nvmlDeviceGetJpgUtilization", Engine::kJpg, device, utilization, samplingPeriodUs);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetOfaUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                             unsigned int* samplingPeriodUs) {
  return engine_utilization("nvmlDeviceGetOfaUtilization", Engine::kOfa, device, utilization, samplingPeriodUs);
}

// As nvmlDeviceGetProcessUtilization (process_exports.cc): each process's utilization averaged over the
// samples newer than lastSeenTimeStamp (process_samples.h); NOT_FOUND with none (no process: never a
// sample).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                                       nvmlProcessesUtilizationInfo_t* procesesUtilInfo) {
  return device_call("nvmlDeviceGetProcessesUtilizationInfo", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlProcessesUtilizationInfo_t* info = procesesUtilInfo;
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlProcessesUtilizationInfo_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (d.spec.mig_enabled_at(t)) return NVML_ERROR_NOT_SUPPORTED;  // as GetProcessUtilization in MIG mode
    const std::vector<ProcessUtilizationAverage> found = process_utilization_since(sim, d, t, info->lastSeenTimeStamp);
    if (found.empty()) return NVML_ERROR_NOT_FOUND;
    const auto n = static_cast<unsigned>(found.size());
    if (info->procUtilArray == nullptr || info->processSamplesCount < n) {
      info->processSamplesCount = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; ++i) {
      nvmlProcessUtilizationInfo_v1_t& s = info->procUtilArray[i];
      s = nvmlProcessUtilizationInfo_v1_t{};
      s.pid = found[i].pid;
      s.timeStamp = found[i].stamp_us;
      s.smUtil = found[i].sm_percent;
      s.memUtil = found[i].mem_percent;
    }
    info->processSamplesCount = n;
    info->lastSeenTimeStamp = found.front().stamp_us;
    return NVML_SUCCESS;
  });
}

// The buffered history of one quantity: one sample per cell since lastSeenTimeStamp (at most the last
// kSampleHistoryCells), stamped with the cell's start, values as the matching single query answers
// them. samples == NULL asks how many there are. NOT_FOUND when there is none newer.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, int type, unsigned long long lastSeenTimeStamp,
                                                      int* sampleValType, unsigned int* sampleCount,
                                                      nvmlSample_t* samples) {
  return device_call("nvmlDeviceGetSamples", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (sampleValType == nullptr || sampleCount == nullptr || type < NVML_TOTAL_POWER_SAMPLES ||
        type > NVML_OFA_UTILIZATION_SAMPLES) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (type == NVML_MODULE_POWER_SAMPLES) return NVML_ERROR_NOT_SUPPORTED;  // no module power on these boards
    const BoardFacts& f = board_facts(d.model);
    if ((type == NVML_JPG_UTILIZATION_SAMPLES && f.jpg_engines == 0) ||
        (type == NVML_OFA_UTILIZATION_SAMPLES && f.ofa_engines == 0)) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    const auto now_cell = static_cast<std::uint64_t>(std::floor(std::max(0.0, t) / kCellS));
    const std::uint64_t first = now_cell + 1 > kSampleHistoryCells ? now_cell + 1 - kSampleHistoryCells : 0;
    std::vector<std::uint64_t> cells;
    for (std::uint64_t k = first; k <= now_cell; ++k) {
      if (sample_stamp_us(sim, static_cast<double>(k) * kCellS) > lastSeenTimeStamp) cells.push_back(k);
    }
    *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
    if (cells.empty()) return NVML_ERROR_NOT_FOUND;
    const auto n = static_cast<unsigned>(cells.size());
    if (samples == nullptr) {
      *sampleCount = n;
      return NVML_SUCCESS;
    }
    // The newest samples fit when the buffer is short.
    const unsigned take = std::min(n, *sampleCount);
    const unsigned skip = n - take;
    const auto pct = [](double ratio) { return static_cast<unsigned>(std::lround(std::clamp(ratio, 0.0, 1.0) * 100.0)); };
    for (unsigned i = 0; i < take; ++i) {
      const double at = static_cast<double>(cells[skip + i]) * kCellS;
      const Reading& r = d.physics.at(at);
      unsigned v = 0;
      switch (type) {
        case NVML_TOTAL_POWER_SAMPLES: v = static_cast<unsigned>(std::lround(r.power_w * 1000.0)); break;
        case NVML_GPU_UTILIZATION_SAMPLES: v = pct(r.activity.util_gpu); break;
        case NVML_MEMORY_UTILIZATION_SAMPLES: v = pct(r.activity.util_mem); break;
        case NVML_PROCESSOR_CLK_SAMPLES: v = r.sm_mhz; break;
        case NVML_MEMORY_CLK_SAMPLES:
          v = !d.model.hbm && !r.activity.busy() && sim.processes(d.index, at).empty() ? d.model.idle_mem_mhz
                                                                                       : d.model.max_mem_mhz;
          break;
        default: v = 0; break;  // encoder, decoder, JPEG, OFA: no scenario uses them
      }
      samples[i].timeStamp = sample_stamp_us(sim, at);
      samples[i].sampleValue.ullVal = 0;
      samples[i].sampleValue.uiVal = v;
    }
    d.physics.at(t);  // leave the physics at the present for the next caller
    *sampleCount = take;
    return NVML_SUCCESS;
  });
}
