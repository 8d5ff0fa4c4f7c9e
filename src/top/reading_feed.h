// ReadingFeed: the thread that takes `gpuscope top`'s readings (from NVML or an agent) and publishes
// them, so the UI thread only draws and answers keys: a driver call that takes seconds, or an agent
// that does not answer, makes the reading late — which the screen says — never the screen.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "top/top_frame.h"

namespace gpuscope::top {

// What the feed has, as of one moment: a copy, so the UI never holds the feed's lock while drawing.
struct FeedState {
  std::shared_ptr<const Frame> frame;  // the latest good reading; null before the first
  std::uint64_t sequence = 0;          // bumped by every good reading
  std::chrono::steady_clock::time_point frame_at;  // when that reading finished
  // A reading under way, and since when (how late the source is, when that is longer than an interval).
  bool reading = false;
  std::chrono::steady_clock::time_point reading_since;
  std::string error;  // the last attempt's failure; empty once one succeeds
};

class ReadingFeed {
 public:
  using ReadFn = std::function<std::expected<Frame, std::string>()>;

  // `read` runs on the feed's thread only, every `interval` (from the start of one reading to the next;
  // a late reading is followed by the next at once). Nothing runs until start().
  ReadingFeed(ReadFn read, std::chrono::nanoseconds interval);
  ~ReadingFeed();  // stop(), waiting as long as the reading in progress takes
  ReadingFeed(const ReadingFeed&) = delete;
  ReadingFeed& operator=(const ReadingFeed&) = delete;

  void start();
  // Ends the thread after the reading in progress, waiting up to `grace`; false when it is still inside
  // `read` then (a hung driver call): the caller may exit the process without waiting for it.
  bool stop(std::chrono::milliseconds grace = std::chrono::milliseconds::max());

  FeedState state() const;
  // Blocks until a good reading with sequence >= `sequence` is in, or `timeout` passes (tests).
  FeedState wait_for(std::uint64_t sequence, std::chrono::milliseconds timeout) const;

 private:
  void run();

  ReadFn read_;
  const std::chrono::nanoseconds interval_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // stop requests, readings published, the thread's end
  FeedState state_;
  bool stop_requested_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace gpuscope::top
