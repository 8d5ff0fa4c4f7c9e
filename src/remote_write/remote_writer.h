// RemoteWriter: pushes the agent's history to one Prometheus remote-write receiver, on a thread of its
// own. It reads the store forward from its cursor (the last time every sample of which the receiver has
// acknowledged) in bounded windows, settled readings only, cuts each window into requests of at most
// one sample per series (batch_planner.h says why), sends them one at a time in time order, retries
// what failed for the receiver's sake (5xx, 429, no connection) with a jittered backoff until it goes,
// drops what the receiver refused (other 4xx), and persists the cursor after each acknowledgement. A
// receiver that is away for an hour gets the hour when it returns, as long as the store still holds it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "log/logger.h"
#include "model/clock.h"
#include "remote_write/batch_planner.h"
#include "remote_write/receiver_config.h"
#include "remote_write/retry_backoff.h"
#include "remote_write/send_cursor.h"
#include "remote_write/write_transport.h"
#include "store/queryable.h"

namespace gpuscope::remote_write {

struct RemoteWriterOptions {
  ReceiverConfig receiver;
  std::filesystem::path data_dir;  // where the cursor is kept; empty: in memory only
  // Added to every series sent (a series' own label of the same name wins, as with Prometheus's
  // external_labels).
  std::vector<std::pair<std::string, std::string>> external_labels;
  // Readings newer than now - settle may still be on their way into the store (a reading in progress,
  // a rule evaluation): a read stops short of them, so the cursor never passes a sample yet to come.
  std::chrono::milliseconds settle{2000};
  // How often a caught-up writer looks for new readings.
  std::chrono::milliseconds poll{1000};
  // The first read window; it halves when a read holds more than queue.max_samples_per_read samples and
  // doubles (up to kMaxReadWindow) while reads hold less than a quarter of that.
  std::chrono::milliseconds read_window{60'000};
  // History older than this is not looked for (the store's retention): a cursor from long ago starts here.
  std::chrono::milliseconds retention{15LL * 24 * 3600 * 1000};
  std::function<double()> unit_random;  // the backoff's jitter; empty: a seeded engine
};

struct RemoteWriteStats {
  std::string url;  // display_url
  std::uint64_t samples_sent = 0;
  std::uint64_t samples_failed = 0;  // refused by the receiver (4xx other than 429), not to be sent again
  std::uint64_t samples_pending = 0;  // read from the store, not yet acknowledged
  std::int64_t cursor_ms = 0;
  std::map<std::string, std::uint64_t> requests;  // by HTTP status, "error" for no response
  std::uint64_t cursor_save_failures = 0;
};

class RemoteWriter {
 public:
  static constexpr std::chrono::milliseconds kMaxReadWindow{3'600'000};
  // A read that asked for more than queue.max_samples_per_read samples stops there; the window halves
  // down to this before a read is sent however large (one timestamp of every series must go somehow).
  static constexpr std::chrono::milliseconds kMinReadWindow{1};

  RemoteWriter(RemoteWriterOptions options, const store::Queryable& store, std::unique_ptr<WriteTransport> transport,
               const model::Clock& clock, log::Logger& log);
  ~RemoteWriter();  // stop()
  RemoteWriter(const RemoteWriter&) = delete;
  RemoteWriter& operator=(const RemoteWriter&) = delete;

  // Loads the persisted cursor (none, or an unreadable one: from now on).
  void init();

  enum class Step { kIdle, kSent, kDropped, kRetry, kReadFailed };
  struct StepResult {
    Step step = Step::kIdle;
    std::chrono::milliseconds wait{0};  // before the next step (kIdle, kRetry, kReadFailed)
  };
  // One step of the thread's loop, callable directly (tests): reads the next window when nothing is
  // pending, then sends the first pending request.
  StepResult step();

  // init() and the thread; stop() ends it, cutting a request in flight short.
  void start();
  void stop();

  RemoteWriteStats stats() const;
  const std::string& display_url() const { return options_.receiver.display_url; }
  // The abort flag a transport made for this writer watches, and that transport (before start()).
  const std::atomic<bool>* abort_flag() const { return &stopping_; }
  void set_transport(std::unique_ptr<WriteTransport> transport) { transport_ = std::move(transport); }

 private:
  // Reads (cursor, end] into window_ / pending_; false when the store failed.
  bool read_window(std::int64_t end);
  void acknowledge(const WriteBatch& batch, bool sent);
  void note_failure(const PostResult& result);
  void run();

  const RemoteWriterOptions options_;
  const store::Queryable& store_;
  std::unique_ptr<WriteTransport> transport_;
  const model::Clock& clock_;
  log::Logger& log_;
  SendCursor cursor_file_;
  RetryBackoff backoff_;

  // The writer's own state: touched by step() only (one thread).
  std::int64_t cursor_ = 0;
  std::chrono::milliseconds window_;
  std::vector<store::SeriesSamples> window_series_;
  std::deque<WriteBatch> pending_;
  std::set<std::string> failure_kinds_logged_;
  std::optional<std::chrono::steady_clock::time_point> failing_since_;

  mutable std::mutex stats_mutex_;
  RemoteWriteStats stats_;

  std::atomic<bool> stopping_{false};
  std::mutex wait_mutex_;
  std::condition_variable wait_cv_;
  std::thread thread_;
};

}  // namespace gpuscope::remote_write
