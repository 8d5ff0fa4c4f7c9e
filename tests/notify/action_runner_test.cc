#include "notify/action_runner.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "notify/notifier.h"
#include "notify_test_support.h"

namespace gpuscope::notify {
namespace {

using testing::kT0;

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::eventually;
using testing::LogCapture;
using testing::n_alert;

constexpr std::int64_t kFar = kT0 + 24 * 3'600'000;

class ActionRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("notify_action_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ActionsConfig actions_of(const std::string& yaml) {
    auto parsed = parse_notify_config(yaml, "test.yml");
    EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error()[0]);
    return parsed ? parsed->actions : ActionsConfig{};
  }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  static std::map<std::string, std::string> env_file(const std::string& path) {
    std::map<std::string, std::string> out;
    std::istringstream in(read(path));
    for (std::string line; std::getline(in, line);) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return out;
  }

  fs::path dir_;
  LogCapture logs_;
};

// Gone, or a zombie waiting for init to reap it (the sleep's parent shell died with it).
bool dead(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return true;
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

NotificationAlert xid_alert(std::string gpu = "3", std::int64_t ends = kFar) {
  return n_alert({{"alertname", "GpuXidError"}, {"gpu", std::move(gpu)}, {"gpu.uuid", "GPU-abc"}, {"xid", "79"}}, kT0,
                 ends, {{"summary", "GPU fell off the bus"}, {"runbook_url", "http://wiki/xid79"}});
}

TEST_F(ActionRunnerTest, RunsTheArgvWithTheAlertInTheEnvironment) {
  const std::string out = file("env.txt");
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n    - name: record\n"
                                 "      matchers: ['alertname=\"GpuXidError\"']\n"
                                 "      command: [/bin/sh, -c, 'env > \"$0\"', '" + out + "']\n"),
                      logs_.log, {});
  runner.submit({xid_alert()}, kT0);
  ASSERT_TRUE(eventually([&] { return runner.stats().succeeded == 1; })) << logs_.text();
  auto env = env_file(out);
  EXPECT_EQ(env["GPUSCOPE_ALERT_NAME"], "GpuXidError");
  EXPECT_EQ(env["GPUSCOPE_ALERT_STATUS"], "firing");
  EXPECT_EQ(env["GPUSCOPE_ACTION_NAME"], "record");
  EXPECT_EQ(env["GPUSCOPE_LABEL_GPU"], "3");
  EXPECT_EQ(env["GPUSCOPE_LABEL_GPU_UUID"], "GPU-abc");  // non-alphanumerics become _
  EXPECT_EQ(env["GPUSCOPE_LABEL_XID"], "79");
  EXPECT_EQ(env["GPUSCOPE_ANNOTATION_SUMMARY"], "GPU fell off the bus");
  EXPECT_EQ(env["GPUSCOPE_ANNOTATION_RUNBOOK_URL"], "http://wiki/xid79");
  EXPECT_EQ(env["GPUSCOPE_ALERT_FINGERPRINT"], fingerprint_text(xid_alert().labels));
  EXPECT_EQ(env["GPUSCOPE_ALERT_STARTS_AT"], "2024-05-01T12:00:00.000Z");
  EXPECT_EQ(env.count("GPUSCOPE_ALERT_ENDS_AT"), 0u);
  const std::string log = logs_.text();
  EXPECT_NE(log.find("msg=\"action finished\" action=record alertname=GpuXidError"), std::string::npos) << log;
  EXPECT_NE(log.find("exit_code=0"), std::string::npos) << log;
  EXPECT_NE(log.find("duration_seconds="), std::string::npos);
}

TEST_F(ActionRunnerTest, TheAgentsEnvironmentDoesNotLeakIn) {
  setenv("GPUSCOPE_TEST_SECRET", "do-not-pass", 1);
  const std::string out = file("env.txt");
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n    - name: record\n"
                                 "      command: [/bin/sh, -c, 'env > \"$0\"', '" + out + "']\n"),
                      logs_.log, {});
  runner.submit({xid_alert()}, kT0);
  ASSERT_TRUE(eventually([&] { return runner.stats().succeeded == 1; }));
  unsetenv("GPUSCOPE_TEST_SECRET");
  auto env = env_file(out);
  EXPECT_EQ(env.count("GPUSCOPE_TEST_SECRET"), 0u);
  EXPECT_EQ(env["PATH"], std::getenv("PATH"));
}

TEST_F(ActionRunnerTest, ArgvTemplatesAreExpandedAndNeverGoThroughAShell) {
  const std::string out = file("args.txt");
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n    - name: args\n"
                                 "      command: [/bin/sh, -c, 'printf \"%s|\" \"$@\" > \"$0\"', '" + out + "', "
                                 "'gpu={{ $labels.gpu }}', '{{ $labels.alertname }}']\n"),
                      logs_.log, {});
  NotificationAlert a = xid_alert("$(touch " + file("pwned") + ")");
  runner.submit({a}, kT0);
  ASSERT_TRUE(eventually([&] { return runner.stats().succeeded == 1; })) << logs_.text();
  EXPECT_EQ(read(out), "gpu=$(touch " + file("pwned") + ")|GpuXidError|");
  EXPECT_FALSE(fs::exists(file("pwned")));
}

TEST_F(ActionRunnerTest, CooldownIsPerAlert) {
  const std::string out = file("runs.txt");
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n    - name: count\n      cooldown: 10m\n"
                                 "      command: [/bin/sh, -c, 'echo \"$GPUSCOPE_LABEL_GPU\" >> \"$0\"', '" + out + "']\n"),
                      logs_.log, {});
  runner.submit({xid_alert("0")}, kT0);
  runner.submit({xid_alert("0")}, kT0 + 60'000);   // within the cooldown: skipped
  runner.submit({xid_alert("1")}, kT0 + 60'000);   // another alert: runs
  ASSERT_TRUE(eventually([&] { return runner.stats().succeeded == 2; }));
  runner.submit({xid_alert("0")}, kT0 + 600'000);  // cooldown over
  ASSERT_TRUE(eventually([&] { return runner.stats().succeeded == 3; }));
  EXPECT_EQ(runner.stats().skipped_cooldown, 1u);
  std::string runs = read(out);
  std::sort(runs.begin(), runs.end());
  EXPECT_EQ(runs, "\n\n\n001");
}

TEST_F(ActionRunnerTest, ATimeoutKillsTheProcessGroup) {
  const std::string pid_file = file("grandchild.pid");
  ActionRunnerOptions options;
  options.kill_grace = 200ms;
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n    - name: hang\n      timeout: 300ms\n"
                                 "      command: [/bin/sh, -c, 'sleep 30 & echo $! > \"$0\"; wait', '" + pid_file + "']\n"),
                      logs_.log, options);
  runner.submit({xid_alert()}, kT0);
  ASSERT_TRUE(eventually([&] { return runner.stats().timed_out == 1; }, 10s)) << logs_.text();
  EXPECT_EQ(runner.stats().failed, 1u);
  EXPECT_NE(logs_.text().find("action timed out, process group killed"), std::string::npos) << logs_.text();
  const pid_t grandchild = std::stoi(read(pid_file));
  EXPECT_TRUE(eventually([&] { return dead(grandchild); }, 2s)) << "the sleep outlived its group";
}

TEST_F(ActionRunnerTest, SubmitNeverWaitsForTheCommand) {
  // The command blocks until the test writes to its FIFO, which the test does only after submit
  // returned: a submit that waited for the command would never return.
  const std::string fifo = file("gate");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n    - name: gated\n      timeout: 1h\n"
                                 "      command: [/bin/sh, -c, 'read line < \"$0\"', '" + fifo + "']\n"),
                      logs_.log, {});
  runner.submit({xid_alert()}, kT0);
  EXPECT_EQ(runner.stats().succeeded, 0u);
  std::ofstream(fifo) << "go\n";
  ASSERT_TRUE(eventually([&] { return runner.stats().succeeded == 1; }, 10s)) << logs_.text();
}

TEST_F(ActionRunnerTest, DryRunLogsWithoutRunning) {
  const std::string marker = file("ran");
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n    - name: dry\n      dry_run: true\n"
                                 "      command: [/usr/bin/touch, '" + marker + "', '{{ $labels.gpu }}']\n"),
                      logs_.log, {});
  runner.submit({xid_alert()}, kT0);
  ASSERT_TRUE(eventually([&] { return runner.stats().dry_runs == 1; }));
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_NE(logs_.text().find("action dry run: would run"), std::string::npos);
  EXPECT_NE(logs_.text().find("command=\"/usr/bin/touch " + marker + " 3\""), std::string::npos) << logs_.text();
}

TEST_F(ActionRunnerTest, DisabledByDefault) {
  const std::string marker = file("ran");
  ActionRunner runner(actions_of("actions:\n  commands:\n    - name: off\n      command: [/usr/bin/touch, '" + marker + "']\n"),
                      logs_.log, {});
  runner.submit({xid_alert()}, kT0);
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_EQ(runner.stats().started, 0u);
}

TEST_F(ActionRunnerTest, OnResolvedAndMatchers) {
  const std::string out = file("runs.txt");
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n"
                                 "    - name: on-resolve\n      on: resolved\n      matchers: ['xid=\"79\"']\n"
                                 "      command: [/bin/sh, -c, 'echo \"$GPUSCOPE_ALERT_STATUS $GPUSCOPE_ALERT_ENDS_AT\" >> \"$0\"', '" +
                                 out + "']\n"),
                      logs_.log, {});
  runner.submit({xid_alert()}, kT0);  // firing: not this action's trigger
  NotificationAlert other = xid_alert("0", kT0 + 60'000);
  other.labels.set("xid", "48");
  runner.submit({xid_alert("3", kT0 + 60'000), other}, kT0 + 60'000);
  ASSERT_TRUE(eventually([&] { return runner.stats().succeeded == 1; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(runner.stats().started, 1u);
  EXPECT_EQ(read(out), "resolved 2024-05-01T12:01:00.000Z\n");
}

TEST_F(ActionRunnerTest, FailuresAreLoggedWithTheirOutcome) {
  ActionRunner runner(actions_of("actions:\n  enabled: true\n  commands:\n"
                                 "    - name: exit3\n      command: [/bin/sh, -c, 'echo oops >&2; exit 3']\n"
                                 "    - name: missing\n      command: [/nonexistent/program]\n"
                                 "    - name: killed\n      command: [/bin/sh, -c, 'kill -9 $$']\n"),
                      logs_.log, {});
  runner.submit({xid_alert()}, kT0);
  ASSERT_TRUE(eventually([&] { return runner.stats().failed == 3; })) << logs_.text();
  const std::string log = logs_.text();
  EXPECT_NE(log.find("action=exit3 alertname=GpuXidError"), std::string::npos) << log;
  EXPECT_NE(log.find("exit_code=3"), std::string::npos) << log;
  EXPECT_NE(log.find("output=oops"), std::string::npos) << log;
  EXPECT_NE(log.find("cannot run /nonexistent/program: No such file or directory"), std::string::npos) << log;
  EXPECT_NE(log.find("signal=9"), std::string::npos) << log;
}

TEST_F(ActionRunnerTest, TheNotifierStartsActionsOffTheCallersThread) {
  const std::string out = file("ran");
  auto config = parse_notify_config("actions:\n  enabled: true\n  commands:\n    - name: slow\n"
                                    "      command: [/bin/sh, -c, 'sleep 0.5; touch \"$0\"', '" + out + "']\n",
                                    "test.yml");
  ASSERT_TRUE(config.has_value());
  auto notifier = Notifier::create(std::move(*config), logs_.log, {});
  ASSERT_TRUE(notifier.has_value());
  const auto start = std::chrono::steady_clock::now();
  (*notifier)->submit({testing::firing_alert({{"alertname", "GpuXidError"}}, kT0, kFar)}, kT0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_TRUE(eventually([&] { return (*notifier)->stats().actions.succeeded == 1; }, 5s)) << logs_.text();
  EXPECT_TRUE(fs::exists(out));
  (*notifier)->stop(1s);
}

TEST(EnvironmentName, UppercasesAndReplaces) {
  EXPECT_EQ(environment_name("GPUSCOPE_LABEL_", "gpu.uuid-2"), "GPUSCOPE_LABEL_GPU_UUID_2");
  EXPECT_EQ(environment_name("GPUSCOPE_ANNOTATION_", "Summary"), "GPUSCOPE_ANNOTATION_SUMMARY");
}

}  // namespace
}  // namespace gpuscope::notify
