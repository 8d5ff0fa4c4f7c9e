#include "sim/identity.h"

#include <array>
#include <cstdio>

#include "sim/noise.h"

namespace gpuscope::sim {
namespace {

// PCI buses of the eight GPUs on an HGX H100 baseboard; a node with more GPUs repeats the
// layout in the next PCI domain, as multi-board systems do.
constexpr std::array<unsigned, 8> kHgxBuses{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};

}  // namespace

GpuIdentity make_identity(std::uint64_t seed, unsigned gpu, const GpuModel& model) {
  const Noise noise(seed, gpu);
  GpuIdentity id;
  const std::uint64_t a = noise.bits(Signal::kIdentity, 0);
  const std::uint64_t b = noise.bits(Signal::kIdentity, 1);
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32U),
                static_cast<unsigned>((a >> 16U) & 0xFFFFU), static_cast<unsigned>(a & 0xFFFFU),
                static_cast<unsigned>(b >> 48U), static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFULL));
  id.uuid = buf;
  const std::uint64_t c = noise.bits(Signal::kIdentity, 2);
  std::snprintf(buf, sizeof buf, "%.3s%010llu", model.serial_prefix.data(),
                static_cast<unsigned long long>(c % 10000000000ULL));
  id.serial = buf;
  id.domain = gpu / static_cast<unsigned>(kHgxBuses.size());
  id.bus = kHgxBuses[gpu % kHgxBuses.size()];
  id.device = 0;
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.0", id.domain, id.bus, id.device);
  id.bus_id = buf;
  std::snprintf(buf, sizeof buf, "%04X:%02X:%02X.0", id.domain, id.bus, id.device);
  id.bus_id_legacy = buf;
  return id;
}

}  // namespace gpuscope::sim
