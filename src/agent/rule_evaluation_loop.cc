#include "agent/rule_evaluation_loop.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rules/rule_file.h"

namespace gpuscope::agent {

std::expected<LoadedRules, std::vector<std::string>> load_rules(const std::vector<std::string>& specs) {
  std::vector<std::vector<std::string>> files_of(specs.size());
  std::set<std::string> all;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto files = rules::expand_rule_paths({specs[i]});
    if (!files) return std::unexpected(std::vector<std::string>{files.error()});
    files_of[i] = std::move(*files);
    all.insert(files_of[i].begin(), files_of[i].end());
  }
  auto groups = rules::load_rule_groups(std::vector<std::string>(all.begin(), all.end()));
  if (!groups) return std::unexpected(std::move(groups.error()));
  LoadedRules out;
  std::map<std::string, std::size_t> rules_in_file;
  for (const rules::RuleGroupDefinition& g : *groups) {
    rules_in_file[g.file] += g.rules.size();
    out.rule_count += g.rules.size();
  }
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::size_t n = 0;
    for (const std::string& f : files_of[i]) n += rules_in_file[f];
    if (n > 0) continue;
    std::error_code ec;
    out.empty.push_back(files_of[i].empty() && std::filesystem::is_directory(specs[i], ec)
                            ? fmt::format("--rules {}: no rule files (*.yml, *.yaml) in this directory", specs[i])
                            : fmt::format("--rules {}: no rules in it", specs[i]));
  }
  if (out.rule_count == 0) {
    return std::unexpected(std::vector<std::string>{
        fmt::format("--rules {}: no rules found, nothing would be evaluated", fmt::join(specs, " "))});
  }
  out.groups = std::move(*groups);
  return out;
}

RuleEvaluationLoop::RuleEvaluationLoop(rules::RuleManager& manager, store::Tsdb& tsdb, rules::AlertStateFile* state,
                                       notify::Notifier* notifier, const model::Clock& clock, log::Logger& log)
    : manager_(manager), tsdb_(tsdb), state_(state), notifier_(notifier), clock_(clock), log_(log) {}

RuleEvaluationLoop::~RuleEvaluationLoop() { stop(); }

void RuleEvaluationLoop::publish_status() {
  auto groups = std::make_shared<std::vector<exporter::RuleGroupStatus>>();
  manager_.visit([&](const std::vector<rules::RuleGroup>& all) {
    for (const rules::RuleGroup& g : all) {
      exporter::RuleGroupStatus s;
      s.rule_group = g.file() + ";" + g.name();
      s.interval_seconds = static_cast<double>(g.interval_ms()) / 1000.0;
      s.last_evaluation_timestamp_seconds = static_cast<double>(g.last_evaluation_ms()) / 1000.0;
      s.last_duration_seconds = g.last_evaluation_seconds();
      s.rules = static_cast<double>(g.rules().size());
      s.iterations_total = g.counters().iterations;
      s.iterations_missed_total = g.counters().iterations_missed;
      s.evaluations_total = g.counters().rule_evaluations;
      s.evaluation_failures_total = g.counters().rule_failures;
      groups->push_back(std::move(s));
    }
  });
  status_.store(std::move(groups));
}

void RuleEvaluationLoop::start(std::function<void()> ready) {
  thread_ = std::thread([this, ready = std::move(ready)] { run(ready); });
}

void RuleEvaluationLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  if (state_ != nullptr) {
    if (auto saved = state_->save(manager_, clock_.unix_ms(), true); !saved) {
      log_.error("alert state not saved at stop; a restart may notify again", {{"err", saved.error()}});
    }
  }
}

void RuleEvaluationLoop::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void RuleEvaluationLoop::run(const std::function<void()>& ready) {
  publish_status();
  if (ready) ready();
  rules::StoreAppender<store::Tsdb> appender(tsdb_);
  // A rule's health is logged when it changes, not at every evaluation.
  std::map<std::string, std::string> last_errors;
  bool save_failing = false;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      woken_ = false;
    }
    std::int64_t next = manager_.evaluate_due(tsdb_, appender, clock_.unix_ms());
    if (notifier_ != nullptr) {
      // Prometheus's sending rule: firing alerts again after the resend delay, resolved ones once.
      // Marking them sent changes alert state, so this comes before the state is saved.
      const std::int64_t now = clock_.unix_ms();
      const std::int64_t resend_delay = notifier_->config().resend_delay_ms;
      manager_.update([&](std::vector<rules::RuleGroup>& groups) {
        for (rules::RuleGroup& g : groups) {
          for (rules::RuleGroup::Rule& r : g.rules()) {
            auto* alerting = std::get_if<rules::AlertingRule>(&r.rule);
            if (alerting == nullptr) continue;
            auto due = alerting->take_alerts_to_send(now, resend_delay, g.interval_ms());
            if (!due.empty()) notifier_->submit(due, now, r.definition().expr_text);
          }
        }
      });
      notifier_->tick(now);
      next = std::min(next, notifier_->next_tick_ms());
    }
    publish_status();
    if (state_ != nullptr) {
      auto saved = state_->save(manager_, clock_.unix_ms());
      if (!saved && !save_failing) log_.error("alert state not saved; a restart may notify again", {{"err", saved.error()}});
      save_failing = !saved;
    }
    manager_.visit([&](const std::vector<rules::RuleGroup>& groups) {
      for (const rules::RuleGroup& g : groups) {
        for (const rules::RuleGroup::Rule& r : g.rules()) {
          const std::string key = g.file() + "\n" + g.name() + "\n" + r.definition().name;
          std::string& last = last_errors[key];
          if (r.status.last_error == last) continue;
          if (r.status.last_error.empty()) {
            log_.info("rule evaluates again", {{"group", g.name()}, {"rule", r.definition().name}});
          } else {
            log_.warn("rule evaluation failed",
                      {{"group", g.name()}, {"rule", r.definition().name}, {"err", r.status.last_error}});
          }
          last = r.status.last_error;
        }
      }
    });
    std::unique_lock lock(mu_);
    // Capped: the wall clock may be stepped, and a group far in the future is simply checked again.
    const auto wait = std::chrono::milliseconds(std::clamp<std::int64_t>(next - clock_.unix_ms(), 1, 60'000));
    clock_.wait_for(lock, cv_, wait, [this] { return stop_ || woken_; });
    if (stop_) return;
  }
}

}  // namespace gpuscope::agent
