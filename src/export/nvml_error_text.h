// NVML's own wording for its return codes (what nvmlErrorString and nvidia-smi print), so a view can
// show "[Unknown Error]" or "[GPU is lost]" from a Snapshot without calling into the library.
#pragma once

#include <cstdint>
#include <string>

namespace gpuscope::exporter {

// "GPU is lost" for 15, "Unknown Error" for 999; "NVML error <code>" for a code NVML never documented.
std::string nvml_error_text(int code);

// NVML_ERROR_GPU_IS_LOST: what a view says of a GPU that is down without a recorded error code.
inline constexpr int kGpuIsLost = 15;
inline constexpr std::uint64_t kMiB = 1024 * 1024;

}  // namespace gpuscope::exporter
