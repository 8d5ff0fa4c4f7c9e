// BacktestProgress: how far a long `gpuscope backtest` has got (30 days of scenario time take minutes),
// one line on stderr redrawn in place for a person at a terminal; nothing at all otherwise, so scripts,
// tests and CI logs see exactly the report.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace gpuscope::cli {

// "[#########                     ]  30.0%  9d of 30d scenario time, 4 alert events, about 2m50s left"
std::string backtest_progress_line(std::int64_t done_ms, std::int64_t total_ms, std::size_t events,
                                   std::chrono::steady_clock::duration elapsed);

class BacktestProgress {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // `is_terminal`: whether `out` is a terminal (the caller asks isatty); false draws nothing ever.
  BacktestProgress(std::ostream& out, bool is_terminal, std::int64_t total_ms,
                   Clock clock = [] { return std::chrono::steady_clock::now(); });
  // After each step: `done_ms` of scenario time run, `events` alert events so far.
  void update(std::int64_t done_ms, std::size_t events);
  // Clears the line, so the report starts on a clean one.
  void finish();

 private:
  std::ostream& out_;
  bool enabled_;
  std::int64_t total_ms_;
  Clock clock_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_draw_{};
  std::size_t drawn_width_ = 0;  // 0: nothing on the line
};

}  // namespace gpuscope::cli
