// The response to a preemption notice, with real processes (`sleep 60`) standing in for training jobs:
// the GPUs' processes or the pidfile's one get the signal (SIGTERM unless told), `none` signals nothing,
// what could not be signalled is reported, and the GpuNodePreempted alert goes to the receivers at once.
#include "agent/preemption_response.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "notify/notifier.h"
#include "preemption_test_support.h"

namespace gpuscope::agent::preemption_response_test {

using namespace std::chrono_literals;
using preemption_testing::Sleeper;

const PreemptionNotice kAwsNotice{"aws", "terminate",
                                  std::chrono::system_clock::time_point(std::chrono::seconds(1795767720)),
                                  R"({"action":"terminate","time":"2026-11-27T08:22:00Z"})"};
const auto kSeen = std::chrono::system_clock::time_point(std::chrono::seconds(1795767600));

class TempPidfile {
 public:
  explicit TempPidfile(const std::string& content) {
    path_ = (std::filesystem::temp_directory_path() /
             ("gpuscope-preemption-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) + ".pid"))
                .string();
    std::ofstream(path_) << content;
  }
  ~TempPidfile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

struct Fixture {
  model::VirtualClock clock;
  std::ostringstream log_text;
  log::Logger log{log_text, log::Level::kDebug};
};

// --- flags and pids ---

TEST(PreemptionSignalFlag, TakesNamesWithOrWithoutSigInAnyCaseOrNone) {
  EXPECT_EQ(parse_signal_name("TERM").value(), SIGTERM);
  EXPECT_EQ(parse_signal_name("SIGTERM").value(), SIGTERM);
  EXPECT_EQ(parse_signal_name("sigint").value(), SIGINT);
  EXPECT_EQ(parse_signal_name("usr1").value(), SIGUSR1);
  EXPECT_EQ(parse_signal_name("SIGUSR2").value(), SIGUSR2);
  EXPECT_EQ(parse_signal_name("none").value(), std::nullopt);
  EXPECT_EQ(parse_signal_name("SIGFOO").error(),
            "invalid value 'SIGFOO' for --preemption-signal (a signal name: TERM, INT, HUP, QUIT, USR1, USR2, KILL, "
            "ABRT, ALRM, CONT, with or without SIG; or none)");
  for (const char* bad : {"", "15", "SIG", "TERM ", "SIGSEGV"}) EXPECT_FALSE(parse_signal_name(bad).has_value()) << bad;
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGUSR1), "SIGUSR1");
}

model::ProcessSample process(unsigned pid, bool visible, model::ProcessKind kind = model::ProcessKind::kCompute) {
  model::ProcessSample p;
  p.pid = pid;
  p.kind = kind;
  p.identity.visible = visible;
  return p;
}

TEST(PreemptionGpuProcessPids, AreTheVisibleComputeProcessesOnceNeverInitOrTheAgent) {
  model::Snapshot snapshot;
  snapshot.gpus.resize(2);
  const auto self = static_cast<unsigned>(::getpid());
  snapshot.gpus[0].processes = {process(4242, true), process(77, false), process(1, true), process(self, true),
                                process(555, true, model::ProcessKind::kGraphics)};
  snapshot.gpus[1].processes = {process(4242, true), process(666, true, model::ProcessKind::kComputeAndGraphics),
                                process(0, true)};
  EXPECT_EQ(gpu_process_pids(snapshot), (std::vector<int>{666, 4242}));
  EXPECT_TRUE(gpu_process_pids(model::Snapshot{}).empty());
}

TEST(PreemptionPidfile, HoldsOnePidThatIsNeitherInitNorTheAgent) {
  EXPECT_EQ(read_pidfile(TempPidfile("12345\n").path()).value(), 12345);
  EXPECT_EQ(read_pidfile(TempPidfile("  777 ").path()).value(), 777);
  const TempPidfile words("train.py");
  EXPECT_EQ(read_pidfile(words.path()).error(), "pidfile " + words.path() + ": 'train.py' is not a pid");
  for (const std::string& bad : {std::string(""), std::string("1"), std::string("-5"), std::string("12 13"),
                                 std::to_string(::getpid())}) {
    EXPECT_FALSE(read_pidfile(TempPidfile(bad).path()).has_value()) << bad;
  }
  auto missing = read_pidfile("/nonexistent/gpuscope/train.pid");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error(), "pidfile /nonexistent/gpuscope/train.pid: No such file or directory");
}

// --- signals ---

TEST(PreemptionResponse, SignalsEveryGpuProcessWithSigterm) {
  Fixture f;
  Sleeper a, b;
  PreemptionResponseOptions options;
  options.gpu_pids = [&] { return std::vector<int>{a.pid(), b.pid()}; };
  PreemptionResponse response(options, f.clock, f.log);
  const auto report = response.respond(kAwsNotice, kSeen);
  EXPECT_EQ(report.signalled, (std::vector<int>{a.pid(), b.pid()}));
  EXPECT_TRUE(report.failed.empty());
  EXPECT_FALSE(report.notified);
  EXPECT_EQ(a.ended_by(), SIGTERM);
  EXPECT_EQ(b.ended_by(), SIGTERM);
  const std::string text = f.log_text.str();
  EXPECT_NE(text.find("preemption notice: this VM is being taken away"), std::string::npos) << text;
  EXPECT_NE(text.find("action=terminate time=2026-11-27T08:22:00.000Z"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("signal=SIGTERM target=gpu_processes pids={},{}", a.pid(), b.pid())), std::string::npos)
      << text;
}

TEST(PreemptionResponse, APidfileNarrowsTheSignalToItsOneProcess) {
  Fixture f;
  Sleeper gpu_job, launcher;
  const TempPidfile pidfile(std::to_string(launcher.pid()) + "\n");
  PreemptionResponseOptions options;
  options.pidfile = pidfile.path();
  options.gpu_pids = [&] { return std::vector<int>{gpu_job.pid()}; };
  PreemptionResponse response(options, f.clock, f.log);
  const auto report = response.respond(kAwsNotice, kSeen);
  EXPECT_EQ(report.signalled, std::vector<int>{launcher.pid()});
  EXPECT_EQ(launcher.ended_by(), SIGTERM);
  EXPECT_TRUE(gpu_job.running());
  EXPECT_NE(f.log_text.str().find("target=pidfile"), std::string::npos) << f.log_text.str();
}

TEST(PreemptionResponse, TheSignalCanBeChosen) {
  Fixture f;
  Sleeper job;
  PreemptionResponseOptions options;
  options.signal = SIGUSR1;
  options.gpu_pids = [&] { return std::vector<int>{job.pid()}; };
  PreemptionResponse response(options, f.clock, f.log);
  response.respond(kAwsNotice, kSeen);
  EXPECT_EQ(job.ended_by(), SIGUSR1);
}

TEST(PreemptionResponse, SignalNoneSignalsNothing) {
  Fixture f;
  Sleeper job;
  PreemptionResponseOptions options;
  options.signal = std::nullopt;
  bool asked = false;
  options.gpu_pids = [&] {
    asked = true;
    return std::vector<int>{job.pid()};
  };
  PreemptionResponse response(options, f.clock, f.log);
  const auto report = response.respond(kAwsNotice, kSeen);
  EXPECT_TRUE(report.signalled.empty());
  EXPECT_FALSE(asked);
  EXPECT_TRUE(job.running());
  EXPECT_NE(f.log_text.str().find("no process signalled (--preemption-signal none)"), std::string::npos);
}

TEST(PreemptionResponse, PidsThatCannotBeSignalledAreReportedAndTheOthersStillAre) {
  Fixture f;
  Sleeper gone, alive;
  gone.reap();
  PreemptionResponseOptions options;
  options.gpu_pids = [&] { return std::vector<int>{gone.pid(), alive.pid()}; };
  PreemptionResponse response(options, f.clock, f.log);
  const auto report = response.respond(kAwsNotice, kSeen);
  EXPECT_EQ(report.signalled, std::vector<int>{alive.pid()});
  ASSERT_EQ(report.failed.size(), 1u);
  EXPECT_EQ(report.failed[0], std::make_pair(gone.pid(), ESRCH));
  EXPECT_EQ(alive.ended_by(), SIGTERM);
  const std::string text = f.log_text.str();
  EXPECT_NE(text.find("level=warn msg=\"preemption: some processes could not be signalled\""), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("failed={}:ESRCH", gone.pid())), std::string::npos) << text;
}

TEST(PreemptionResponse, NoGpuProcessIsSaidSo) {
  Fixture f;
  PreemptionResponseOptions options;
  options.gpu_pids = [] { return std::vector<int>{}; };
  PreemptionResponse response(options, f.clock, f.log);
  const auto report = response.respond(kAwsNotice, kSeen);
  EXPECT_TRUE(report.signalled.empty());
  EXPECT_TRUE(report.failed.empty());
  EXPECT_NE(f.log_text.str().find("level=warn msg=\"preemption: no GPU process to signal"), std::string::npos)
      << f.log_text.str();
  EXPECT_EQ(response.alert(kAwsNotice, kSeen, report).annotations.get("signalled"),
            "none: no GPU process in the agent's PID namespace");
}

TEST(PreemptionResponse, AnUnreadablePidfileSignalsNothingAndSaysWhy) {
  Fixture f;
  Sleeper job;
  PreemptionResponseOptions options;
  options.pidfile = "/nonexistent/gpuscope/train.pid";
  options.gpu_pids = [&] { return std::vector<int>{job.pid()}; };
  PreemptionResponse response(options, f.clock, f.log);
  const auto report = response.respond(kAwsNotice, kSeen);
  EXPECT_TRUE(report.signalled.empty());
  EXPECT_EQ(report.pid_error, "pidfile /nonexistent/gpuscope/train.pid: No such file or directory");
  EXPECT_TRUE(job.running());
  EXPECT_NE(f.log_text.str().find("level=error msg=\"preemption: nothing signalled\""), std::string::npos)
      << f.log_text.str();
}

// --- the alert ---

TEST(PreemptionResponse, TheAlertNamesTheNodeProviderActionTimeAndWhatWasSignalled) {
  Fixture f;
  PreemptionResponseOptions options;
  options.hostname = "gpu-node-7";
  PreemptionResponse response(options, f.clock, f.log);
  PreemptionResponseReport report;
  report.signalled = {4242};
  report.failed = {{4343, EPERM}};
  const rules::Alert a = response.alert(kAwsNotice, kSeen, report);
  EXPECT_EQ(a.labels, (store::Labels{{"alertname", "GpuNodePreempted"},
                                     {"severity", "critical"},
                                     {"provider", "aws"},
                                     {"action", "terminate"},
                                     {"hostname", "gpu-node-7"}}));
  EXPECT_EQ(a.state, rules::AlertState::kFiring);
  EXPECT_EQ(a.fired_at_ms, 1795767600000);
  EXPECT_EQ(a.valid_until_ms, 1795767600000 + 3600'000);
  EXPECT_EQ(a.annotations.get("summary"), "gpu-node-7 is being preempted (aws)");
  EXPECT_EQ(a.annotations.get("time"), "2026-11-27T08:22:00.000Z");
  EXPECT_EQ(a.annotations.get("signalled"), "SIGTERM to pids 4242; failed: 4343 (EPERM)");
  EXPECT_NE(a.annotations.get("description").find("action terminate, at 2026-11-27T08:22:00.000Z"), std::string::npos)
      << a.annotations.get("description");

  // GCE says neither action nor time: no action label, and the time is when the notice was seen.
  const rules::Alert gce = response.alert(PreemptionNotice{"gce", "", std::nullopt, "TRUE"}, kSeen, {});
  EXPECT_FALSE(gce.labels.has("action"));
  EXPECT_EQ(gce.annotations.get("time"), "2026-11-27T08:20:00.000Z");
}

TEST(PreemptionResponse, TheAlertGoesToTheReceiversAtOnceNotAfterGroupWait) {
  Fixture f;
  auto config = notify::parse_notify_config(R"(
route:
  receiver: oncall
  group_by: [alertname]
  group_wait: 5m
receivers:
  - name: oncall
    webhook_configs: [{url: 'http://127.0.0.1:1/hook'}]
)",
                                            "notify.yml", [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(config.has_value()) << config.error()[0];
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> bodies;
  notify::NotifierOptions no;
  no.delivery.clock = &f.clock;  // never advanced: only an immediate flush can send
  no.send = [&](const notify::OutgoingRequest& request, const std::atomic<bool>&) -> std::expected<void, notify::SendError> {
    std::lock_guard lock(mu);
    bodies.push_back(std::get<notify::HttpPost>(request).body);
    cv.notify_all();
    return {};
  };
  auto notifier = notify::Notifier::create(std::move(*config), f.log, std::move(no));
  ASSERT_TRUE(notifier.has_value()) << notifier.error();
  Sleeper job;
  PreemptionResponseOptions options;
  options.hostname = "gpu-node-7";
  options.notifier = notifier->get();
  options.gpu_pids = [&] { return std::vector<int>{job.pid()}; };
  PreemptionResponse response(options, f.clock, f.log);
  EXPECT_TRUE(response.respond(kAwsNotice, f.clock.wall()).notified);
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return !bodies.empty(); }));
  const std::string& body = bodies[0];
  EXPECT_NE(body.find(R"("alertname":"GpuNodePreempted")"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("hostname":"gpu-node-7")"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("provider":"aws")"), std::string::npos) << body;
  EXPECT_NE(body.find(fmt::format("SIGTERM to pids {}", job.pid())), std::string::npos) << body;
  lock.unlock();
  (*notifier)->stop(0ms);
}

}  // namespace gpuscope::agent::preemption_response_test
