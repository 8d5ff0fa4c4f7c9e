#include "promql/query_limiter.h"

#include <algorithm>

namespace gpuscope::promql {

QueryLimiter::QueryLimiter(std::size_t max_concurrency) : max_concurrency_(std::max<std::size_t>(1, max_concurrency)) {}

QueryLimiter::Slot::~Slot() {
  if (owner_ != nullptr) owner_->release();
}

std::expected<QueryLimiter::Slot, QueryError> QueryLimiter::acquire(const model::Clock& clock,
                                                                    model::Clock::SteadyTime deadline) {
  std::unique_lock lock(mu_);
  ++counts_.queries_total;
  const std::uint64_t ticket = next_ticket_++;
  queue_.push_back(ticket);
  // First come, first served: only the oldest waiter may take a free slot, so a steady stream of new
  // queries cannot starve one that has waited longer.
  const bool admitted = clock.wait_until(lock, cv_, deadline, [&] {
    return canceled_.load() || (queue_.front() == ticket && in_flight_ < max_concurrency_);
  });
  queue_.erase(std::find(queue_.begin(), queue_.end(), ticket));
  if (canceled_.load()) {
    cv_.notify_all();
    return std::unexpected(QueryError{QueryError::Kind::kCanceled, "query was canceled in query queue"});
  }
  if (!admitted) {
    cv_.notify_all();  // the next in line may be first now
    return std::unexpected(QueryError{QueryError::Kind::kTimeout, "query timed out in query queue"});
  }
  ++in_flight_;
  cv_.notify_all();  // with slots left, the next in line goes too
  return Slot(this);
}

void QueryLimiter::release() {
  std::lock_guard lock(mu_);
  --in_flight_;
  cv_.notify_all();
}

void QueryLimiter::cancel_all() {
  std::lock_guard lock(mu_);
  canceled_.store(true);
  cv_.notify_all();
}

void QueryLimiter::count_outcome(const QueryError* error) {
  if (error == nullptr) return;
  std::lock_guard lock(mu_);
  switch (error->kind) {
    case QueryError::Kind::kTimeout: ++counts_.timed_out_total; break;
    case QueryError::Kind::kCanceled: ++counts_.canceled_total; break;
    case QueryError::Kind::kTooManySamples: ++counts_.too_many_samples_total; break;
    default: break;
  }
}

QueryLimiterStats QueryLimiter::stats() const {
  std::lock_guard lock(mu_);
  QueryLimiterStats s = counts_;
  s.in_flight = in_flight_;
  s.queued = queue_.size();
  s.max_concurrency = max_concurrency_;
  return s;
}

}  // namespace gpuscope::promql
