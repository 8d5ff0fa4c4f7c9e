// Sampler: one thread that reads every GPU once per interval and publishes the reading as an immutable
// Publication. Readers (HTTP handlers) only take the latest pointer, so a slow or hung driver call
// delays the next reading, never a scrape.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "model/clock.h"
#include "model/snapshot.h"

namespace gpuscope::sampler {

struct Publication {
  model::Snapshot snapshot;
  // When the reading started and ended, on the sampler's clock's steady time (staleness is measured
  // from `started`).
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point finished;
  std::uint64_t sequence = 0;  // 1 for the first reading
};

struct SamplerStats {
  std::uint64_t samples_total = 0;
  std::uint64_t overruns_total = 0;  // readings after the first that took longer than the interval
};

class Sampler {
 public:
  using ReadFn = std::function<model::Snapshot()>;

  // `read` is called on the sampler thread only. Nothing runs until start(). The interval is kept on
  // `clock` (a virtual clock in tests), which must outlive the sampler.
  Sampler(ReadFn read, std::chrono::nanoseconds interval, const model::Clock& clock = model::system_clock());
  ~Sampler();  // stop()
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start();
  // Asks the thread to end and waits for it up to `grace`; true when it ended. A thread still inside
  // `read` (a hung driver call) is left running and false is returned: the caller decides whether to
  // wait longer (the destructor does) or to exit the process.
  bool stop(std::chrono::milliseconds grace = std::chrono::milliseconds::max());

  // The latest reading; null before the first one completes.
  std::shared_ptr<const Publication> latest() const { return latest_.load(std::memory_order_acquire); }
  SamplerStats stats() const;
  std::chrono::nanoseconds interval() const { return interval_; }

  // Blocks until a reading with sequence >= `sequence` is published or `timeout` passes.
  std::shared_ptr<const Publication> wait_for(std::uint64_t sequence, std::chrono::milliseconds timeout) const;

 private:
  void run();

  ReadFn read_;
  std::chrono::nanoseconds interval_;
  const model::Clock& clock_;
  std::atomic<std::shared_ptr<const Publication>> latest_;
  std::atomic<std::uint64_t> samples_{0};
  std::atomic<std::uint64_t> overruns_{0};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // stop requests and new publications
  bool stop_requested_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace gpuscope::sampler
