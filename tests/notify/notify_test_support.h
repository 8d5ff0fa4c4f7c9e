// Shared pieces of the notify tests: alerts built by hand, a logger that writes to a string, and local
// HTTP receivers on 127.0.0.1 port 0 that record what they were sent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http/http_server.h"
#include "log/logger.h"
#include "notify/notification.h"
#include "rules/alerting_rule.h"
#include "store/labels.h"

namespace gpuscope::notify::testing {

// A fixed wall-clock time for alerts (2024-05-01T12:00:00Z), and Debian's Alertmanager.
inline constexpr std::int64_t kT0 = 1'714'564'800'000;
inline constexpr const char* kAlertmanager = "/usr/bin/prometheus-alertmanager";

using namespace std::chrono_literals;

// A thread-safe string sink for the logger (sender threads log while the test reads).
class LogCapture {
 public:
  LogCapture() : log(stream_, log::Level::kDebug) {}
  std::string text() {
    std::lock_guard lock(mu_);
    return stream_.str();
  }
  log::Logger log;

 private:
  std::mutex mu_;
  std::ostringstream stream_;
};

inline rules::Alert firing_alert(store::Labels labels, std::int64_t fired_at_ms, std::int64_t valid_until_ms,
                                 store::Labels annotations = {}) {
  rules::Alert a;
  a.labels = std::move(labels);
  a.annotations = std::move(annotations);
  a.state = rules::AlertState::kFiring;
  a.value = 91;
  a.active_at_ms = fired_at_ms;
  a.fired_at_ms = fired_at_ms;
  a.valid_until_ms = valid_until_ms;
  return a;
}

inline rules::Alert resolved_alert(store::Labels labels, std::int64_t fired_at_ms, std::int64_t resolved_at_ms) {
  rules::Alert a = firing_alert(std::move(labels), fired_at_ms, resolved_at_ms);
  a.state = rules::AlertState::kInactive;
  a.resolved_at_ms = resolved_at_ms;
  return a;
}

inline NotificationAlert n_alert(store::Labels labels, std::int64_t starts_ms, std::int64_t ends_ms,
                                 store::Labels annotations = {}) {
  NotificationAlert a;
  a.labels = std::move(labels);
  a.annotations = std::move(annotations);
  a.starts_at_ms = starts_ms;
  a.ends_at_ms = ends_ms;
  return a;
}

struct ReceivedRequest {
  std::string method;
  std::string path;
  std::string content_type;
  std::string body;
};

// An HTTP receiver: answers with the queued statuses in order (then 200) and records every request.
class RecordingReceiver {
 public:
  explicit RecordingReceiver(std::vector<int> statuses = {}) : statuses_(statuses.begin(), statuses.end()) {
    http::HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    auto started = http::HttpServer::start(
        options,
        [this](const http::HttpRequest& r) {
          http::HttpResponse response;
          std::lock_guard lock(mu_);
          requests_.push_back({std::string(r.method()), std::string(r.path()),
                               std::string(r.header("Content-Type").value_or("")), std::string(r.body())});
          if (!statuses_.empty()) {
            response.status = statuses_.front();
            statuses_.pop_front();
          }
          response.body = response.status == 200 ? "ok" : "boom";
          cv_.notify_all();
          return response;
        },
        logs_.log);
    EXPECT_TRUE(started.has_value()) << (started ? "" : started.error());
    if (started) server_ = std::move(*started);
  }

  int port() const { return server_ ? server_->port() : 0; }
  std::string url(const std::string& path = "/hook") const {
    return "http://127.0.0.1:" + std::to_string(port()) + path;
  }

  // Waits until `count` requests arrived; all requests so far.
  std::vector<ReceivedRequest> wait_for(std::size_t count, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return requests_.size() >= count; });
    return requests_;
  }
  std::vector<ReceivedRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  LogCapture logs_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> statuses_;
  std::vector<ReceivedRequest> requests_;
  std::unique_ptr<http::HttpServer> server_;
};

// Waits for `predicate` to hold, polling; false on timeout.
template <typename P>
bool eventually(P predicate, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return predicate();
}

}  // namespace gpuscope::notify::testing
