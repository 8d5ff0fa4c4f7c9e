// QueryLimiter: what all the queries of one agent share. A bound on how many evaluate at once (the
// others wait their turn, first come first served, and the wait counts toward their timeout, as in
// Prometheus), a stop that cancels them all when the agent shuts down, and counters of how they ended.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <expected>
#include <mutex>
#include <utility>

#include "model/clock.h"
#include "promql/engine.h"

namespace gpuscope::promql {

// Counters for the agent's /metrics (what Prometheus exports as prometheus_engine_queries and the
// query-log outcomes). Totals count since start; in_flight and queued are now.
struct QueryLimiterStats {
  std::uint64_t queries_total = 0;           // every query that asked for a slot
  std::uint64_t timed_out_total = 0;         // ended by their timeout, waiting or evaluating
  std::uint64_t canceled_total = 0;          // ended by cancel_all()
  std::uint64_t too_many_samples_total = 0;  // refused for holding more than max_samples
  std::size_t in_flight = 0;                 // evaluating now
  std::size_t queued = 0;                    // waiting for a slot now
  std::size_t max_concurrency = 0;
};

class QueryLimiter {
 public:
  // Prometheus allows 20 at once; an agent sharing a node with the GPU jobs it watches gets 4: enough
  // for a Grafana dashboard's panels plus the rules loop, while each may hold max_samples in memory.
  static constexpr std::size_t kDefaultMaxConcurrency = 4;

  explicit QueryLimiter(std::size_t max_concurrency = kDefaultMaxConcurrency);
  QueryLimiter(const QueryLimiter&) = delete;
  QueryLimiter& operator=(const QueryLimiter&) = delete;

  // One evaluation's place; given back when destroyed.
  class Slot {
   public:
    Slot(Slot&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;
    ~Slot();

   private:
    friend class QueryLimiter;
    explicit Slot(QueryLimiter* owner) : owner_(owner) {}
    QueryLimiter* owner_;
  };

  // Waits for a slot, behind every query that asked before, until `deadline` on `clock`. Errors:
  // Prometheus's "query timed out in query queue" and "query was canceled in query queue".
  std::expected<Slot, QueryError> acquire(const model::Clock& clock, model::Clock::SteadyTime deadline);

  // For the agent's shutdown: queries waiting for a slot end at once, those evaluating at their next
  // check (a few microseconds of work away), all with "query was canceled"; so does every later one.
  void cancel_all();
  // What evaluators check, as often as the deadline.
  const std::atomic<bool>& canceled() const { return canceled_; }

  // How a query ended; Engine reports each query once.
  void count_outcome(const QueryError* error);
  QueryLimiterStats stats() const;

 private:
  void release();

  const std::size_t max_concurrency_;
  std::atomic<bool> canceled_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::uint64_t> queue_;  // tickets of the waiting queries, oldest first
  std::uint64_t next_ticket_ = 0;
  std::size_t in_flight_ = 0;
  QueryLimiterStats counts_;  // the totals; in_flight/queued are filled in by stats()
};

}  // namespace gpuscope::promql
