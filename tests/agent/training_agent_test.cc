// The agent's training part, in process, on the simulated NVML and a virtual clock: step events over its
// Unix socket and POST /api/v1/events, the training series in /metrics and the history, the straggler
// named with its GPU's cause, a stalled job and its alert from the rule pack (and the hand-written stall
// rules' expressions over the same series), memory kept between epochs, epoch verdicts, limits, and the
// socket's file (mode, stale file, in use, removed at stop).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/event_socket.h"
#include "agent/simulated_agent.h"
#include "e2e/http_client.h"

namespace gpuscope::agent {
namespace training_agent_test {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class TrainingAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short: a Unix socket's path holds at most 107 bytes.
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = fs::temp_directory_path() /
           fmt::format("gpuscope-training-{}-{}", getpid(), std::hash<std::string>{}(name) % 1'000'000);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    socket_path_ = (dir_ / "events.sock").string();
    config_ = agent_testing::loopback_config(dir_, &clock_);
    config_.events_socket = socket_path_;
    config_.training_thresholds.stall_after = 10s;
  }
  void TearDown() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    fs::remove_all(dir_);
  }

  std::unique_ptr<Agent> start_agent(const std::string& scenario = "straggler.yaml") {
    return agent_testing::start_simulated_agent(config_, log_, scenario);
  }

  // Sends one datagram to the agent's socket, as a client does.
  void send(const std::string& datagram) const {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof(addr.sun_path) - 1);
    const auto sent = ::sendto(fd, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::close(fd);
    ASSERT_EQ(sent, static_cast<ssize_t>(datagram.size())) << std::strerror(errno);
  }

  static std::string step(const std::string& job, int rank, int step, double duration, int gpu) {
    return fmt::format(R"({{"event":"step","job":"{}","rank":{},"world_size":4,"gpu":{},"step":{},"duration_s":{},"loss":{}}})",
                       job, rank, gpu, step, duration, 2.0 - step * 0.01);
  }

  static nlohmann::json training(int port) {
    return nlohmann::json::parse(e2e::http_get(port, "/api/v1/training").body)["data"];
  }

  static double received(int port) {
    const auto j = training(port);
    return j["events"]["received"]["socket"].get<double>() + j["events"]["received"]["http"].get<double>();
  }

  // Waits (in real time, bounded by tries, never asserted on) until `done` holds.
  template <typename Done>
  static bool eventually(Done done) {
    for (int i = 0; i < 5000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(2ms);
    }
    return done();
  }

  static double samples_total(int port) {
    const std::string body = e2e::http_get(port, "/metrics").body;
    const std::string line_start = "\ngpuscope_samples_total ";
    const auto at = body.find(line_start);
    return at == std::string::npos ? -1 : std::stod(body.substr(at + line_start.size()));
  }

  // Moves the clock a second at a time, each time until the agent has taken the reading then due.
  void tick(int port, int seconds) {
    for (int s = 0; s < seconds; ++s) {
      const double before = samples_total(port);
      clock_.advance(1s);
      eventually([&] { return samples_total(port) > before; });
    }
    // The findings thread wakes on the same clock; give it a moment of real time to draw them.
    std::this_thread::sleep_for(20ms);
  }

  // The lines of `name` in a /metrics body rendered now: scrapes within kBodyReuse of each other share a
  // body, and the findings may have changed since the last one.
  static std::vector<std::string> metric_lines(int port, const std::string& name) {
    std::this_thread::sleep_for(http::AgentRoutes::kBodyReuse + 10ms);
    std::vector<std::string> out;
    std::istringstream in(e2e::http_get(port, "/metrics").body);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with(name + "{") || line.starts_with(name + " ")) out.push_back(line);
    }
    return out;
  }

  static e2e::HttpResult post_events(int port, const std::string& body) {
    return e2e::http_raw(port, fmt::format("POST /api/v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                           "Content-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n{}",
                                           body.size(), body));
  }

  static nlohmann::json query(int port, const std::string& expr) {
    std::string encoded;
    for (const char c : expr) {
      if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
        encoded += c;
      } else {
        encoded += fmt::format("%{:02X}", static_cast<unsigned char>(c));
      }
    }
    return nlohmann::json::parse(e2e::http_get(port, "/api/v1/query?query=" + encoded).body);
  }

  fs::path dir_;
  std::string socket_path_;
  model::VirtualClock clock_;
  std::stringstream log_text_;
  log::Logger log_{log_text_, log::Level::kInfo};
  AgentConfig config_;
};

TEST_F(TrainingAgentTest, NamesTheStragglerRankAndItsThrottledGpu) {
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  // Four ranks on GPUs 0-3 of the straggler node (GPU 3's clock held at 70%); rank 3 takes 30% longer.
  for (int s = 0; s < 10; ++s) {
    for (int r = 0; r < 4; ++r) send(step("llama", r, s, r == 3 ? 0.13 : 0.10, r));
  }
  ASSERT_TRUE(eventually([&] { return received(port) == 40; })) << training(port).dump();
  tick(port, 2);
  const auto job = training(port)["jobs"].at(0);
  EXPECT_EQ(job["job"], "llama");
  ASSERT_FALSE(job["straggler"].is_null()) << job.dump();
  EXPECT_EQ(job["straggler"]["rank"], 3);
  EXPECT_EQ(job["straggler"]["gpu"], 3);
  EXPECT_EQ(job["straggler"]["cause"], "gpu_clock");
  EXPECT_THAT(job["straggler"]["detail"].get<std::string>(), HasSubstr("its GPU 3 runs at"));
  EXPECT_NEAR(job["step_time_cv"].get<double>(), 0.1299 / 1.075, 0.001);
  EXPECT_EQ(job["ranks"].at(0)["pid"], getpid()) << "the kernel's word for the sender";

  EXPECT_THAT(metric_lines(port, "gpuscope_training_straggler_info"),
              ::testing::ElementsAre(HasSubstr(R"(rank="3",gpu="3",cause="gpu_clock"} 1)")));
  const auto batches = metric_lines(port, "training_batches_total");
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_THAT(batches[0], HasSubstr(R"(training_batches_total{training_job="llama",rank="0",Hostname="straggler-h100-01"} 10)"));
  EXPECT_THAT(metric_lines(port, "training_step_duration_seconds_count"), ::testing::Each(::testing::EndsWith(" 10")));
  EXPECT_THAT(log_text_.str(), HasSubstr("msg=\"training straggler\" training_job=llama rank=3"));
}

TEST_F(TrainingAgentTest, AStoppedLoopIsStalledAndItsAlertAndTheHandWrittenStallRulesFire) {
  config_.rule_specs = {std::string(GPUSCOPE_SOURCE_DIR) + "/rules/gpu.rules.yml"};
  config_.evaluation_interval = 1s;
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  for (int s = 0; s < 5; ++s) {
    for (int r = 0; r < 2; ++r) send(step("bert", r, s, 0.2, r));
    tick(port, 1);
  }
  ASSERT_TRUE(eventually([&] { return received(port) == 10; }));
  // Still stepping: the documents' rules see progress.
  EXPECT_EQ(query(port, "rate(training_batch_completed_total[5m]) > 0")["data"]["result"].size(), 2u);
  EXPECT_THAT(metric_lines(port, "gpuscope_training_stalled"), ::testing::ElementsAre(::testing::EndsWith(" 0")));

  // The loop stops; its process (this test) lives on.
  tick(port, 12);
  const auto job = training(port)["jobs"].at(0);
  ASSERT_FALSE(job["stalled"].is_null()) << job.dump();
  EXPECT_THAT(job["stalled"]["detail"].get<std::string>(), HasSubstr(fmt::format("pid {} (rank 0) is alive", getpid())));
  EXPECT_EQ(job["stalled"]["last_step"], 4);
  EXPECT_THAT(metric_lines(port, "gpuscope_training_stalled"), ::testing::ElementsAre(::testing::EndsWith(" 1")));
  EXPECT_THAT(log_text_.str(), HasSubstr("msg=\"training job stalled\" training_job=bert"));

  // GpuTrainingStalled has `for: 1m`; the hand-written rules read 5 and 10 minutes of no steps.
  tick(port, 70);
  const auto alerts = nlohmann::json::parse(e2e::http_get(port, "/api/v1/alerts").body)["data"]["alerts"];
  bool firing = false;
  for (const auto& a : alerts) {
    if (a["labels"]["alertname"] == "GpuTrainingStalled" && a["state"] == "firing") {
      firing = true;
      EXPECT_EQ(a["labels"]["training_job"], "bert");
    }
  }
  EXPECT_TRUE(firing) << alerts.dump();
  tick(port, 300);
  EXPECT_EQ(query(port, "rate(training_batch_completed_total[5m]) == 0")["data"]["result"].size(), 2u);
  EXPECT_EQ(query(port, "rate(training_batches_total[5m]) == 0")["data"]["result"].size(), 2u);
}

TEST_F(TrainingAgentTest, AJobWhoseProcessesAreGoneEndedAndIsNotStalled) {
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  // Over HTTP the pid is the event's own: one that does not live (pid_max is at most 2^22).
  const auto r = post_events(port, R"({"event":"step","job":"done","rank":0,"pid":4194303,"step":1,"duration_s":0.5})");
  ASSERT_EQ(r.status, 202) << r.body;
  tick(port, 12);
  EXPECT_TRUE(training(port)["jobs"].at(0)["stalled"].is_null());
  EXPECT_THAT(metric_lines(port, "gpuscope_training_stalled"), ::testing::ElementsAre(::testing::EndsWith(" 0")));
}

TEST_F(TrainingAgentTest, HttpEventsAreCountedAndBadLinesNamed) {
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  auto partial = post_events(port, "{\"event\":\"step\",\"job\":\"j\",\"step\":1,\"duration_s\":0.1}\n"
                                   "not json\n"
                                   "{\"event\":\"step\",\"job\":\"j\",\"step\":2}\n");
  ASSERT_EQ(partial.status, 202) << partial.body;
  const auto data = nlohmann::json::parse(partial.body)["data"];
  EXPECT_EQ(data["accepted"], 1);
  EXPECT_EQ(data["rejected"], 2);
  EXPECT_THAT(data["errors"], ::testing::ElementsAre("line 2: not a JSON object on one line",
                                                     "line 3: duration_s: missing from a step event"));
  const auto none = post_events(port, "{\"event\":\"lunch\",\"job\":\"j\"}\n");
  EXPECT_EQ(none.status, 400);
  EXPECT_THAT(none.body, HasSubstr("no event accepted: line 1: event: \\\"lunch\\\" is not step, epoch_start or epoch_end"));
  EXPECT_EQ(post_events(port, "").status, 400);
  EXPECT_EQ(e2e::http_get(port, "/api/v1/events").status, 405);
  EXPECT_THAT(metric_lines(port, "gpuscope_events_rejected_total"),
              ::testing::IsSupersetOf({R"(gpuscope_events_rejected_total{reason="malformed"} 1)",
                                       R"(gpuscope_events_rejected_total{reason="invalid"} 2)"}));
  EXPECT_THAT(metric_lines(port, "gpuscope_events_received_total"),
              ::testing::Contains(R"(gpuscope_events_received_total{transport="http"} 4)"));
  // A datagram longer than the socket reads whole is one event turned away as too large.
  send(std::string(20000, ' '));
  ASSERT_TRUE(eventually([&] {
    return training(port)["events"]["rejected"]["too_large"] == 1;
  })) << training(port).dump();
}

TEST_F(TrainingAgentTest, JobsOverTheLimitAreTurnedAwayAndCounted) {
  config_.training_limits.max_jobs = 2;
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  for (const char* job : {"a", "b", "c", "a"}) {
    send(fmt::format(R"({{"event":"step","job":"{}","step":1,"duration_s":0.1}})", job));
  }
  ASSERT_TRUE(eventually([&] { return received(port) == 4; }));
  const auto t = training(port);
  EXPECT_EQ(t["jobs"].size(), 2u);
  EXPECT_EQ(t["events"]["rejected"]["too_many_jobs"], 1);
  EXPECT_THAT(metric_lines(port, "training_batches_total"),
              ::testing::ElementsAre(HasSubstr("training_job=\"a\",rank=\"0\"") , HasSubstr("training_job=\"b\"")));
  EXPECT_THAT(metric_lines(port, "training_batches_total")[0], ::testing::EndsWith(" 2"));
}

TEST_F(TrainingAgentTest, EpochsGiveAllocatorSeriesMemoryNotReleasedAndAVerdict) {
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  tick(port, 3);
  const double gib = 1024.0 * 1024 * 1024;
  for (int e = 0; e < 4; ++e) {
    // Each epoch starts holding 0.5 GiB more than the one before: the last epoch's tensors kept.
    send(fmt::format(R"({{"event":"epoch_start","job":"leaky","rank":0,"gpu":1,"epoch":{},"allocated_bytes":{},"reserved_bytes":{}}})",
                     e, (10 + 0.5 * e) * gib, 16 * gib));
    ASSERT_TRUE(eventually([&] { return received(port) == 2 * e + 1; }));
    tick(port, 5);
    send(fmt::format(R"({{"event":"epoch_end","job":"leaky","rank":0,"gpu":1,"epoch":{},"loss":{},"allocated_bytes":{},"reserved_bytes":{},"peak_allocated_bytes":{}}})",
                     e, 1.5 - 0.1 * e, (12 + 0.5 * e) * gib, 16 * gib, 14 * gib));
    ASSERT_TRUE(eventually([&] { return received(port) == 2 * e + 2; }));
    tick(port, 2);
  }
  const auto job = training(port)["jobs"].at(0);
  ASSERT_EQ(job["memory_not_released"].size(), 1u) << job.dump();
  EXPECT_EQ(job["memory_not_released"][0]["growth_bytes"], 1.5 * gib);
  const auto rank = job["ranks"].at(0);
  EXPECT_EQ(rank["epoch"], 3);
  EXPECT_EQ(rank["last_epoch"]["epoch"], 3);
  ASSERT_TRUE(eventually([&] { return !training(port)["jobs"][0]["ranks"][0]["last_epoch"]["verdict"].is_null(); }));
  // GPU 1 of the straggler node trains at full speed through the epoch.
  EXPECT_EQ(training(port)["jobs"][0]["ranks"][0]["last_epoch"]["verdict"], "compute_bound");
  EXPECT_THAT(metric_lines(port, "gpuscope_training_epoch_verdict_info"),
              ::testing::ElementsAre(HasSubstr(R"(epoch="3",verdict="compute_bound"} 1)")));
  EXPECT_THAT(metric_lines(port, "training_gpu_memory_gb"),
              ::testing::ElementsAre(HasSubstr(fmt::format(R"(gpu_id="1"}} {})", 13.5 * gib / 1e9))));
  EXPECT_THAT(metric_lines(port, "training_allocator_fragmentation_bytes"),
              ::testing::ElementsAre(::testing::EndsWith(fmt::format(" {}", 2.5 * gib))));
  EXPECT_THAT(metric_lines(port, "gpuscope_training_memory_not_released_bytes"),
              ::testing::ElementsAre(HasSubstr(R"(rank="0"} 1610612736)")));
  EXPECT_THAT(metric_lines(port, "training_epoch_loss"), ::testing::ElementsAre(::testing::EndsWith(" 1.2")));
}

TEST_F(TrainingAgentTest, SummaryGivesTimeWeightedFiguresAndTheVerdictOverASpan) {
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  const std::int64_t start_ms = clock_.unix_ms();
  tick(port, 20);
  const std::int64_t end_ms = clock_.unix_ms();
  auto r = e2e::http_get(port, fmt::format("/api/v1/summary?start={:.3f}&end={:.3f}&gpu=3&gpu=0", start_ms / 1000.0,
                                           end_ms / 1000.0));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto gpus = nlohmann::json::parse(r.body)["data"]["gpus"];
  ASSERT_EQ(gpus.size(), 2u) << r.body;
  EXPECT_EQ(gpus[0]["gpu"], 0);
  EXPECT_EQ(gpus[1]["gpu"], 3);
  EXPECT_EQ(gpus[1]["readings"], 20);
  for (const char* q : {"utilization_percent", "sm_active", "tensor_active", "memory_used_mib", "power_watts",
                        "temperature_celsius"}) {
    ASSERT_TRUE(gpus[1].contains(q)) << q;
    EXPECT_LE(gpus[1][q]["min"].get<double>(), gpus[1][q]["mean"].get<double>()) << q;
    EXPECT_LE(gpus[1][q]["mean"].get<double>(), gpus[1][q]["max"].get<double>()) << q;
  }
  // The slowed GPU draws less power than its full-speed peer.
  EXPECT_LT(gpus[1]["power_watts"]["mean"].get<double>(), gpus[0]["power_watts"]["mean"].get<double>());
  EXPECT_FALSE(gpus[1]["verdict"]["verdict"].get<std::string>().empty());

  // A pid on no GPU (this test's) has nothing to summarize; the simulated trainers are pids 3900-3907, one a GPU.
  auto by_pid = [&](int pid) {
    return nlohmann::json::parse(e2e::http_get(port, fmt::format("/api/v1/summary?start={:.3f}&end={:.3f}&pid={}",
                                                                   start_ms / 1000.0, end_ms / 1000.0, pid))
                                     .body)["data"]["gpus"];
  };
  EXPECT_TRUE(by_pid(getpid()).empty());
  ASSERT_EQ(by_pid(3903).size(), 1u);
  EXPECT_EQ(by_pid(3903)[0]["gpu"], 3);

  EXPECT_EQ(e2e::http_get(port, "/api/v1/summary?start=10").status, 400);
  EXPECT_EQ(e2e::http_get(port, "/api/v1/summary?start=20&end=10").status, 400);
  EXPECT_EQ(e2e::http_get(port, "/api/v1/summary?start=0&end=200000").status, 400);
  EXPECT_EQ(e2e::http_get(port, "/api/v1/summary?start=10&end=20&pid=x").status, 400);
}

TEST_F(TrainingAgentTest, TheSocketIsGroupWritableReplacesAStaleFileAndIsRemovedAtStop) {
  // A socket file left by a killed agent: nobody receives on it.
  {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  struct stat st {};
  ASSERT_EQ(::stat(socket_path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);

  // A second agent naming the same live socket does not start.
  AgentConfig second = config_;
  second.data_dir = (dir_ / "data2").string();
  auto loaded = Agent::load(second, log_);
  ASSERT_TRUE(loaded);
  setenv("GPUSCOPE_SIM_TIME", "0", 1);
  nvml::BackendOptions o;
  o.simulate = true;
  o.library_path = GPUSCOPE_SIM_LIB;
  auto backend = nvml::NvmlBackend::open(o);
  unsetenv("GPUSCOPE_SIM_TIME");
  ASSERT_TRUE(backend);
  auto started = (*loaded)->start(std::move(*backend), [] { return false; });
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().lines.at(0), "--events-socket: events socket " + socket_path_ + ": in use by another process");
  loaded->reset();

  agent->stop();
  EXPECT_FALSE(fs::exists(socket_path_));
}

TEST(EventSocketPath, FollowsRuntimeDirectoryThenRunThenXdg) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_EQ(default_events_socket_path(env({{"RUNTIME_DIRECTORY", "/run/gpuscope:/run/other"}})),
            "/run/gpuscope/events.sock");
  const auto temp = fs::temp_directory_path() / ("gpuscope-xdg-" + std::to_string(getpid()));
  fs::create_directories(temp);
  const std::string got = default_events_socket_path(env({{"XDG_RUNTIME_DIR", temp.string()}}));
  if (::access("/run", W_OK) == 0) {
    EXPECT_EQ(got, "/run/gpuscope/events.sock") << "root: /run first";
  } else {
    EXPECT_EQ(got, temp.string() + "/gpuscope/events.sock");
    EXPECT_TRUE(fs::is_directory(temp / "gpuscope"));
  }
  fs::remove_all(temp);
  EXPECT_EQ(parse_group("no-such-group-gpuscope").error(), "--events-group: no group \"no-such-group-gpuscope\" on this system");
}

}  // namespace training_agent_test
}  // namespace gpuscope::agent
