// NVML's return codes by name and as nvmlErrorString words them, for scenario files (faults name
// codes) and for the exported nvmlErrorString.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuscope::sim {

// NVML's own text for a code; "Unknown Error" for codes NVML does not define. Never null.
const char* nvml_error_text(int code);
// "NVML_ERROR_UNKNOWN", "NVML_SUCCESS" or a decimal number up to 999; empty when neither.
std::optional<int> nvml_return_from_name(std::string_view name);
// "NVML_ERROR_UNINITIALIZED, ..." for error messages.
std::string nvml_error_names();

}  // namespace gpuscope::sim
