#include "top/top_ui.h"

#include <ctime>

#include <fmt/format.h>

#include "top/top_keys.h"
#include "top/top_screen.h"

namespace gpuscope::top {
namespace {

// How long a key is waited for before the feed is looked at again: a new reading shows within this.
constexpr int kKeyWaitMs = 100;
// The header's "reading 0.4 s ago" is redrawn this often between readings; a repaint of an unchanged
// screen sends the terminal only the cells that changed.
constexpr auto kAgeRefresh = std::chrono::milliseconds(500);
// A reading in progress this many intervals (or at least this long) is said to be late.
constexpr double kLateIntervals = 1.5;
constexpr auto kLateAtLeast = std::chrono::milliseconds(500);

std::string local_clock_text() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

SourceView source_view(const FeedState& state, std::chrono::steady_clock::time_point shown_at,
                       std::chrono::steady_clock::time_point now, const TopUiOptions& options) {
  SourceView v;
  v.source = options.source;
  v.interval = options.interval;
  if (state.frame) v.age_seconds = seconds(now - shown_at);
  const auto late = std::max<std::chrono::steady_clock::duration>(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(options.interval * kLateIntervals), kLateAtLeast);
  if (state.reading && now - state.reading_since >= late) v.reading_for_seconds = seconds(now - state.reading_since);
  v.error = state.error;
  return v;
}

void run_top_ui(Terminal& terminal, const ReadingFeed& feed, TopModel& model, const std::atomic<bool>& stop,
                const TopUiOptions& options) {
  ViewState view;
  std::uint64_t taken = 0;
  std::chrono::steady_clock::time_point shown_at{};
  auto last_paint = std::chrono::steady_clock::time_point{};
  bool dirty = true;
  while (!stop.load(std::memory_order_relaxed) && !view.quit) {
    const FeedState state = feed.state();
    if (state.frame && state.sequence != taken) {
      if (model.apply(*state.frame)) {
        shown_at = state.frame_at;
        dirty = true;
      }
      taken = state.sequence;
    }
    const auto now = std::chrono::steady_clock::now();
    if (dirty || now - last_paint >= kAgeRefresh) {
      ScreenBuffer buffer(terminal.width(), terminal.height());
      SourceView sv = source_view(state, shown_at, now, options);
      sv.clock_text = local_clock_text();
      draw_screen(model, view, sv, buffer);
      terminal.paint(buffer);
      last_paint = now;
      dirty = false;
    }
    if (auto key = terminal.read_key(kKeyWaitMs)) {
      handle_key(*key, model, view);
      dirty = true;
    }
  }
}

}  // namespace gpuscope::top
