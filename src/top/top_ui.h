// The UI thread of `gpuscope top`: takes what the ReadingFeed published into the model, answers keys,
// and repaints. It never reads a GPU itself, so it answers keys while a reading is late.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "top/reading_feed.h"
#include "top/terminal.h"
#include "top/top_screen.h"
#include "top/top_model.h"

namespace gpuscope::top {

struct TopUiOptions {
  std::string source;  // shown in the title: where readings come from
  std::chrono::milliseconds interval{1000};
};

// Runs until 'q' (or F10) or until `stop` is set (SIGINT, SIGTERM).
void run_top_ui(Terminal& terminal, const ReadingFeed& feed, TopModel& model, const std::atomic<bool>& stop,
                const TopUiOptions& options);

// What the header says about the feed at `now`, for the reading on screen (taken at `shown_at`).
SourceView source_view(const FeedState& state, std::chrono::steady_clock::time_point shown_at,
                       std::chrono::steady_clock::time_point now, const TopUiOptions& options);

}  // namespace gpuscope::top
