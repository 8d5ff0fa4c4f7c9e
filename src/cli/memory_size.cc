#include "cli/memory_size.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace gpuscope::cli {
namespace {

constexpr double kKiB = 1024.0;
constexpr std::array<std::pair<std::string_view, double>, 8> kMemoryUnits{{
    {"kib", kKiB},
    {"mib", kKiB * kKiB},
    {"gib", kKiB * kKiB * kKiB},
    {"tib", kKiB * kKiB * kKiB * kKiB},
    {"kb", 1e3},
    {"mb", 1e6},
    {"gb", 1e9},
    {"tb", 1e12},
}};

bool same_letters(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<std::uint64_t> parse_memory_size(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr == text.data() || !(value >= 0)) return std::nullopt;
  const std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
  for (const auto& [name, scale] : kMemoryUnits) {
    if (!same_letters(unit, name)) continue;
    const double bytes = std::round(value * scale);
    if (!(bytes < 9.2e18)) return std::nullopt;
    return static_cast<std::uint64_t>(bytes);
  }
  return std::nullopt;
}

std::string memory_size_text(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 4> kNames{"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::string_view unit = "bytes";
  for (std::string_view name : kNames) {
    if (v < kKiB) break;
    v /= kKiB;
    unit = name;
  }
  if (unit == "bytes") return fmt::format("{} bytes", bytes);
  const double tenths = std::round(v * 10.0) / 10.0;
  return tenths == std::trunc(tenths) ? fmt::format("{:.0f} {}", tenths, unit) : fmt::format("{:.1f} {}", tenths, unit);
}

}  // namespace gpuscope::cli
