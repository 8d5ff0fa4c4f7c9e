#include "notify/action_runner.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "notify/alert_matchers.h"
#include "notify/alert_payloads.h"

namespace gpuscope::notify {
namespace {

std::string join_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\n\"'\\$`") == std::string::npos;
    out += plain ? a : fmt::format("'{}'", a);
  }
  return out;
}

std::string seconds_text(std::chrono::milliseconds d) { return fmt::format("{:.3f}", d.count() / 1000.0); }

// The command's last words without the newline that almost always ends them.
std::string output_text(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

std::string environment_name(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  for (unsigned char c : name) {
    if (c >= 'a' && c <= 'z') {
      out.push_back(static_cast<char>(c - 'a' + 'A'));
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('_');
    }
  }
  return out;
}

ActionRunner::ActionRunner(ActionsConfig config, log::Logger& log, ActionRunnerOptions options)
    : config_(std::move(config)), log_(log), options_(std::move(options)) {
  if (!config_.enabled || config_.commands.empty()) return;
  const unsigned n = std::max(options_.workers, 1u);
  for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
}

ActionRunner::~ActionRunner() { stop(std::chrono::milliseconds(0)); }

std::vector<std::string> ActionRunner::environment(const ActionDefinition& action, const NotificationAlert& alert,
                                                   bool resolved) {
  std::vector<std::string> env;
  for (const char* name : {"PATH", "HOME", "LANG", "TZ"}) {
    if (const char* value = std::getenv(name)) env.push_back(fmt::format("{}={}", name, value));
  }
  env.push_back(fmt::format("GPUSCOPE_ACTION_NAME={}", action.name));
  env.push_back(fmt::format("GPUSCOPE_ALERT_NAME={}", alert.labels.get("alertname")));
  env.push_back(fmt::format("GPUSCOPE_ALERT_STATUS={}", resolved ? "resolved" : "firing"));
  env.push_back(fmt::format("GPUSCOPE_ALERT_FINGERPRINT={}", fingerprint_text(alert.labels)));
  env.push_back(fmt::format("GPUSCOPE_ALERT_VALUE={}", alert.value));
  env.push_back(fmt::format("GPUSCOPE_ALERT_STARTS_AT={}", rfc3339(alert.starts_at_ms)));
  if (resolved) env.push_back(fmt::format("GPUSCOPE_ALERT_ENDS_AT={}", rfc3339(alert.ends_at_ms)));
  if (!alert.generator_url.empty()) env.push_back(fmt::format("GPUSCOPE_ALERT_GENERATOR_URL={}", alert.generator_url));
  for (const store::Label& l : alert.labels) {
    env.push_back(fmt::format("{}={}", environment_name("GPUSCOPE_LABEL_", l.name), l.value));
  }
  for (const store::Label& a : alert.annotations) {
    env.push_back(fmt::format("{}={}", environment_name("GPUSCOPE_ANNOTATION_", a.name), a.value));
  }
  return env;
}

void ActionRunner::submit(const std::vector<NotificationAlert>& alerts, std::int64_t now_ms) {
  if (!config_.enabled || config_.commands.empty()) return;
  std::size_t dropped = 0;
  {
    std::lock_guard lock(mu_);
    if (last_run_ms_.size() > 4096) {
      std::int64_t longest = 0;
      for (const ActionDefinition& a : config_.commands) longest = std::max(longest, a.cooldown_ms);
      std::erase_if(last_run_ms_, [&](const auto& e) { return e.second + longest <= now_ms; });
    }
    for (const NotificationAlert& alert : alerts) {
      const bool resolved = alert.resolved_at(now_ms);
      const std::uint64_t fp = labels_fingerprint(alert.labels);
      for (const ActionDefinition& action : config_.commands) {
        if ((action.on == ActionTrigger::kResolved) != resolved) continue;
        if (!matches_all(action.matchers, alert.labels)) continue;
        const std::pair<std::string, std::uint64_t> key{action.name, fp};
        if (auto last = last_run_ms_.find(key); last != last_run_ms_.end() && now_ms < last->second + action.cooldown_ms) {
          ++stats_.skipped_cooldown;
          continue;
        }
        if (stopping_ || queue_.size() >= options_.queue_capacity) {
          ++stats_.dropped;  // and no cooldown starts: the next resend may still run it
          ++dropped;
          continue;
        }
        last_run_ms_[key] = now_ms;
        queue_.push_back(Run{&action, alert, resolved});
        cv_.notify_one();
      }
    }
  }
  if (dropped > 0) log_.warn("action queue full, runs dropped", {{"count", std::to_string(dropped)}});
}

void ActionRunner::work() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty() || abort_.load()) return;
    Run run = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    ++stats_.started;
    lock.unlock();
    execute(run);
    lock.lock();
    --running_;
    if (queue_.empty() && running_ == 0) idle_cv_.notify_all();
  }
}

void ActionRunner::execute(const Run& run) {
  const ActionDefinition& action = *run.action;
  const std::string alertname(run.alert.labels.get("alertname"));
  const std::string fingerprint = fingerprint_text(run.alert.labels);
  const std::string status = run.resolved ? "resolved" : "firing";

  std::vector<std::string> argv;
  const rules::TemplateData data{run.alert.labels, run.alert.value, options_.external_labels, options_.external_url};
  for (std::size_t i = 0; i < action.command.size(); ++i) {
    const auto& tmpl = i < action.command_templates.size() ? action.command_templates[i] : nullptr;
    if (!tmpl) {
      argv.push_back(action.command[i]);
      continue;
    }
    auto expanded = tmpl->expand(data);
    if (!expanded) {
      log_.error("action not run: argument template failed",
                 {{"action", action.name}, {"alertname", alertname}, {"fingerprint", fingerprint}, {"err", expanded.error()}});
      std::lock_guard lock(mu_);
      ++stats_.failed;
      return;
    }
    argv.push_back(std::move(*expanded));
  }

  if (action.dry_run) {
    log_.info("action dry run: would run", {{"action", action.name},
                                             {"alertname", alertname},
                                             {"status", status},
                                             {"fingerprint", fingerprint},
                                             {"command", join_argv(argv)}});
    std::lock_guard lock(mu_);
    ++stats_.dry_runs;
    return;
  }

  log_.info("action starting", {{"action", action.name}, {"alertname", alertname}, {"status", status},
                                {"fingerprint", fingerprint}, {"command", join_argv(argv)}});
  ChildOptions child;
  child.timeout = std::chrono::milliseconds(action.timeout_ms);
  child.kill_grace = options_.kill_grace;
  const ChildOutcome outcome = run_child(argv, environment(action, run.alert, run.resolved), child, &abort_);
  {
    std::lock_guard lock(mu_);
    if (outcome.succeeded()) {
      ++stats_.succeeded;
    } else {
      ++stats_.failed;
      if (outcome.timed_out) ++stats_.timed_out;
    }
  }
  const std::string duration = seconds_text(outcome.duration);
  if (!outcome.spawn_error.empty()) {
    log_.error("action failed to start", {{"action", action.name}, {"alertname", alertname},
                                          {"fingerprint", fingerprint}, {"err", outcome.spawn_error}});
  } else if (outcome.timed_out) {
    log_.error("action timed out, process group killed",
               {{"action", action.name}, {"alertname", alertname}, {"fingerprint", fingerprint},
                {"timeout_seconds", seconds_text(child.timeout)}, {"duration_seconds", duration},
                {"signal", outcome.signal ? std::to_string(*outcome.signal) : "none"}, {"output", output_text(outcome.output_tail)}});
  } else if (outcome.signal) {
    log_.error("action killed by a signal", {{"action", action.name}, {"alertname", alertname},
                                             {"fingerprint", fingerprint}, {"signal", std::to_string(*outcome.signal)},
                                             {"duration_seconds", duration}, {"output", output_text(outcome.output_tail)}});
  } else {
    log_.log(outcome.exit_code == 0 ? log::Level::kInfo : log::Level::kError, "action finished",
             {{"action", action.name}, {"alertname", alertname}, {"fingerprint", fingerprint},
              {"exit_code", std::to_string(outcome.exit_code.value_or(-1))}, {"duration_seconds", duration},
              {"output", output_text(outcome.output_tail)}});
  }
}

ActionStats ActionRunner::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void ActionRunner::stop(std::chrono::milliseconds grace) {
  {
    std::unique_lock lock(mu_);
    if (threads_.empty()) return;
    idle_cv_.wait_for(lock, grace, [&] { return queue_.empty() && running_ == 0; });
    stopping_ = true;
    abort_.store(true);  // running children get SIGTERM, then SIGKILL after kill_grace
    stats_.dropped += queue_.size();
    queue_.clear();
    cv_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace gpuscope::notify
