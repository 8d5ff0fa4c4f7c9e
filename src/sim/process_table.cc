#include "sim/process_table.h"

#include <algorithm>
#include <cmath>

#include "sim/mig.h"

namespace gpuscope::sim {

ProcessTable::ProcessTable(const Scenario& scenario) : scenario_(scenario) {}

std::vector<GpuProcess> ProcessTable::on_gpu(unsigned gpu, double t, unsigned extra) const {
  std::vector<GpuProcess> out;
  std::vector<double> base;
  std::vector<double> leaked;
  for (const ProcessSpec& p : scenario_.processes) {
    if (!alive(p, t) || std::find(p.gpus.begin(), p.gpus.end(), gpu) == p.gpus.end()) continue;
    // A process in a MIG instance lives only while its instance does.
    if (p.gpu_instance && mig_instance_at(scenario_.gpus.at(gpu), *p.gpu_instance, t) == nullptr) continue;
    out.push_back(GpuProcess{p.pid, p.name, p.type, 0, p.gpu_instance});
    base.push_back(p.memory_bytes);
    leaked.push_back(p.leak_bytes_per_s * (t - p.start_s));
  }
  for (unsigned i = 0; i < extra; ++i) {
    out.push_back(GpuProcess{extra_pid(gpu, i), kExtraName, ProcessType::kCompute, 0});
    base.push_back(kExtraBytes);
    leaked.push_back(0);
  }
  const GpuModel& model = *scenario_.gpus.at(gpu).model;
  const double capacity =
      static_cast<double>(model.memory_mib - model.reserved_mib) * 1048576.0 - kDriverOverheadBytes;
  double base_sum = 0;
  double leak_sum = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    base_sum += base[i];
    leak_sum += leaked[i];
  }
  // A leak stops where the allocator fails; processes that together ask for more than the board
  // has get their share of it.
  double base_scale = 1.0;
  double leak_scale = 1.0;
  if (base_sum > capacity) {
    base_scale = capacity / base_sum;
    leak_scale = 0;
  } else if (base_sum + leak_sum > capacity) {
    leak_scale = (capacity - base_sum) / leak_sum;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    // Whole MiB pages, as the driver hands them out.
    const double bytes = base[i] * base_scale + leaked[i] * leak_scale;
    out[i].used_bytes = std::floor(bytes / 1048576.0) * 1048576.0;
  }
  return out;
}

std::optional<std::string_view> ProcessTable::name_of(unsigned pid) const {
  for (const ProcessSpec& p : scenario_.processes) {
    if (p.pid == pid) return p.name;
  }
  return std::nullopt;
}

std::optional<std::string_view> ProcessTable::user_of(unsigned pid) const {
  for (const ProcessSpec& p : scenario_.processes) {
    if (p.pid == pid) return p.user;
  }
  return std::nullopt;
}

}  // namespace gpuscope::sim
