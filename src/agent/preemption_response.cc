#include "agent/preemption_response.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/printable_text.h"
#include "notify/alert_payloads.h"
#include "notify/notifier.h"

namespace gpuscope::agent {
namespace {

// The signals a job may want for "save and exit": the usual termination ones and the two left to
// applications (some trainers checkpoint on SIGUSR1). Numbers are not taken: they differ between
// architectures, names do not.
constexpr std::array<std::pair<std::string_view, int>, 10> kPreemptionSignals{{{"TERM", SIGTERM},
                                                                               {"INT", SIGINT},
                                                                               {"HUP", SIGHUP},
                                                                               {"QUIT", SIGQUIT},
                                                                               {"USR1", SIGUSR1},
                                                                               {"USR2", SIGUSR2},
                                                                               {"KILL", SIGKILL},
                                                                               {"ABRT", SIGABRT},
                                                                               {"ALRM", SIGALRM},
                                                                               {"CONT", SIGCONT}}};

std::string signal_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string preemption_pid_list(const std::vector<int>& pids) {
  return pids.empty() ? "none" : fmt::format("{}", fmt::join(pids, ","));
}

std::string signal_errno_name(int error) {
  switch (error) {
    case ESRCH: return "ESRCH";
    case EPERM: return "EPERM";
    default: return fmt::format("errno {}", error);
  }
}

}  // namespace

std::expected<std::optional<int>, std::string> parse_signal_name(std::string_view text) {
  if (text == "none") return std::nullopt;
  std::string name = signal_upper(text);
  if (name.starts_with("SIG")) name.erase(0, 3);
  for (const auto& [known, number] : kPreemptionSignals) {
    if (name == known) return number;
  }
  return std::unexpected(fmt::format(
      "invalid value '{}' for --preemption-signal (a signal name: TERM, INT, HUP, QUIT, USR1, USR2, KILL, ABRT, "
      "ALRM, CONT, with or without SIG; or none)",
      model::printable_text(text)));
}

std::string signal_name(int signal) {
  for (const auto& [known, number] : kPreemptionSignals) {
    if (number == signal) return fmt::format("SIG{}", known);
  }
  return fmt::format("signal {}", signal);
}

std::vector<int> gpu_process_pids(const model::Snapshot& snapshot) {
  const auto self = static_cast<unsigned>(::getpid());
  std::vector<int> pids;
  for (const model::GpuSample& gpu : snapshot.gpus) {
    for (const model::ProcessSample& p : gpu.processes) {
      if (p.kind == model::ProcessKind::kGraphics) continue;  // a display server is not the job
      // A pid this namespace does not show is another namespace's number: signalling it would hit a stranger.
      if (!p.identity.visible || p.pid <= 1 || p.pid == self) continue;
      pids.push_back(static_cast<int>(p.pid));
    }
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

std::expected<int, std::string> read_pidfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::unexpected(fmt::format("pidfile {}: {}", path, std::strerror(errno)));
  std::string text(std::istreambuf_iterator<char>(in), {});
  std::string_view number = text;
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!number.empty() && space(number.front())) number.remove_prefix(1);
  while (!number.empty() && space(number.back())) number.remove_suffix(1);
  int pid = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), pid);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) {
    return std::unexpected(fmt::format("pidfile {}: '{}' is not a pid", path, model::printable_text(number.substr(0, 40))));
  }
  if (pid <= 1) return std::unexpected(fmt::format("pidfile {}: pid {} is never signalled", path, pid));
  if (pid == ::getpid()) return std::unexpected(fmt::format("pidfile {}: pid {} is the agent itself", path, pid));
  return pid;
}

void PreemptionResponse::send_signals(PreemptionResponseReport& report) const {
  std::vector<int> pids;
  if (!options_.pidfile.empty()) {
    auto pid = read_pidfile(options_.pidfile);
    if (!pid) {
      report.pid_error = pid.error();
      return;
    }
    pids.push_back(*pid);
  } else if (options_.gpu_pids) {
    pids = options_.gpu_pids();
  }
  for (int pid : pids) {
    if (::kill(pid, *options_.signal) == 0) {
      report.signalled.push_back(pid);
    } else {
      report.failed.emplace_back(pid, errno);
    }
  }
}

PreemptionResponseReport PreemptionResponse::respond(const PreemptionNotice& notice,
                                                     std::chrono::system_clock::time_point seen) {
  PreemptionResponseReport report;
  // The signal first: the job's seconds are the scarcest thing here.
  if (options_.signal) send_signals(report);

  const auto ms = [](std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  };
  log_.warn("preemption notice: this VM is being taken away",
            {{"provider", notice.provider},
             {"action", notice.action.empty() ? "unknown" : notice.action},
             {"time", notice.action_time ? notify::rfc3339(ms(*notice.action_time)) : "unknown"},
             {"seen", notify::rfc3339(ms(seen))},
             {"hostname", options_.hostname},
             {"detail", notice.detail}});
  if (!options_.signal) {
    log_.info("preemption: no process signalled (--preemption-signal none)");
  } else if (!report.pid_error.empty()) {
    log_.error("preemption: nothing signalled", {{"err", report.pid_error}});
  } else {
    std::vector<std::string> failures;
    for (const auto& [pid, error] : report.failed) failures.push_back(fmt::format("{}:{}", pid, signal_errno_name(error)));
    const std::string target = options_.pidfile.empty() ? "gpu_processes" : "pidfile";
    if (report.signalled.empty() && report.failed.empty()) {
      // In a container without the host's PID namespace, or before the job touched a GPU.
      log_.warn("preemption: no GPU process to signal (none in this PID namespace)", {{"target", target}});
    } else if (report.failed.empty()) {
      log_.info("preemption: processes signalled", {{"signal", signal_name(*options_.signal)},
                                                    {"target", target},
                                                    {"pids", preemption_pid_list(report.signalled)}});
    } else {
      // EPERM: the agent runs as neither root nor the job's user; ESRCH: the process ended meanwhile.
      log_.warn("preemption: some processes could not be signalled",
                {{"signal", signal_name(*options_.signal)},
                 {"target", target},
                 {"pids", preemption_pid_list(report.signalled)},
                 {"failed", fmt::format("{}", fmt::join(failures, ","))}});
    }
  }

  if (options_.notifier != nullptr) {
    options_.notifier->submit_now({alert(notice, seen, report)}, clock_.unix_ms());
    report.notified = true;
  }
  return report;
}

rules::Alert PreemptionResponse::alert(const PreemptionNotice& notice, std::chrono::system_clock::time_point seen,
                                       const PreemptionResponseReport& report) const {
  const std::int64_t seen_ms = std::chrono::duration_cast<std::chrono::milliseconds>(seen.time_since_epoch()).count();
  const std::string when =
      notice.action_time
          ? notify::rfc3339(std::chrono::duration_cast<std::chrono::milliseconds>(notice.action_time->time_since_epoch()).count())
          : "";
  rules::Alert a;
  a.labels = store::Labels{{"alertname", std::string(kPreemptionAlertName)},
                           {"severity", "critical"},
                           {"provider", notice.provider},
                           {"action", notice.action},
                           {"hostname", options_.hostname}};
  std::string signalled;
  if (!options_.signal) {
    signalled = "none (--preemption-signal none)";
  } else if (!report.pid_error.empty()) {
    signalled = "none: " + report.pid_error;
  } else if (report.signalled.empty() && report.failed.empty()) {
    signalled = "none: no GPU process in the agent's PID namespace";
  } else {
    signalled = fmt::format("{} to pids {}", signal_name(*options_.signal), preemption_pid_list(report.signalled));
    if (!report.failed.empty()) {
      std::vector<std::string> failures;
      for (const auto& [pid, error] : report.failed) failures.push_back(fmt::format("{} ({})", pid, signal_errno_name(error)));
      signalled += fmt::format("; failed: {}", fmt::join(failures, ", "));
    }
  }
  const std::string host = options_.hostname.empty() ? "this node" : options_.hostname;
  a.annotations = store::Labels{
      {"summary", fmt::format("{} is being preempted ({})", host, notice.provider)},
      {"description", fmt::format("The cloud announced the preemption of {} (provider {}{}{}). Signalled: {}. The node will go: "
                                  "check that the job checkpointed and is rescheduled elsewhere.", host,
                                  notice.provider, notice.action.empty() ? "" : ", action " + notice.action,
                                  when.empty() ? "" : ", at " + when, signalled)},
      {"time", when.empty() ? notify::rfc3339(seen_ms) : when},
      {"signalled", signalled},
      {"detail", notice.detail}};
  a.state = rules::AlertState::kFiring;
  a.value = 1;
  a.active_at_ms = seen_ms;
  a.fired_at_ms = seen_ms;
  a.valid_until_ms = seen_ms + std::chrono::duration_cast<std::chrono::milliseconds>(kPreemptionAlertValidity).count();
  return a;
}

}  // namespace gpuscope::agent
