// Quantities written in scenario files: durations (1h30m), sizes (60GiB), rates (100MiB/min),
// power (350W) and RFC 3339 instants, parsed into SI numbers or a message saying what is wrong.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace gpuscope::sim {

// "500ms", "10s", "5m", "1h30m", "2d", or a bare number of seconds. Never negative.
std::expected<double, std::string> parse_duration(std::string_view text);
// "60GiB", "512MiB", "1.5TB", "4096B", or a bare number of bytes.
std::expected<double, std::string> parse_size(std::string_view text);
// A size per time unit: "100MiB/min", "1GiB/h", "10MiB/s". Bytes per second.
std::expected<double, std::string> parse_rate(std::string_view text);
// "350W", "0.35kW", "350000mW", or a bare number of watts.
std::expected<double, std::string> parse_power(std::string_view text);
// "2026-01-01T00:00:00Z" (fraction and a numeric offset allowed). Nanoseconds since the Unix epoch.
std::expected<std::int64_t, std::string> parse_rfc3339(std::string_view text);

}  // namespace gpuscope::sim
