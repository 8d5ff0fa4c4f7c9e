// How the diagnosis writes values for people: ratios to three places, percents, rates in GB/s, memory
// in GiB. One place, so the text, the JSON's `text` fields and the tests agree.
#pragma once

#include <string>

#include <fmt/format.h>

namespace gpuscope::analysis::text {

inline std::string ratio(double v) { return fmt::format("{:.3f}", v); }
inline std::string percent(double v) { return fmt::format("{:.0f} %", v); }
inline std::string share(double v) { return fmt::format("{:.0f} %", v * 100); }
inline std::string rate(double bytes_per_second) { return fmt::format("{:.1f} GB/s", bytes_per_second / 1e9); }
inline std::string gib(double mib) { return fmt::format("{:.1f} GiB", mib / 1024.0); }
inline std::string watts(double w) { return fmt::format("{:.0f} W", w); }
inline std::string mhz(double m) { return fmt::format("{:.0f} MHz", m); }
inline std::string celsius(double c) { return fmt::format("{:.0f} °C", c); }

}  // namespace gpuscope::analysis::text
