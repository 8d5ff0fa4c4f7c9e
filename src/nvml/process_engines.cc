// NvmlBackend::process_engines: pmon's per-process engine utilization.
#include <algorithm>
#include <vector>

#include "nvml/nvml_backend.h"
#include "nvml/nvml_library.h"

namespace gpuscope::nvml {
namespace {

// Answers that mean "ask the older function": the symbol is missing or the driver does not serve it.
bool process_engines_try_older(nvmlReturn_t rc) {
  return rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_NOT_SUPPORTED ||
         rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

// Calls `read(buffer)` with room for `start` samples, growing to the count the driver asks for when it
// answers INSUFFICIENT_SIZE (a process can start between two calls, so a few tries).
template <class Sample, class Read>
nvmlReturn_t process_engines_read(std::vector<Sample>& buffer, std::size_t start, Read&& read) {
  buffer.resize(std::max<std::size_t>(start, 8));
  nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
  for (int attempt = 0; attempt < 5 && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    unsigned count = static_cast<unsigned>(buffer.size());
    rc = read(buffer.data(), count);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      buffer.resize(std::max<std::size_t>(count, buffer.size()) + 4);
    } else if (rc == NVML_SUCCESS) {
      buffer.resize(std::min<std::size_t>(count, buffer.size()));
    }
  }
  return rc;
}

}  // namespace

ProcessEngineReading NvmlBackend::process_engines(std::size_t gpu, unsigned long long since_us) {
  ProcessEngineReading out;
  const nvmlDevice_t d = handle(gpu);
  if (d == nullptr) {
    out.error = NVML_ERROR_GPU_IS_LOST;
    return out;
  }
  const auto& L = *library_;
  nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (L.nvmlDeviceGetProcessesUtilizationInfo != nullptr) {
    std::vector<nvmlProcessUtilizationInfo_v1_t> buffer;
    rc = process_engines_read(buffer, 8, [&](nvmlProcessUtilizationInfo_v1_t* data, unsigned& count) {
      nvmlProcessesUtilizationInfo_t info{};
      info.version = nvmlProcessesUtilizationInfo_v1;
      info.processSamplesCount = count;
      info.lastSeenTimeStamp = since_us;
      info.procUtilArray = data;
      const nvmlReturn_t r = L.nvmlDeviceGetProcessesUtilizationInfo(d, &info);
      count = info.processSamplesCount;
      return r;
    });
    if (rc == NVML_SUCCESS) {
      for (const auto& u : buffer) {
        out.samples.push_back({u.pid, u.timeStamp, u.smUtil, u.memUtil, u.encUtil, u.decUtil, u.jpgUtil, u.ofaUtil});
      }
    }
  }
  if (process_engines_try_older(rc) && L.nvmlDeviceGetProcessUtilization != nullptr) {
    std::vector<nvmlProcessUtilizationSample_t> buffer;
    rc = process_engines_read(buffer, 8, [&](nvmlProcessUtilizationSample_t* data, unsigned& count) {
      return L.nvmlDeviceGetProcessUtilization(d, data, &count, since_us);
    });
    if (rc == NVML_SUCCESS) {
      for (const auto& u : buffer) {
        out.samples.push_back({u.pid, u.timeStamp, u.smUtil, u.memUtil, u.encUtil, u.decUtil, std::nullopt, std::nullopt});
      }
    }
  }
  // NOT_FOUND: no sample newer than `since_us`, which is an answer, not a failure.
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND) out.error = static_cast<int>(rc);
  return out;
}

}  // namespace gpuscope::nvml
