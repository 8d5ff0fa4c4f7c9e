// PreemptionWatcher: the agent's thread that asks the cloud every few seconds whether this spot VM is
// being preempted (serve --preemption-notice), counts what each poll said, and hands the first notice of
// the run, once, to the response. It polls on a thread of its own, so a slow metadata endpoint never
// delays a reading or a scrape, and a stop cancels the poll in flight rather than waiting for it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "agent/preemption_notice.h"
#include "export/agent_metrics.h"
#include "log/logger.h"
#include "model/clock.h"

namespace gpuscope::agent {

// GCE gives 30 s between the notice and the stop, AWS two minutes: a 5 s poll leaves the job most of it.
inline constexpr std::chrono::milliseconds kDefaultPreemptionPollInterval{5000};

// The shortest and longest --preemption-poll-interval: a poll is one small request to a link-local
// service, but more than a few a second is load for nothing; longer than GCE's 30 s warning misses it.
inline constexpr std::chrono::milliseconds kMinPreemptionPollInterval{100};
inline constexpr std::chrono::milliseconds kMaxPreemptionPollInterval{30'000};

// --preemption-poll-interval: a duration (5s, 500ms) from 100ms to 30s; otherwise
// "invalid value 'X' for --preemption-poll-interval (...)".
std::expected<std::chrono::milliseconds, std::string> parse_preemption_poll_interval(std::string_view text);

struct PreemptionWatcherOptions {
  std::string provider;  // the metrics' provider label: gce, aws, url
  std::chrono::milliseconds interval = kDefaultPreemptionPollInterval;
};

class PreemptionWatcher {
 public:
  // Called on the watcher's thread for the run's first notice only. `seen` is the clock's wall time then.
  using NoticeHandler = std::function<void(const PreemptionNotice& notice, std::chrono::system_clock::time_point seen)>;

  // `source` and `clock` must outlive the watcher. Nothing runs until start().
  PreemptionWatcher(PreemptionNoticeSource& source, NoticeHandler on_notice, PreemptionWatcherOptions options,
                    const model::Clock& clock, log::Logger& log);
  ~PreemptionWatcher();  // stop()
  PreemptionWatcher(const PreemptionWatcher&) = delete;
  PreemptionWatcher& operator=(const PreemptionWatcher&) = delete;

  // Polls at once, then every interval on the clock.
  void start();
  // Cancels the poll in flight (its request ends now, uncounted), ends the wait and joins the thread.
  void stop();

  exporter::PreemptionStatus status() const;
  // Waits (real time, at most `limit`) until `polls` polls have been counted; tests step the clock with it.
  bool wait_for_polls(std::uint64_t polls, std::chrono::milliseconds limit) const;

 private:
  void run();
  // Counts one poll's answer; true when it is the run's first notice.
  bool record(const std::expected<std::optional<PreemptionNotice>, std::string>& answer,
              std::chrono::system_clock::time_point seen);

  PreemptionNoticeSource& source_;
  NoticeHandler on_notice_;
  PreemptionWatcherOptions options_;
  const model::Clock& clock_;
  log::Logger& log_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // stop requests and counted polls
  bool stop_requested_ = false;
  exporter::PreemptionStatus status_;
  bool failing_ = false;  // the latest poll failed: its warning was logged, the next success says so
  std::uint64_t failures_in_a_row_ = 0;
  std::thread thread_;
};

}  // namespace gpuscope::agent
