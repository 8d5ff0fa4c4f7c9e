#include "trace/progress_meter.h"

#include <algorithm>
#include <ostream>
#include <string>

#include <fmt/format.h>

namespace gpuscope::trace {

void ProgressMeter::update(std::uint64_t done, std::uint64_t total) {
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && done < total) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0;
  const int filled = static_cast<int>(fraction * kWidth);
  const double elapsed = std::chrono::duration<double>(now - started_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  out_ << fmt::format("\r[{}{}] {:5.1f}%  {:.0f}/{:.0f} MB  {:.0f} MB/s ", std::string(static_cast<std::size_t>(filled), '#'),
                      std::string(static_cast<std::size_t>(kWidth - filled), ' '), 100 * fraction,
                      static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6, rate / 1e6)
       << std::flush;
}

void ProgressMeter::finish() {
  if (!drawn_) return;
  out_ << '\r' << std::string(80, ' ') << '\r' << std::flush;
  drawn_ = false;
}

}  // namespace gpuscope::trace
