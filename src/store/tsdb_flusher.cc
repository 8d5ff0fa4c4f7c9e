#include "store/tsdb_flusher.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpuscope::store {

TsdbFlusher::TsdbFlusher(Tsdb& tsdb, const model::Clock& clock) : tsdb_(tsdb), clock_(clock) {}

TsdbFlusher::~TsdbFlusher() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void TsdbFlusher::start() {
  std::lock_guard lock(mutex_);
  if (running_ || thread_.joinable()) return;
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void TsdbFlusher::run() {
  // The longest a healthy schedule waits: a flush interval, or the longest backoff. A longer wait
  // means the calendar clock stepped back, and the flush is taken as due rather than put off.
  const std::int64_t longest_wait_ms = std::max(tsdb_.flush_interval_ms(), kFlushRetryMaxMs);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const bool asked = requested_ > completed_;
    bool force = asked;
    if (!asked) {
      const std::int64_t wait_ms = tsdb_.next_flush_ms() - clock_.unix_ms();
      if (wait_ms > longest_wait_ms) {
        force = true;
      } else if (wait_ms > 0) {
        clock_.wait_for(lock, cv_, std::chrono::milliseconds(wait_ms), [&] { return stopping_ || requested_ > completed_; });
        continue;  // woken by stop, a request or the deadline: look again
      }
    }
    const std::uint64_t generation = requested_;
    lock.unlock();
    // No lock of the flusher's held here: flush_now() and stop() can ask while the disk is stuck.
    auto result = force ? tsdb_.flush(clock_.unix_ms()) : tsdb_.flush_if_due(clock_.unix_ms());
    lock.lock();
    if (asked) {
      completed_ = generation;
      last_result_ = std::move(result);
      cv_.notify_all();
    }
  }
  lock.unlock();
  auto last = tsdb_.flush(clock_.unix_ms());
  lock.lock();
  last_result_ = std::move(last);
  exited_ = true;
  cv_.notify_all();
}

std::expected<FlushResult, std::string> TsdbFlusher::flush_now() {
  std::unique_lock lock(mutex_);
  if (!running_ || stopping_) return std::unexpected(std::string("history: the flusher is not running"));
  const std::uint64_t generation = ++requested_;
  cv_.notify_all();
  // Waits for the work, however long the disk takes: not a timeout, so not on the clock.
  cv_.wait(lock, [&] { return completed_ >= generation || exited_; });
  if (completed_ < generation) return std::unexpected(std::string("history: the flusher stopped before this flush"));
  return last_result_;
}

FlusherStop TsdbFlusher::stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(mutex_);
  if (!running_) return {true, std::unexpected(std::string("history: the flusher was not running"))};
  running_ = false;
  stopping_ = true;
  cv_.notify_all();
  if (!clock_.wait_for(lock, cv_, grace, [&] { return exited_; })) {
    return {false, std::unexpected(fmt::format("history: the final flush was still waiting for the disk after {} ms",
                                               grace.count()))};
  }
  FlusherStop out{true, last_result_};
  lock.unlock();
  thread_.join();
  return out;
}

}  // namespace gpuscope::store
