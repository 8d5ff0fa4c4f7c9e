#include "top/reading_feed.h"

namespace gpuscope::top {

ReadingFeed::ReadingFeed(ReadFn read, std::chrono::nanoseconds interval) : read_(std::move(read)), interval_(interval) {}

ReadingFeed::~ReadingFeed() { stop(); }

void ReadingFeed::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

bool ReadingFeed::stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(mu_);
  stop_requested_ = true;
  cv_.notify_all();
  if (!thread_.joinable()) return true;
  const bool ended = grace == std::chrono::milliseconds::max()
                         ? (cv_.wait(lock, [&] { return finished_; }), true)
                         : cv_.wait_for(lock, grace, [&] { return finished_; });
  lock.unlock();
  if (!ended) return false;
  thread_.join();
  return true;
}

FeedState ReadingFeed::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

FeedState ReadingFeed::wait_for(std::uint64_t sequence, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return state_.sequence >= sequence; });
  return state_;
}

void ReadingFeed::run() {
  auto next = std::chrono::steady_clock::now();
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_until(lock, next, [&] { return stop_requested_; });
      if (stop_requested_) break;
      state_.reading = true;
      state_.reading_since = std::chrono::steady_clock::now();
    }
    next = std::chrono::steady_clock::now() + interval_;
    auto frame = read_();
    {
      std::lock_guard lock(mu_);
      state_.reading = false;
      if (frame) {
        state_.frame = std::make_shared<const Frame>(std::move(*frame));
        ++state_.sequence;
        state_.frame_at = std::chrono::steady_clock::now();
        state_.error.clear();
      } else {
        state_.error = frame.error();
      }
    }
    cv_.notify_all();
    next = std::max(next, std::chrono::steady_clock::now());
  }
  std::lock_guard lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

}  // namespace gpuscope::top
