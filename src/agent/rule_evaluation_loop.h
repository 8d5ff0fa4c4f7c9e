// RuleEvaluationLoop: the agent's rules thread. It evaluates the loaded rule groups on their intervals
// against the agent's store and writes recorded series and ALERTS back to it, off the sampler thread,
// so a slow rule never delays a GPU reading.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "export/agent_metrics.h"
#include "log/logger.h"
#include "model/clock.h"
#include "notify/notifier.h"
#include "rules/alert_state_file.h"
#include "rules/rule_manager.h"
#include "store/tsdb.h"

namespace gpuscope::agent {

class RuleEvaluationLoop {
 public:
  // The alert state is saved to `state` after each evaluation that changed it (null: not saved). Alerts
  // due for sending go to `notifier` (null: none), which only queues them. Groups are due by `clock`.
  RuleEvaluationLoop(rules::RuleManager& manager, store::Tsdb& tsdb, rules::AlertStateFile* state,
                     notify::Notifier* notifier, const model::Clock& clock, log::Logger& log);
  ~RuleEvaluationLoop();  // stop()

  // `ready` is waited on (on the thread) before the first evaluation: the first reading is in the store.
  void start(std::function<void()> ready);
  void stop();
  // Wakes the thread to evaluate now (after a reload).
  void wake();
  // The groups' evaluation record as of the latest round, for /metrics: a copy published after each
  // round, so a reader never waits for an evaluation in progress.
  std::shared_ptr<const std::vector<exporter::RuleGroupStatus>> status() const { return status_.load(); }

 private:
  void run(const std::function<void()>& ready);
  void publish_status();

  rules::RuleManager& manager_;
  store::Tsdb& tsdb_;
  rules::AlertStateFile* state_;
  notify::Notifier* notifier_;
  const model::Clock& clock_;
  log::Logger& log_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  std::atomic<std::shared_ptr<const std::vector<exporter::RuleGroupStatus>>> status_;
  std::thread thread_;
};

struct LoadedRules {
  std::vector<rules::RuleGroupDefinition> groups;
  std::size_t rule_count = 0;
  // One line per --rules argument that yields no rule (a directory without rule files, a file without
  // groups): a mistake to warn about, since another argument has rules.
  std::vector<std::string> empty;
};

// Loads --rules (files, directories, globs) into rule groups; every problem as one line. No rule at
// all from every argument is an error: an agent or backtest with --rules that evaluates nothing is a
// mistake (a wrong directory), not a configuration.
std::expected<LoadedRules, std::vector<std::string>> load_rules(const std::vector<std::string>& specs);

}  // namespace gpuscope::agent
