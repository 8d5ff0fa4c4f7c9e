#include "sim/sim_clock.h"

#include <cmath>

namespace gpuscope::sim {

SimClock SimClock::real() {
  SimClock c;
  c.virtual_ = false;
  c.steady_start_ = std::chrono::steady_clock::now();
  c.epoch_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  return c;
}

SimClock SimClock::frozen(std::int64_t epoch_ns, double t_s) {
  SimClock c;
  c.virtual_ = true;
  c.epoch_ns_ = epoch_ns;
  c.frozen_ns_ = c.wall_ns_at(t_s);
  return c;
}

double SimClock::t() const {
  if (virtual_) return static_cast<double>(frozen_ns_ - epoch_ns_) * 1e-9;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - steady_start_).count();
}

std::int64_t SimClock::wall_ns() const {
  if (virtual_) return frozen_ns_;
  // Wall time advances with the monotonic clock, so a system clock step cannot move t backwards.
  return epoch_ns_ + std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                         steady_start_)
                         .count();
}

std::int64_t SimClock::wall_ns_at(double t_s) const {
  return epoch_ns_ + static_cast<std::int64_t>(std::llround(t_s * 1e9));
}

void SimClock::freeze_at(std::int64_t unix_ns) {
  // A real clock keeps its epoch (the wall time of nvmlInit): a client that takes over the clock
  // at "now" goes on from the scenario time it had reached, not from a far-away virtual epoch.
  virtual_ = true;
  frozen_ns_ = unix_ns;
}

std::chrono::nanoseconds SimClock::until(double t_s) const {
  const double left = t_s - t();
  if (!(left > 0)) return std::chrono::nanoseconds{0};
  if (left > 1e6) return std::chrono::hours{1000};
  return std::chrono::nanoseconds{static_cast<std::int64_t>(left * 1e9)};
}

}  // namespace gpuscope::sim
