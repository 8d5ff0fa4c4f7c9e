// Scenario time for the simulated NVML: the real clock since nvmlInit, or a virtual clock frozen by
// GPUSCOPE_SIM_TIME or gpuscopeSimSetTime so a six-hour scenario can be read in seconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace gpuscope::sim {

// The longest scenario time the simulator runs to: counters are integrated second by second from
// t = 0, so a year is the bound that keeps a first read fast (and far from int64 ns overflow).
inline constexpr double kMaxScenarioSeconds = 366.0 * 24 * 3600;
// Scenario starts must lie in [1970, 2200): wall times stay positive int64 nanoseconds.
inline constexpr std::int64_t kLatestStartNs = 7258118400LL * 1'000'000'000LL;  // 2200-01-01T00:00:00Z

// Where virtual time starts when the scenario names no `start`.
inline constexpr std::int64_t kDefaultVirtualEpochNs = 1767225600LL * 1'000'000'000LL;  // 2026-01-01T00:00:00Z

class SimClock {
 public:
  // Real time: t = 0 now; wall time follows the system clock.
  static SimClock real();
  // Virtual time frozen at scenario time `t_s`; t = 0 is `epoch_ns` on the wall.
  static SimClock frozen(std::int64_t epoch_ns, double t_s);

  bool is_virtual() const { return virtual_; }
  // Seconds since the scenario started (negative before a virtual epoch).
  double t() const;
  // The simulated wall time now, and of scenario time `t_s`, in ns since the Unix epoch.
  std::int64_t wall_ns() const;
  std::int64_t wall_ns_at(double t_s) const;
  // Freezes time at `unix_ns` (the wall time; t = 0 stays where it was, for a real clock the wall
  // time of init).
  void freeze_at(std::int64_t unix_ns);
  // Real time still to pass until scenario time `t_s` (zero if passed; meaningless when virtual).
  std::chrono::nanoseconds until(double t_s) const;

 private:
  bool virtual_ = false;
  std::int64_t epoch_ns_ = 0;  // wall time of t = 0
  std::chrono::steady_clock::time_point steady_start_{};
  std::int64_t frozen_ns_ = 0;  // virtual: the wall time it stands at
};

}  // namespace gpuscope::sim
