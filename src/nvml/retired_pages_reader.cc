// NvmlBackend::retired_pages: the list nvidia-smi --query-retired-pages prints, read on demand.
#include <vector>

#include "nvml/nvml_backend.h"
#include "nvml/nvml_library.h"

namespace gpuscope::nvml {
namespace {

// A page retired between the count probe and the read makes the read answer INSUFFICIENT_SIZE again
// with the new count; a few rounds settle it.
constexpr int kRpReadAttempts = 4;

// One cause's pages into `out`; NVML's return code.
nvmlReturn_t rp_read_cause(const NvmlLibrary& L, nvmlDevice_t d, int cause, model::RetirementCause as,
                           std::vector<model::RetiredPage>& out) {
  const bool v2 = L.nvmlDeviceGetRetiredPages_v2 != nullptr;
  unsigned count = 0;
  nvmlReturn_t rc = v2 ? L.nvmlDeviceGetRetiredPages_v2(d, cause, &count, nullptr, nullptr)
                       : L.nvmlDeviceGetRetiredPages(d, cause, &count, nullptr);
  for (int attempt = 0; attempt < kRpReadAttempts && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    std::vector<unsigned long long> addresses(count), timestamps(count);
    rc = v2 ? L.nvmlDeviceGetRetiredPages_v2(d, cause, &count, addresses.data(), timestamps.data())
            : L.nvmlDeviceGetRetiredPages(d, cause, &count, addresses.data());
    if (rc != NVML_SUCCESS) continue;
    for (unsigned k = 0; k < count && k < addresses.size(); ++k) {
      model::RetiredPage p{as, addresses[k], std::nullopt};
      if (v2) p.timestamp_us = timestamps[k];
      out.push_back(p);
    }
  }
  return rc;
}

}  // namespace

model::RetiredPagesReading NvmlBackend::retired_pages(std::size_t gpu) {
  model::RetiredPagesReading r;
  const NvmlLibrary& L = *library_;
  const nvmlDevice_t d = handle(gpu);
  if (d == nullptr) {
    r.error = NVML_ERROR_GPU_IS_LOST;
    return r;
  }
  if (L.nvmlDeviceGetRetiredPages_v2 == nullptr && L.nvmlDeviceGetRetiredPages == nullptr) {
    r.error = NVML_ERROR_FUNCTION_NOT_FOUND;
    return r;
  }
  // nvidia-smi's order: the pages retired for repeated single-bit errors, then the double-bit ones.
  for (const auto& [cause, as] : {std::pair{NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                                            model::RetirementCause::kMultipleSingleBitEcc},
                                  std::pair{NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                                            model::RetirementCause::kDoubleBitEcc}}) {
    const nvmlReturn_t rc = rp_read_cause(L, d, cause, as, r.pages);
    if (rc != NVML_SUCCESS) {
      r.error = static_cast<int>(rc);
      r.pages.clear();
      return r;
    }
  }
  return r;
}

}  // namespace gpuscope::nvml
