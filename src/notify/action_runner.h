// ActionRunner: remediation. Alerts that match a configured action run its command (argv, never a
// shell) on worker threads, with the alert in environment variables, a per-alert cooldown, a timeout
// that kills the command's process group, and every run logged with its outcome.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "log/logger.h"
#include "notify/child_process.h"
#include "notify/notification.h"
#include "notify/notify_config.h"

namespace gpuscope::notify {

struct ActionRunnerOptions {
  unsigned workers = 2;               // commands running at once
  std::size_t queue_capacity = 64;    // waiting runs; more are dropped (and counted)
  std::chrono::milliseconds kill_grace{2'000};
  std::string external_url;           // for argv templates ($externalURL)
  store::Labels external_labels;      // for argv templates ($externalLabels)
};

struct ActionStats {
  std::uint64_t started = 0;  // runs begun (dry runs included)
  std::uint64_t succeeded = 0;
  std::uint64_t failed = 0;     // non-zero exit, signal, spawn error or template error
  std::uint64_t timed_out = 0;  // also counted in failed
  std::uint64_t dry_runs = 0;
  std::uint64_t skipped_cooldown = 0;
  std::uint64_t dropped = 0;  // queue full or left at stop()
};

// GPUSCOPE_LABEL_<NAME> / GPUSCOPE_ANNOTATION_<NAME>: upper case, anything but A-Z 0-9 becomes '_'.
std::string environment_name(std::string_view prefix, std::string_view name);

class ActionRunner {
 public:
  ActionRunner(ActionsConfig config, log::Logger& log, ActionRunnerOptions options);
  ~ActionRunner();  // stop(0)
  ActionRunner(const ActionRunner&) = delete;
  ActionRunner& operator=(const ActionRunner&) = delete;

  // Queues a run of every enabled action matching each alert (firing or resolved at now_ms, per the
  // action's `on`), unless that action ran for the same alert within its cooldown. Never blocks.
  void submit(const std::vector<NotificationAlert>& alerts, std::int64_t now_ms);
  ActionStats stats() const;
  // Waits up to `grace` for running commands, then kills their process groups; queued runs are dropped.
  void stop(std::chrono::milliseconds grace);

  // The child's environment for one alert (exposed for tests): PATH, HOME, LANG and TZ from the agent
  // when set (not the rest: secrets may live there), then the alert's variables.
  static std::vector<std::string> environment(const ActionDefinition& action, const NotificationAlert& alert,
                                              bool resolved);

 private:
  struct Run {
    const ActionDefinition* action;
    NotificationAlert alert;
    bool resolved;
  };
  void work();
  void execute(const Run& run);

  ActionsConfig config_;
  log::Logger& log_;
  ActionRunnerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Run> queue_;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::atomic<bool> abort_{false};
  ActionStats stats_;
  std::map<std::pair<std::string, std::uint64_t>, std::int64_t> last_run_ms_;  // (action, fingerprint)
  std::vector<std::thread> threads_;
};

}  // namespace gpuscope::notify
