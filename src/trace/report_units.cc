#include "trace/report_units.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpuscope::trace {

std::string duration_text(double ns) {
  const double a = std::abs(ns);
  if (a >= 1e9) return fmt::format("{:.3f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string signed_duration_text(double ns) { return (ns < 0 ? "-" : "+") + duration_text(std::abs(ns)); }

std::string count_text(double n) {
  if (std::abs(n - std::round(n)) <= 0.005 * std::max(1.0, std::abs(n))) return fmt::format("{:.0f}", n);
  return std::abs(n) < 10 ? fmt::format("{:.2f}", n) : fmt::format("{:.1f}", n);
}

std::string shortened(const std::string& name, std::size_t width) {
  if (name.size() <= width) return name;
  return name.substr(0, width - 3) + "...";
}

}  // namespace gpuscope::trace
