#include "trace/trace_error.h"

#include <fmt/format.h>

namespace gpuscope::trace {

std::string TraceError::what() const {
  std::string text = file.empty() ? message : fmt::format("{}: {}", file, message);
  if (byte_offset >= 0) text += fmt::format(" at byte {}", byte_offset);
  return text;
}

}  // namespace gpuscope::trace
