// RetryBackoff: how long a receiver that failed (5xx, 429, no connection) is left alone before the same
// request goes again: doubling from min_backoff up to max_backoff, with jitter so that a fleet of agents
// whose receiver comes back does not retry in step; a 429's Retry-After is honoured.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

namespace gpuscope::remote_write {

class RetryBackoff {
 public:
  // `unit_random` returns a value in [0, 1) (tests inject a fixed one).
  RetryBackoff(std::chrono::milliseconds min_backoff, std::chrono::milliseconds max_backoff,
               std::function<double()> unit_random);

  // The wait before the next attempt after one more failure. Jittered down to between half and all of
  // the doubled backoff; a Retry-After the receiver asked for wins when it is longer (up to kMaxRetryAfter).
  std::chrono::milliseconds next(std::optional<std::chrono::milliseconds> retry_after = std::nullopt);
  // A success: the next failure starts again from min_backoff.
  void reset() { failures_ = 0; }
  int failures() const { return failures_; }

  // A receiver asking for more than this is taken to mean this: an hour-long Retry-After would stall the
  // catch-up that retention bounds anyway.
  static constexpr std::chrono::minutes kMaxRetryAfter{5};

 private:
  std::chrono::milliseconds min_, max_;
  std::function<double()> unit_random_;
  int failures_ = 0;
};

}  // namespace gpuscope::remote_write
