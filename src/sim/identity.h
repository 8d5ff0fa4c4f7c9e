// A simulated GPU's static identity (UUID, serial, PCI address): fixed by the scenario's seed and
// the GPU's index, laid out like an HGX baseboard, so labels are stable across runs and processes.
#pragma once

#include <cstdint>
#include <string>

#include "sim/gpu_catalog.h"

namespace gpuscope::sim {

struct GpuIdentity {
  std::string uuid;           // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  std::string serial;         // 13 digits
  std::string bus_id;         // 00000000:18:00.0
  std::string bus_id_legacy;  // 0000:18:00.0
  unsigned domain = 0, bus = 0, device = 0;
};

GpuIdentity make_identity(std::uint64_t seed, unsigned gpu, const GpuModel& model);

}  // namespace gpuscope::sim
