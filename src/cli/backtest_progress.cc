#include "cli/backtest_progress.h"

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "promql/parser.h"

namespace gpuscope::cli {
namespace {

// A backtest that ends this soon shows no line at all: it would only flicker.
constexpr std::chrono::milliseconds kFirstDrawAfter{500};
// Often enough to look alive, rarely enough that drawing costs nothing next to the run.
constexpr std::chrono::milliseconds kRedrawEvery{200};
constexpr int kBarWidth = 30;

// Whole minutes (whole seconds under one), as people read a scenario's timeline.
std::string scenario_time(std::int64_t ms) {
  const std::int64_t unit = ms >= 60'000 ? 60'000 : 1000;
  return promql::format_duration(ms / unit * unit);
}

}  // namespace

std::string backtest_progress_line(std::int64_t done_ms, std::int64_t total_ms, std::size_t events,
                                   std::chrono::steady_clock::duration elapsed) {
  const double fraction =
      total_ms > 0 ? std::clamp(static_cast<double>(done_ms) / static_cast<double>(total_ms), 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string line = fmt::format("[{}{}] {:5.1f}%  {} of {} scenario time, {} alert event{}",
                                 std::string(static_cast<std::size_t>(filled), '#'),
                                 std::string(static_cast<std::size_t>(kBarWidth - filled), ' '), 100 * fraction,
                                 scenario_time(std::max<std::int64_t>(done_ms, 0)), scenario_time(total_ms), events,
                                 events == 1 ? "" : "s");
  if (fraction > 0 && fraction < 1) {
    // At the pace so far: readings and rule evaluations cost about the same per step all along.
    const double elapsed_s = std::chrono::duration<double>(elapsed).count();
    const auto left_ms = static_cast<std::int64_t>(elapsed_s * (1 - fraction) / fraction * 1000);
    line += fmt::format(", about {} left", promql::format_duration(std::max<std::int64_t>(left_ms / 1000 * 1000, 1000)));
  }
  return line;
}

BacktestProgress::BacktestProgress(std::ostream& out, bool is_terminal, std::int64_t total_ms, Clock clock)
    : out_(out), enabled_(is_terminal), total_ms_(total_ms), clock_(std::move(clock)), started_(clock_()) {}

void BacktestProgress::update(std::int64_t done_ms, std::size_t events) {
  if (!enabled_) return;
  const auto now = clock_();
  if (now - started_ < kFirstDrawAfter) return;
  if (drawn_width_ > 0 && now - last_draw_ < kRedrawEvery) return;
  last_draw_ = now;
  std::string line = backtest_progress_line(done_ms, total_ms_, events, now - started_);
  const std::size_t width = line.size();
  // A shorter line than the last one must blank the rest of it.
  if (width < drawn_width_) line.append(drawn_width_ - width, ' ');
  out_ << '\r' << line << std::flush;
  drawn_width_ = width;
}

void BacktestProgress::finish() {
  if (drawn_width_ == 0) return;
  out_ << '\r' << std::string(drawn_width_, ' ') << '\r' << std::flush;
  drawn_width_ = 0;
}

}  // namespace gpuscope::cli
