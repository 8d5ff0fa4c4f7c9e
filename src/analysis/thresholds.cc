#include "analysis/thresholds.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace gpuscope::analysis {
namespace {

struct Field {
  std::string_view name;
  double Thresholds::* member;
  double min, max;
};

constexpr Field kFields[] = {
    {"idle_gr_active", &Thresholds::idle_gr_active, 0, 1},
    {"idle_utilization_percent", &Thresholds::idle_utilization_percent, 0, 100},
    {"transfer_utilization_percent", &Thresholds::transfer_utilization_percent, 0, 100},
    {"transfer_link_share", &Thresholds::transfer_link_share, 0, 1},
    {"memory_bound_dram_active", &Thresholds::memory_bound_dram_active, 0, 1},
    {"memory_bound_tensor_max", &Thresholds::memory_bound_tensor_max, 0, 1},
    {"launch_bound_fill", &Thresholds::launch_bound_fill, 0, 1},
    {"starved_busy_share", &Thresholds::starved_busy_share, 0, 1},
    {"sawtooth_low_share", &Thresholds::sawtooth_low_share, 0, 1},
    {"sawtooth_peak_sm_active", &Thresholds::sawtooth_peak_sm_active, 0, 1},
    {"loading_link_share", &Thresholds::loading_link_share, 0, 1},
    {"tensor_unused", &Thresholds::tensor_unused, 0, 1},
    {"float_pipes_busy", &Thresholds::float_pipes_busy, 0, 3},
    {"memory_bound_memory_utilization_percent", &Thresholds::memory_bound_memory_utilization_percent, 0, 100},
    {"throttle_share", &Thresholds::throttle_share, 0, 1},
    {"power_cap_share", &Thresholds::power_cap_share, 0, 1},
    {"memory_full_share", &Thresholds::memory_full_share, 0, 1},
    {"utilization_lie_points", &Thresholds::utilization_lie_points, 0, 100},
    {"imbalance_sm_share", &Thresholds::imbalance_sm_share, 0, 1},
    {"clock_imbalance_share", &Thresholds::clock_imbalance_share, 0, 1},
};

}  // namespace

std::expected<void, std::string> set_threshold(Thresholds& t, std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return std::unexpected(fmt::format("threshold '{}': expected NAME=VALUE", assignment));
  }
  const std::string_view name = assignment.substr(0, eq);
  const std::string_view text = assignment.substr(eq + 1);
  for (const Field& f : kFields) {
    if (f.name != name) continue;
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty() || !std::isfinite(value)) {
      return std::unexpected(fmt::format("threshold {}: '{}' is not a number", name, text));
    }
    if (value < f.min || value > f.max) {
      return std::unexpected(fmt::format("threshold {}: {} is out of range [{}, {}]", name, text, f.min, f.max));
    }
    t.*f.member = value;
    return {};
  }
  std::string names;
  for (const Field& f : kFields) names += fmt::format("{}{}", names.empty() ? "" : ", ", f.name);
  return std::unexpected(fmt::format("unknown threshold '{}' (one of: {})", name, names));
}

}  // namespace gpuscope::analysis
