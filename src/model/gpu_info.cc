#include "model/gpu_info.h"

#include <fmt/format.h>

namespace gpuscope::model {

std::string GpuInfo::device_name() const {
  return minor_number ? fmt::format("nvidia{}", *minor_number) : std::string{};
}

std::string SystemInfo::cuda_version_string() const {
  if (!cuda_driver_version) return {};
  return fmt::format("{}.{}", *cuda_driver_version / 1000, (*cuda_driver_version % 1000) / 10);
}

std::string architecture_name(unsigned arch) {
  switch (arch) {
    case 2: return "Kepler";
    case 3: return "Maxwell";
    case 4: return "Pascal";
    case 5: return "Volta";
    case 6: return "Turing";
    case 7: return "Ampere";
    case 8: return "Ada";
    case 9: return "Hopper";
    case 10: return "Blackwell";
    default: return "Unknown";
  }
}

}  // namespace gpuscope::model
