#include "export/machine_value.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <utility>

namespace gpuscope::exporter {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 21> kSuffixes{{
    {"MHz", "mhz"},
    {"C", "celsius"},
    {"W", "watts"},
    {"%", "percent"},
    {"MiB", "mib"},
    {"KiB", "kib"},
    {"mJ", "mj"},
    {"ns", "ns"},
    {"KB/s", "kb_per_second"},
    {"MB/s", "mb_per_second"},
    {"B/s", "bytes_per_second"},
    {"ratio", "ratio"},
    {"bytes", "bytes"},
    // Dimensionless: the name already says what is counted.
    {"count", ""},
    {"bool", ""},
    {"gen", ""},
    {"lanes", ""},
    {"pstate", ""},
    {"bitmask", ""},
    {"xid", ""},
    {"", ""},
}};

}  // namespace

std::optional<std::string_view> unit_suffix(std::string_view unit) {
  for (const auto& [u, suffix] : kSuffixes) {
    if (u == unit) return suffix;
  }
  return std::nullopt;
}

std::string json_key(std::string_view name, std::string_view unit) {
  std::string key(name);
  if (auto suffix = unit_suffix(unit)) {
    if (!suffix->empty()) key.append("_").append(*suffix);
    return key;
  }
  key.push_back('_');
  for (char c : unit) {
    key.push_back(std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
                                                              : '_');
  }
  return key;
}

std::string json_line(const nlohmann::ordered_json& doc) {
  return doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

nlohmann::ordered_json json_number(double value) {
  if (!std::isfinite(value)) return nullptr;
  // Whole numbers within int64 stay integers; 2^63 itself is out of range, hence the strict bound.
  if (value == std::floor(value) && std::fabs(value) < 9.2e18) {
    if (value >= 0) return static_cast<std::uint64_t>(value);
    return static_cast<std::int64_t>(value);
  }
  return std::round(value * 1e6) / 1e6;
}

}  // namespace gpuscope::exporter
