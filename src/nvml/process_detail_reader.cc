// NvmlBackend::process_protected_memory: what pmon's ccpm column shows, read on demand.
#include <vector>

#include "nvml/nvml_backend.h"
#include "nvml/nvml_library.h"

namespace gpuscope::nvml {
namespace {

// A process started between the count probe and the read makes the read short again; a few rounds settle it.
constexpr int kPdrReadAttempts = 4;

}  // namespace

std::expected<std::map<unsigned, std::uint64_t>, int> NvmlBackend::process_protected_memory(std::size_t gpu) {
  const NvmlLibrary& L = *library_;
  const nvmlDevice_t d = handle(gpu);
  if (d == nullptr) return std::unexpected(static_cast<int>(NVML_ERROR_GPU_IS_LOST));
  if (L.nvmlDeviceGetRunningProcessDetailList == nullptr) {
    return std::unexpected(static_cast<int>(NVML_ERROR_FUNCTION_NOT_FOUND));
  }
  std::vector<nvmlProcessDetail_v1_t> procs;
  nvmlProcessDetailList_v1_t list{};
  list.version = nvmlProcessDetailList_v1;
  list.mode = NVML_PROCESS_MODE_ALL;
  nvmlReturn_t rc = L.nvmlDeviceGetRunningProcessDetailList(d, &list);
  for (int attempt = 0; attempt < kPdrReadAttempts && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    procs.assign(list.numProcArrayEntries, nvmlProcessDetail_v1_t{});
    list.procArray = procs.data();
    rc = L.nvmlDeviceGetRunningProcessDetailList(d, &list);
  }
  if (rc != NVML_SUCCESS) return std::unexpected(static_cast<int>(rc));
  std::map<unsigned, std::uint64_t> out;
  for (unsigned k = 0; k < list.numProcArrayEntries && k < procs.size(); ++k) {
    out[procs[k].pid] += procs[k].usedGpuCcProtectedMemory;
  }
  return out;
}

}  // namespace gpuscope::nvml
