#include "export/mig_instance_rows.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpuscope::exporter {

std::string mig_instance_id(unsigned gpu_index, unsigned gpu_instance_id) {
  return fmt::format("{}/{}", gpu_index, gpu_instance_id);
}

std::vector<const model::MigInstanceSample*> gpu_instances_of(const model::GpuSample& gpu) {
  std::vector<const model::MigInstanceSample*> out;
  if (!gpu.mig_enabled) return out;
  for (const auto& m : gpu.mig_instances) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const model::MigInstanceSample* o) {
      return o->gpu_instance_id == m.gpu_instance_id;
    });
    if (!seen) out.push_back(&m);
  }
  return out;
}

model::GpuSample mig_instance_as_sample(const model::GpuSample& parent, const model::MigInstanceSample& instance) {
  model::GpuSample s;
  s.index = parent.index;
  s.up = parent.up;
  s.down_error_code = parent.down_error_code;
  for (const auto& f : model::FieldCatalog::all()) {
    if (model::is_mig_instance_field(f.id)) s[f.id] = instance[f.id];
  }
  return s;
}

}  // namespace gpuscope::exporter
