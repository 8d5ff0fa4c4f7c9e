#include "export/nvml_error_text.h"

#include <fmt/format.h>

namespace gpuscope::exporter {

std::string nvml_error_text(int code) {
  // The strings are the driver's (nvmlErrorString), not ours: users search the web for them.
  switch (code) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 5: return "Already Initialized";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 8: return "Insufficient External Power";
    case 9: return "Driver Not Loaded";
    case 10: return "Timeout";
    case 11: return "Interrupt Request Issue";
    case 12: return "NVML Shared Library Not Found";
    case 13: return "Function Not Found";
    case 14: return "Corrupted infoROM";
    case 15: return "GPU is lost";
    case 16: return "GPU requires restart";
    case 17: return "The operating system has blocked the request.";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    case 19: return "In use by another client";
    case 20: return "Insufficient Memory";
    case 21: return "No data";
    case 22: return "The requested vgpu operation is not available on target device, because ECC is enabled";
    case 23: return "Ran out of critical resources, other than memory";
    case 24: return "Frequency not supported";
    case 25: return "Argument Version Mismatch";
    case 26: return "Requested functionality has been deprecated";  // what nvidia-smi 580 prints for it
    case 27: return "Not Ready";
    case 999: return "Unknown Error";
    default: return fmt::format("NVML error {}", code);
  }
}

}  // namespace gpuscope::exporter
