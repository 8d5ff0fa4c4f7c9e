#include "top/top_frame.h"

#include "export/gpu_metrics.h"

namespace gpuscope::top {
namespace {

// NVML's GpuIdle bit: the clocks are down because nothing runs, which is no slowdown.
constexpr std::uint64_t kIdleReason = 0x1;

// The label values exporter::throttle_reasons() gives ("sw_power_cap") in NVML's own CamelCase, the
// spelling nvidia-smi -q and nvtop users read.
std::string camel_case(std::string_view snake) {
  std::string out;
  bool upper = true;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c) : c;
    upper = false;
  }
  return out;
}

}  // namespace

std::string throttle_text(std::uint64_t reasons) {
  std::string out;
  for (const auto& r : exporter::throttle_reasons()) {
    if (r.bit == kIdleReason || (reasons & r.bit) == 0) continue;
    if (!out.empty()) out += ' ';
    out += camel_case(r.name);
  }
  return out;
}

}  // namespace gpuscope::top
