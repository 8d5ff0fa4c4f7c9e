#include "notify/delivery_queue.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpuscope::notify {

DeliveryQueue::DeliveryQueue(DeliveryQueueOptions options, log::Logger& log, SendFunction send)
    : options_(options), log_(log), send_(std::move(send)) {
  if (!send_) {
    send_ = [](const OutgoingRequest& r, const std::atomic<bool>& abort) { return send_request(r, &abort); };
  }
  options_.capacity = std::max<std::size_t>(options_.capacity, 1);
  options_.max_attempts = std::max(options_.max_attempts, 1);
  const unsigned n = std::max(options_.sender_threads, 1u);
  for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
}

DeliveryQueue::~DeliveryQueue() { stop(std::chrono::milliseconds(0)); }

IntegrationCounters& DeliveryQueue::counters(const Delivery& d) {
  auto [it, inserted] = counters_.try_emplace({d.receiver, d.integration});
  if (inserted) {
    it->second.receiver = d.receiver;
    it->second.integration = d.integration;
  }
  return it->second;
}

void DeliveryQueue::push(Delivery delivery) {
  std::vector<Delivery> dropped;
  bool warn = false;
  {
    std::lock_guard lock(mu_);
    counters(delivery);  // the series exists from the first notification on, at 0
    if (stopping_) {
      ++dropped_;
      dropped.push_back(std::move(delivery));
    } else {
      if (waiting_.empty()) full_warned_ = false;  // the last overload is over
      // The newest notification describes the current state: when full, the oldest waiting one goes.
      while (waiting_.size() >= options_.capacity) {
        ++dropped_;
        dropped.push_back(std::move(waiting_.front().delivery));
        waiting_.pop_front();
      }
      // Warned once per overload (until the queue drains): the counter tells how many went.
      warn = !dropped.empty() && !full_warned_;
      if (warn) full_warned_ = true;
      waiting_.push_back(Entry{std::move(delivery), 0, options_.clock->steady()});
    }
    ++changes_;
  }
  cv_.notify_one();
  if (warn) {
    log_.warn("notification queue full, dropping the oldest notifications (see gpuscope_notifications_dropped_total)",
              {{"receiver", dropped.front().receiver}, {"integration", dropped.front().integration},
               {"capacity", std::to_string(options_.capacity)}});
  }
  for (Delivery& d : dropped) {
    if (d.on_done) d.on_done(false);
  }
}

DeliveryStats DeliveryQueue::stats() const {
  std::lock_guard lock(mu_);
  DeliveryStats out;
  for (const auto& [key, c] : counters_) out.integrations.push_back(c);
  out.dropped = dropped_;
  out.queue_length = waiting_.size();
  return out;
}

void DeliveryQueue::finish(Entry& entry, bool delivered) {
  {
    std::lock_guard lock(mu_);
    IntegrationCounters& c = counters(entry.delivery);
    ++c.total;
    if (!delivered) ++c.failed;
  }
  if (entry.delivery.on_done) entry.delivery.on_done(delivered);
}

void DeliveryQueue::run() {
  std::unique_lock lock(mu_);
  while (true) {
    if (stopping_ && (abort_.load() || waiting_.empty())) return;
    // The first entry that is due; entries waiting for a retry let later ones pass.
    const auto now = options_.clock->steady();
    auto due = std::find_if(waiting_.begin(), waiting_.end(), [&](const Entry& e) { return e.not_before <= now; });
    if (due == waiting_.end()) {
      if (waiting_.empty()) {
        cv_.wait(lock);
      } else {
        // A copy: the deque changes while the lock is released, and wait_until reads the time after waking.
        const model::Clock::SteadyTime next =
            std::min_element(waiting_.begin(), waiting_.end(), [](const Entry& a, const Entry& b) {
              return a.not_before < b.not_before;
            })->not_before;
        const std::uint64_t seen = changes_;
        options_.clock->wait_until(lock, cv_, next, [&] { return changes_ != seen; });
      }
      continue;
    }
    Entry entry = std::move(*due);
    waiting_.erase(due);
    ++in_flight_;
    lock.unlock();

    ++entry.attempts;
    auto result = send_(entry.delivery.request, abort_);
    bool done = true;
    if (result) {
      log_.debug("notification sent", {{"receiver", entry.delivery.receiver},
                                       {"integration", entry.delivery.integration},
                                       {"attempts", std::to_string(entry.attempts)}});
      finish(entry, true);
    } else if (result.error().retryable && entry.attempts < options_.max_attempts && !abort_.load()) {
      auto backoff = options_.initial_backoff;
      for (int i = 1; i < entry.attempts && backoff < options_.max_backoff; ++i) backoff *= 2;
      backoff = std::min(backoff, options_.max_backoff);
      log_.warn("notification failed, retrying", {{"receiver", entry.delivery.receiver},
                                                  {"integration", entry.delivery.integration},
                                                  {"attempt", std::to_string(entry.attempts)},
                                                  {"retry_in_ms", std::to_string(backoff.count())},
                                                  {"err", result.error().message}});
      entry.not_before = options_.clock->steady() + backoff;
      done = false;
    } else {
      log_.error("notification failed", {{"receiver", entry.delivery.receiver},
                                         {"integration", entry.delivery.integration},
                                         {"attempts", std::to_string(entry.attempts)},
                                         {"err", result.error().message}});
      finish(entry, false);
    }

    lock.lock();
    --in_flight_;
    if (!done) {
      {
        IntegrationCounters& c = counters(entry.delivery);
        ++c.retries;
      }
      waiting_.push_back(std::move(entry));
      ++changes_;
      cv_.notify_one();
    }
    if (waiting_.empty() && in_flight_ == 0) idle_cv_.notify_all();
  }
}

void DeliveryQueue::stop(std::chrono::milliseconds grace) {
  std::deque<Entry> left;
  {
    std::unique_lock lock(mu_);
    if (threads_.empty()) return;
    stopping_ = true;
    ++changes_;
    cv_.notify_all();
    idle_cv_.wait_for(lock, grace, [&] { return waiting_.empty() && in_flight_ == 0; });
    abort_.store(true);
    left.swap(waiting_);
    dropped_ += left.size();
    ++changes_;
    cv_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  if (!left.empty()) log_.warn("notifications dropped at shutdown", {{"count", std::to_string(left.size())}});
  for (Entry& e : left) {
    if (e.delivery.on_done) e.delivery.on_done(false);
  }
}

}  // namespace gpuscope::notify
