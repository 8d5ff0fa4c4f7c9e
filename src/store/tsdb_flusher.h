// TsdbFlusher: writes the store's head to disk on a thread of its own, at the flush interval (and
// after a failure at Tsdb's backoff), so a slow, full or stuck disk never delays a GPU reading: the
// sampler only appends to memory.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <expected>
#include <mutex>
#include <string>
#include <thread>

#include "model/clock.h"
#include "store/tsdb.h"

namespace gpuscope::store {

// How stop() ended.
struct FlusherStop {
  // False: the final flush was still waiting for the disk when the grace ran out; the thread is left
  // running (the caller exits the process rather than destroy the flusher, which would wait for it).
  bool thread_exited = false;
  // The final flush's result (an error also when it did not finish in time).
  std::expected<FlushResult, std::string> final_flush = FlushResult{};
};

class TsdbFlusher {
 public:
  // `tsdb` and `clock` outlive the flusher. The clock says when a flush is due (flush_interval_ms
  // after the last one, or Tsdb's backoff after a failure) and times stop()'s grace.
  TsdbFlusher(Tsdb& tsdb, const model::Clock& clock);
  // Stops without waiting for a grace: joins the thread, so it waits for a flush under way.
  ~TsdbFlusher();
  TsdbFlusher(const TsdbFlusher&) = delete;
  TsdbFlusher& operator=(const TsdbFlusher&) = delete;

  void start();
  // Ends the schedule and runs a last flush (what is in memory goes to disk on a clean stop), waiting
  // for it at most `grace` on the clock. Called once, after the sampler stopped appending.
  FlusherStop stop(std::chrono::milliseconds grace);
  // Runs one flush on the flusher's thread now, whatever the schedule, and returns its result (tests;
  // an admin endpoint). Waits for a flush under way first; an error when the flusher is not running.
  std::expected<FlushResult, std::string> flush_now();

 private:
  void run();

  Tsdb& tsdb_;
  const model::Clock& clock_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool running_ = false;   // between start() and stop()
  bool stopping_ = false;  // stop() asked; the thread runs the last flush and exits
  bool exited_ = false;    // the thread is done (its last flush included)
  std::uint64_t requested_ = 0, completed_ = 0;  // flush_now() generations
  std::expected<FlushResult, std::string> last_result_ = FlushResult{};
  std::thread thread_;
};

}  // namespace gpuscope::store
