// DeliveryQueue: the bounded queue between alert evaluation and the network. push() never blocks;
// sender threads deliver with per-request timeouts and retry failures with bounded exponential backoff,
// so a dead or slow receiver costs a sender thread, never the caller.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "log/logger.h"
#include "model/clock.h"
#include "notify/curl_sender.h"

namespace gpuscope::notify {

struct Delivery {
  std::string receiver;     // the metrics' `receiver` label (never a secret)
  std::string integration;  // "alertmanager", "webhook", "slack", "pagerduty", "email"
  OutgoingRequest request;
  // Called once, on a sender thread (or in stop()), when the delivery succeeded or was given up.
  std::function<void(bool delivered)> on_done;
};

struct DeliveryQueueOptions {
  std::size_t capacity = 1024;  // waiting deliveries; a full queue drops its oldest
  unsigned sender_threads = 4;
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{500};  // doubled after every failed attempt ...
  std::chrono::milliseconds max_backoff{30'000};   // ... up to this
  // Backoff is kept on this clock (a virtual one in tests); it must outlive the queue.
  const model::Clock* clock = &model::system_clock();
};

struct IntegrationCounters {
  std::string receiver;
  std::string integration;
  std::uint64_t total = 0;    // deliveries finished (delivered or given up)
  std::uint64_t failed = 0;   // given up: retries exhausted or a permanent error
  std::uint64_t retries = 0;  // attempts after the first
};

struct DeliveryStats {
  std::vector<IntegrationCounters> integrations;  // sorted by receiver, integration
  std::uint64_t dropped = 0;                      // pushed out by a full queue, or left at stop()
  std::size_t queue_length = 0;                   // waiting, including those waiting for a retry
};

// What actually sends: send_request by default; tests inject failures without a network.
using SendFunction = std::function<std::expected<void, SendError>(const OutgoingRequest&, const std::atomic<bool>& abort)>;

class DeliveryQueue {
 public:
  DeliveryQueue(DeliveryQueueOptions options, log::Logger& log, SendFunction send = {});
  ~DeliveryQueue();  // stop(0)
  DeliveryQueue(const DeliveryQueue&) = delete;
  DeliveryQueue& operator=(const DeliveryQueue&) = delete;

  // Never blocks on the network. After stop(), the delivery is dropped.
  void push(Delivery delivery);
  DeliveryStats stats() const;
  // Lets the queue drain for up to `grace`, then aborts requests in flight and drops what waits.
  void stop(std::chrono::milliseconds grace);

 private:
  struct Entry {
    Delivery delivery;
    int attempts = 0;
    model::Clock::SteadyTime not_before;
  };

  void run();
  IntegrationCounters& counters(const Delivery& d);  // under mu_
  void finish(Entry& entry, bool delivered);

  DeliveryQueueOptions options_;
  log::Logger& log_;
  SendFunction send_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // senders: work or stop
  std::uint64_t changes_ = 0;        // bumped with every notify of cv_, so a sender waiting for a retry wakes
  std::condition_variable idle_cv_;  // stop(): drained
  std::deque<Entry> waiting_;
  std::size_t in_flight_ = 0;
  bool stopping_ = false;
  std::atomic<bool> abort_{false};
  std::uint64_t dropped_ = 0;
  bool full_warned_ = false;
  std::map<std::pair<std::string, std::string>, IntegrationCounters> counters_;
  std::vector<std::thread> threads_;
};

}  // namespace gpuscope::notify
