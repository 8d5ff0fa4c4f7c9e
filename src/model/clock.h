// Time, injected (DESIGN.md: "Time is injected"). Every part of the agent that reads the time or waits
// for it takes a Clock: the wall clock in production, a VirtualClock in tests and backtests, so hours
// of agent time run in seconds and no test depends on how fast a busy machine happens to be.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace gpuscope::model {

class Clock {
 public:
  using WallTime = std::chrono::system_clock::time_point;
  using SteadyTime = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  // Calendar time: sample timestamps, query times, alert times.
  virtual WallTime wall() const = 0;
  // Monotonic time: intervals, deadlines, staleness (never jumps with the calendar).
  virtual SteadyTime steady() const = 0;
  // Waits on `cv`, with `lock` held as std::condition_variable::wait_until takes it, until `done()`
  // is true or this clock reaches `deadline`. Returns done(). Whoever makes `done()` true notifies `cv`.
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                          const std::function<bool()>& done) const = 0;

  std::int64_t unix_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(wall().time_since_epoch()).count();
  }
  bool wait_for(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, std::chrono::nanoseconds d,
                const std::function<bool()>& done) const {
    return wait_until(lock, cv, steady() + d, done);
  }
};

// The process's own clocks.
class SystemClock final : public Clock {
 public:
  WallTime wall() const override { return std::chrono::system_clock::now(); }
  SteadyTime steady() const override { return std::chrono::steady_clock::now(); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                  const std::function<bool()>& done) const override {
    return cv.wait_until(lock, deadline, done);
  }
};

// The one SystemClock of the process, the default wherever a part is given no clock. Header-only, so
// every module may take a Clock without linking the model library.
inline const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

// A clock that moves only when told. Waiters notice an advance within a millisecond of real time
// (they re-check in 1 ms slices: no registry of waiters, so no lock order to get wrong).
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(WallTime start = WallTime(std::chrono::milliseconds(1767225600000)))  // 2026-01-01
      : wall_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count()) {}

  WallTime wall() const override {
    return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(wall_ns_.load())));
  }
  SteadyTime steady() const override { return SteadyTime(std::chrono::nanoseconds(steady_ns_.load())); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                  const std::function<bool()>& done) const override {
    waits_.fetch_add(1);
    waiters_.fetch_add(1);
    bool result = true;
    while (!done()) {
      if (steady() >= deadline) {
        result = false;
        break;
      }
      cv.wait_for(lock, std::chrono::milliseconds(1));
    }
    waiters_.fetch_sub(1);
    return result;
  }

  // How many threads wait on this clock now: a test advances time once the part it drives is
  // waiting, so an advance never lands while that part is still computing its next deadline.
  int waiters() const { return waiters_.load(); }
  // How many waits have begun since the clock was made: a part that woke at an advance, did its work
  // and waits again has begun one more.
  std::uint64_t waits() const { return waits_.load(); }

  void advance(std::chrono::nanoseconds d) {
    wall_ns_ += d.count();
    steady_ns_ += d.count();
  }

 private:
  std::atomic<std::int64_t> wall_ns_;
  std::atomic<std::int64_t> steady_ns_{1'000'000'000};  // an arbitrary epoch, as the steady clock's
  mutable std::atomic<int> waiters_{0};
  mutable std::atomic<std::uint64_t> waits_{0};
};

}  // namespace gpuscope::model
