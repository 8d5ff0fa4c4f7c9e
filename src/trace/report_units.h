// How the trace reports write quantities in text: durations with a unit chosen by size, counts that are
// fractional only when they must be, names cut to a column. Shared by every text section.
#pragma once

#include <cstddef>
#include <string>

namespace gpuscope::trace {

// 1.234 s, 12.34 ms, 12.3 us, 123 ns (negative values keep their sign).
std::string duration_text(double ns);
// The same with an explicit sign: +12.3 us, -1.20 ms.
std::string signed_duration_text(double ns);
// 3 -> "3", 0.25 -> "0.25", 12.5 -> "12.5".
std::string count_text(double n);
// The name, or its first width - 3 characters and "...".
std::string shortened(const std::string& name, std::size_t width);

}  // namespace gpuscope::trace
