#include "remote_write/retry_backoff.h"

#include <algorithm>

namespace gpuscope::remote_write {

RetryBackoff::RetryBackoff(std::chrono::milliseconds min_backoff, std::chrono::milliseconds max_backoff,
                           std::function<double()> unit_random)
    : min_(min_backoff), max_(std::max(min_backoff, max_backoff)), unit_random_(std::move(unit_random)) {}

std::chrono::milliseconds RetryBackoff::next(std::optional<std::chrono::milliseconds> retry_after) {
  // min * 2^failures, capped: the shift stops before it could overflow.
  std::chrono::milliseconds base = min_;
  for (int i = 0; i < failures_ && base < max_; ++i) base *= 2;
  base = std::min(base, max_);
  ++failures_;
  const double r = std::clamp(unit_random_ ? unit_random_() : 0.0, 0.0, 1.0);
  auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(static_cast<double>(base.count()) * (0.5 + 0.5 * r)));
  wait = std::max(wait, std::chrono::milliseconds(1));
  if (retry_after) {
    wait = std::max(wait, std::min<std::chrono::milliseconds>(*retry_after, kMaxRetryAfter));
  }
  return wait;
}

}  // namespace gpuscope::remote_write
