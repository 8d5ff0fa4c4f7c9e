#include "nvml/gpm_metrics.h"

#include <memory>

#include "nvml/nvml_library.h"

namespace gpuscope::nvml {

model::FieldValue field_status_of(nvmlReturn_t rc) {
  if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND) return model::FieldValue::unsupported();
  return model::FieldValue::error(static_cast<int>(rc));
}

nvmlReturn_t read_gpm_metrics(const NvmlLibrary& library, nvmlGpmSample_t prev, nvmlGpmSample_t cur,
                              std::span<const GpmWanted> wanted, std::array<model::FieldValue, model::kFieldCount>& fields) {
  // The struct is ~13 KB: keep it off the stack of whoever calls sample().
  auto request = std::make_unique<nvmlGpmMetricsGet_t>();
  request->version = NVML_GPM_METRICS_GET_VERSION;
  request->numMetrics = static_cast<unsigned>(wanted.size());
  request->sample1 = prev;
  request->sample2 = cur;
  for (std::size_t k = 0; k < wanted.size(); ++k) request->metrics[k].metricId = wanted[k].metric;
  const nvmlReturn_t rc = library.nvmlGpmMetricsGet(request.get());
  for (std::size_t k = 0; k < wanted.size(); ++k) {
    auto& field = fields[model::index_of(wanted[k].field)];
    if (rc != NVML_SUCCESS) {
      field = field_status_of(rc);
      continue;
    }
    const auto& m = request->metrics[k];
    field = m.nvmlReturn == NVML_SUCCESS ? model::FieldValue::of(m.value * wanted[k].scale) : field_status_of(m.nvmlReturn);
  }
  return rc;
}

}  // namespace gpuscope::nvml
