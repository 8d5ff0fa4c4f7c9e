// The C++ training client (clients/cpp/gpuscope_events.h) against a stand-in for the agent: a Unix
// datagram socket bound in a temporary directory. What arrives is read back with nlohmann::json, so every
// event must be valid JSON with the protocol's fields; without an agent, or with one that does not read,
// every call must still return at once and count what it dropped. A full agent queue defers events: they
// arrive later, once each and in order, as JSON lines in one datagram that the agent's own intake takes.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/training_event.h"
#include "analysis/training_intake.h"
#include "analysis/training_jobs.h"
#include "gpuscope_events.h"

// Named, not anonymous: the sanitizer build compiles this file in one unit with its neighbours.
namespace gpuscope::events::client_test {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

// A directory of its own per test, removed with what is in it.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern = (fs::temp_directory_path() / "gpuscope-events-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(std::string_view name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// The agent's end: a bound datagram socket that reads only when asked to.
class AgentSocket {
 public:
  explicit AgentSocket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      ADD_FAILURE() << "bind " << path_ << ": " << std::strerror(errno);
    }
  }
  AgentSocket(const AgentSocket&) = delete;
  AgentSocket& operator=(const AgentSocket&) = delete;
  ~AgentSocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }

  // The next datagram, or nothing within the timeout.
  std::optional<std::string> receive(std::chrono::milliseconds timeout = 2s) {
    pollfd readable{fd_, POLLIN, 0};
    if (::poll(&readable, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    std::string datagram(65536, '\0');
    const ssize_t n = ::recv(fd_, datagram.data(), datagram.size(), 0);
    if (n < 0) return std::nullopt;
    datagram.resize(static_cast<std::size_t>(n));
    return datagram;
  }

  // The next event, parsed; null (and a failure) when none came or it is not JSON.
  json receive_event() {
    const std::optional<std::string> datagram = receive();
    if (!datagram) {
      ADD_FAILURE() << "no event arrived";
      return nullptr;
    }
    json event = json::parse(*datagram, nullptr, /*allow_exceptions=*/false);
    if (event.is_discarded()) ADD_FAILURE() << "not JSON: " << *datagram;
    return event;
  }

  bool nothing_arrives(std::chrono::milliseconds wait = 50ms) { return !receive(wait).has_value(); }

  // Every datagram queued now (the agent catches up).
  std::vector<std::string> receive_all() {
    std::vector<std::string> datagrams;
    while (std::optional<std::string> datagram = receive(50ms)) datagrams.push_back(std::move(*datagram));
    return datagrams;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// Sets (or unsets) an environment variable for one test and puts back what was there.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;
  ~ScopedEnvironment() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The lines of a datagram (JSON lines: one event a line, the last without a newline).
std::vector<std::string> lines_of(std::string_view datagram) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin <= datagram.size()) {
    const std::size_t end = std::min(datagram.find('\n', begin), datagram.size());
    lines.emplace_back(datagram.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

// How many datagrams the kernel queues on a Unix datagram socket, whatever its buffer size.
std::uint64_t max_dgram_qlen() {
  std::ifstream file("/proc/sys/net/unix/max_dgram_qlen");
  std::uint64_t qlen = 10;  // the kernel's default
  file >> qlen;
  return qlen;
}

// Takes `datagram` as the agent does (its intake: JSON lines, each parsed and applied) and says how many
// events it accepted; a line it turns away is a failure.
std::size_t agent_accepts(std::string_view datagram) {
  analysis::TrainingJobs jobs;
  analysis::TrainingIntake intake(jobs);
  analysis::TrainingEventParser parser;
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const analysis::IntakeResult result =
      intake.take(datagram, now_ms, analysis::EventTransport::kSocket, std::nullopt, parser);
  EXPECT_EQ(result.rejected, 0U) << (result.errors.empty() ? std::string() : result.errors.front());
  return result.accepted;
}

// Steps 0, 1, ... until the agent's queue (not read) refuses one and the client defers it; returns how
// many steps were sent, the deferred one included. The queue holds net.unix.max_dgram_qlen datagrams
// (and one more), fewer only when the sender's socket buffer runs out first.
std::uint64_t fill_the_queue(Client& client) {
  const std::uint64_t limit = max_dgram_qlen() + 1;
  std::uint64_t step = 0;
  while (client.stats().pending == 0 && step <= limit) client.step(step++, 0.5, 1.0);
  EXPECT_EQ(client.stats().pending, 1U) << "the queue took " << step << " datagrams, max_dgram_qlen is "
                                        << max_dgram_qlen();
  EXPECT_EQ(client.stats().sent, step - 1);
  return step;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Each test gets an agent socket named by $GPUSCOPE_EVENTS_SOCKET, and none of torchrun's variables.
class CppEventsClient : public ::testing::Test {
 protected:
  ScratchDirectory directory_;
  std::string socket_path_ = directory_.file("events.sock");
  ScopedEnvironment socket_variable_{"GPUSCOPE_EVENTS_SOCKET", socket_path_.c_str()};
  ScopedEnvironment rank_{"RANK", nullptr};
  ScopedEnvironment world_size_{"WORLD_SIZE", nullptr};
  ScopedEnvironment local_rank_{"LOCAL_RANK", nullptr};
};

TEST_F(CppEventsClient, StepEventCarriesEveryFieldOfTheProtocol) {
  AgentSocket agent(socket_path_);
  ClientOptions options;
  options.rank = 3;
  options.world_size = 4;
  options.local_rank = 1;
  options.gpu_index = 5;
  Client client("llama-ft", options);
  EXPECT_TRUE(client.connected());

  const double before = unix_now();
  client.step(120, 0.512, 2.31, {{"lr", 3e-4}, {"grad_norm", 1.25}});
  const double after = unix_now();

  const json event = agent.receive_event();
  EXPECT_EQ(event["event"], "step");
  EXPECT_EQ(event["job"], "llama-ft");
  EXPECT_EQ(event["rank"], 3);
  EXPECT_EQ(event["world_size"], 4);
  EXPECT_EQ(event["local_rank"], 1);
  EXPECT_EQ(event["gpu"], 5);
  EXPECT_EQ(event["step"], 120);
  EXPECT_EQ(event["duration_s"], 0.512);
  EXPECT_EQ(event["loss"], 2.31);
  EXPECT_EQ(event["scalars"], (json{{"lr", 3e-4}, {"grad_norm", 1.25}}));
  ASSERT_TRUE(event["time"].is_number_float());
  EXPECT_GE(event["time"].get<double>(), before - 1e-6);
  EXPECT_LE(event["time"].get<double>(), after + 1e-6);
  EXPECT_EQ(event.size(), 11U) << event.dump();  // nothing else, in particular no pid: the kernel says it
  EXPECT_EQ(client.stats().sent, 1U);
  EXPECT_EQ(client.dropped(), 0U);
}

TEST_F(CppEventsClient, ScalarsComeFromAnyContiguousContainer) {
  AgentSocket agent(socket_path_);
  Client client("job");
  const std::vector<Scalar> from_vector{{"lr", 0.5}, {"tokens_per_s", 12345}};
  client.step(1, 0.25, std::nullopt, from_vector);
  const std::array<Scalar, 1> from_array{{{"lr", 0.25}}};
  client.step(2, 0.25, {}, from_array);

  EXPECT_EQ(agent.receive_event()["scalars"], (json{{"lr", 0.5}, {"tokens_per_s", 12345}}));
  EXPECT_EQ(agent.receive_event()["scalars"], (json{{"lr", 0.25}}));
}

TEST_F(CppEventsClient, EpochEventsCarryTheirEpochLossAndAllocatorBytes) {
  AgentSocket agent(socket_path_);
  Client client("llama-ft");
  client.epoch_start(2, {std::uint64_t{1} << 30, std::uint64_t{3} << 30, std::nullopt});
  client.epoch_end(2, 2.05, {21474836480ULL, 32212254720ULL, 30064771072ULL});
  client.epoch_end(3);

  const json start = agent.receive_event();
  EXPECT_EQ(start["event"], "epoch_start");
  EXPECT_EQ(start["epoch"], 2);
  EXPECT_EQ(start["allocated_bytes"], 1ULL << 30);
  EXPECT_EQ(start["reserved_bytes"], 3ULL << 30);
  EXPECT_FALSE(start.contains("peak_allocated_bytes"));
  EXPECT_FALSE(start.contains("loss"));

  const json end = agent.receive_event();
  EXPECT_EQ(end["event"], "epoch_end");
  EXPECT_EQ(end["epoch"], 2);
  EXPECT_EQ(end["loss"], 2.05);
  EXPECT_EQ(end["allocated_bytes"], 21474836480ULL);
  EXPECT_EQ(end["reserved_bytes"], 32212254720ULL);
  EXPECT_EQ(end["peak_allocated_bytes"], 30064771072ULL);

  const json bare = agent.receive_event();
  EXPECT_EQ(bare["event"], "epoch_end");
  EXPECT_EQ(bare["epoch"], 3);
  for (const char* absent : {"loss", "allocated_bytes", "reserved_bytes", "peak_allocated_bytes"}) {
    EXPECT_FALSE(bare.contains(absent)) << absent;
  }
}

TEST_F(CppEventsClient, FieldsNotGivenAreLeftOut) {
  AgentSocket agent(socket_path_);
  ClientOptions options;
  options.send_time = false;
  Client client("job", options);
  client.step(0, 1.0);

  EXPECT_EQ(agent.receive_event(), (json{{"event", "step"}, {"job", "job"}, {"rank", 0}, {"step", 0}, {"duration_s", 1.0}}));
}

TEST_F(CppEventsClient, AGpuNamedByUuidIsSentAsAString) {
  AgentSocket agent(socket_path_);
  ClientOptions options;
  options.gpu_index = 1;  // the UUID wins
  options.gpu_uuid = "GPU-5d4b7c1e-0c3a-4f4e-9c43-1d2e3f405162";
  Client client("job", options);
  client.epoch_start(0);

  EXPECT_EQ(agent.receive_event()["gpu"], "GPU-5d4b7c1e-0c3a-4f4e-9c43-1d2e3f405162");
}

TEST_F(CppEventsClient, StepTimerSendsTheMeasuredDurationWhenItGoesOutOfScope) {
  AgentSocket agent(socket_path_);
  Client client("job");
  {
    auto timer = client.time_step(7);
    std::this_thread::sleep_for(20ms);
    timer.set_loss(1.5);
    EXPECT_TRUE(agent.nothing_arrives(1ms)) << "sent before the step ended";
  }
  const json event = agent.receive_event();
  EXPECT_EQ(event["event"], "step");
  EXPECT_EQ(event["step"], 7);
  EXPECT_EQ(event["loss"], 1.5);
  EXPECT_GE(event["duration_s"].get<double>(), 0.020);
  EXPECT_LT(event["duration_s"].get<double>(), 5.0);
}

TEST_F(CppEventsClient, StepTimerSendsOnceWhenMovedOrStoppedAndNothingWhenCancelled) {
  AgentSocket agent(socket_path_);
  Client client("job");
  {
    auto first = client.time_step(1);
    StepTimer moved = std::move(first);  // the moved-from timer sends nothing
  }
  {
    auto stopped = client.time_step(2);
    stopped.stop();
    stopped.stop();
  }
  {
    auto cancelled = client.time_step(3);
    cancelled.cancel();
  }
  EXPECT_EQ(agent.receive_event()["step"], 1);
  EXPECT_EQ(agent.receive_event()["step"], 2);
  EXPECT_TRUE(agent.nothing_arrives());
  EXPECT_EQ(client.stats().sent, 2U);
}

TEST_F(CppEventsClient, HostileJobNamesAreEscapedIntoValidJson) {
  AgentSocket agent(socket_path_);
  std::string every_control_character;
  for (char c = 1; c < 0x20; ++c) every_control_character += c;
  const std::vector<std::string> names = {
      R"(quote " inside)",
      R"(back\slash and \" both)",
      R"(","rank":99,"x":")",  // an injection attempt stays inside the string
      "new\nline\ttab\rreturn\bback\fform",
      every_control_character,
      "del\x7f",
      "训练-é-🚀",  // UTF-8 passes through as it is
      "</script>",
  };
  for (const std::string& name : names) {
    Client client(name);
    client.step(1, 0.5);
    const json event = agent.receive_event();
    EXPECT_EQ(event["job"], name);
    EXPECT_EQ(event["rank"], 0);
  }

  // Bytes that are not UTF-8 (a lone continuation byte, a cut sequence, an overlong '/', a surrogate,
  // past U+10FFFF) become U+FFFD, one for each byte: the agent's parser always gets valid JSON.
  Client client("a\x80" "b\xE2\x82" "c\xC0\xAF" "d\xED\xA0\x80" "e\xF4\x90\x80\x80");
  client.step(1, 0.5);
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(agent.receive_event()["job"], "a" + r + "b" + r + r + "c" + r + r + "d" + r + r + r + "e" + r + r + r + r);
}

TEST_F(CppEventsClient, ScalarNamesAreEscapedToo) {
  AgentSocket agent(socket_path_);
  Client client("job");
  client.step(1, 0.5, std::nullopt, {{"a\"b\\c\n", 1.0}});
  EXPECT_EQ(agent.receive_event()["scalars"], (json{{"a\"b\\c\n", 1.0}}));
}

TEST_F(CppEventsClient, NumbersReadBackExactly) {
  AgentSocket agent(socket_path_);
  Client client("job");
  for (double loss : {0.1, 1e-7, 123456.789, 2.0 / 3.0, 6.02214076e23, -0.0, -4.25}) {
    client.step(1, 0.5, loss);
    const json event = agent.receive_event();
    EXPECT_EQ(event["loss"].get<double>(), loss);
  }
  client.step(std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<double>::min());
  const json event = agent.receive_event();
  EXPECT_EQ(event["step"].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(event["duration_s"].get<double>(), std::numeric_limits<double>::min());
}

// The formatting for standard libraries without std::to_chars(double): 9 significant digits, valid JSON.
TEST(CppEventsClientPortableDouble, WritesNineSignificantDigitsAsAJsonNumber) {
  for (double v : {0.512, 3e-4, 1.0, 0.1, 123456789.0, 9.9999999999, 99999999.95, 1e-300, 1e300, -7.25, 2.0 / 3.0,
                   6.02214076e23, 1e-5}) {
    char text[32];
    const std::string written(text, detail::format_double_portable(text, v));
    const json parsed = json::parse(written, nullptr, false);
    ASSERT_TRUE(parsed.is_number()) << written;
    EXPECT_NEAR(parsed.get<double>(), v, std::abs(v) * 1e-8) << written;
  }
  char text[32];
  EXPECT_EQ(std::string(text, detail::format_double_portable(text, 0.0)), "0");
  EXPECT_EQ(std::string(text, detail::format_double_portable(text, -0.5)), "-5e-1");
  EXPECT_EQ(std::string(text, detail::format_double_portable(text, 1234.5)), "1.2345e3");
}

TEST_F(CppEventsClient, NonFiniteLossAndScalarsAreLeftOut) {
  AgentSocket agent(socket_path_);
  Client client("job");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  client.step(1, 0.5, nan, {{"lr", 1e-3}, {"grad_norm", inf}, {"other", -inf}, {"bad", nan}});
  client.step(2, 0.5, inf, {{"grad_norm", nan}});
  client.epoch_end(0, -inf);

  const json first = agent.receive_event();
  EXPECT_FALSE(first.contains("loss"));
  EXPECT_EQ(first["scalars"], (json{{"lr", 1e-3}}));
  const json second = agent.receive_event();
  EXPECT_FALSE(second.contains("loss"));
  EXPECT_FALSE(second.contains("scalars"));  // not an empty object
  const json epoch = agent.receive_event();
  EXPECT_FALSE(epoch.contains("loss"));
  EXPECT_EQ(client.dropped(), 0U);
}

TEST_F(CppEventsClient, AStepWhoseDurationIsNotFiniteIsDroppedAndCounted) {
  AgentSocket agent(socket_path_);
  Client client("job");
  client.step(1, std::numeric_limits<double>::quiet_NaN());
  client.step(2, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(agent.nothing_arrives());
  EXPECT_EQ(client.stats().not_finite, 2U);
  EXPECT_EQ(client.dropped(), 2U);
}

TEST_F(CppEventsClient, RankWorldSizeAndLocalRankComeFromTorchrunsEnvironment) {
  AgentSocket agent(socket_path_);
  ScopedEnvironment rank("RANK", "5");
  ScopedEnvironment world_size("WORLD_SIZE", "8");
  ScopedEnvironment local_rank("LOCAL_RANK", "1");
  Client client("job");
  client.step(1, 0.5);
  const json event = agent.receive_event();
  EXPECT_EQ(event["rank"], 5);
  EXPECT_EQ(event["world_size"], 8);
  EXPECT_EQ(event["local_rank"], 1);
}

TEST_F(CppEventsClient, ExplicitRanksWinOverTheEnvironment) {
  AgentSocket agent(socket_path_);
  ScopedEnvironment rank("RANK", "5");
  ScopedEnvironment world_size("WORLD_SIZE", "8");
  ClientOptions options;
  options.rank = 2;
  Client client("job", options);
  client.step(1, 0.5);
  const json event = agent.receive_event();
  EXPECT_EQ(event["rank"], 2);
  EXPECT_EQ(event["world_size"], 8);  // the one not given still comes from the environment
}

TEST_F(CppEventsClient, AMalformedRankInTheEnvironmentIsIgnored) {
  AgentSocket agent(socket_path_);
  ScopedEnvironment rank("RANK", "3x");
  ScopedEnvironment world_size("WORLD_SIZE", "");
  ScopedEnvironment local_rank("LOCAL_RANK", "-1");
  Client client("job");
  client.step(1, 0.5);
  const json event = agent.receive_event();
  EXPECT_EQ(event["rank"], 0);
  EXPECT_FALSE(event.contains("world_size"));
  EXPECT_FALSE(event.contains("local_rank"));
}

TEST_F(CppEventsClient, WithoutAnAgentEventsAreDroppedAndCountedAndNoReconnectIsAttemptedPerEvent) {
  ClientOptions options;
  options.socket_path = directory_.file("nobody-listens.sock");  // that path only: no fallback
  Client client("job", options);
  EXPECT_FALSE(client.connected());

  constexpr int kEvents = 100000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kEvents; ++i) client.step(static_cast<std::uint64_t>(i), 0.5, 1.0, {{"lr", 1e-3}});
  client.epoch_start(0);
  client.epoch_end(0, 1.0);
  const auto elapsed = std::chrono::steady_clock::now() - start;

  const ClientStats stats = client.stats();
  EXPECT_EQ(stats.sent, 0U);
  EXPECT_EQ(stats.unreachable, kEvents + 2U);
  EXPECT_EQ(client.dropped(), kEvents + 2U);
  // One attempt at construction, then at most one a second.
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
  EXPECT_LE(stats.connect_attempts, 2U + static_cast<std::uint64_t>(seconds));
  EXPECT_LT(elapsed, 2s);
}

TEST_F(CppEventsClient, AStaleSocketFileWithNoAgentBehindItCountsAsNoAgent) {
  { AgentSocket died(socket_path_); }  // as if the agent died without removing its socket file
  {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    ::close(fd);  // the file stays; connect() to it is refused
  }
  ClientOptions options;
  options.socket_path = socket_path_;
  Client client("job", options);
  client.step(1, 0.5);
  EXPECT_FALSE(client.connected());
  EXPECT_EQ(client.stats().unreachable, 1U);
  EXPECT_EQ(client.stats().connect_attempts, 1U);
}

TEST_F(CppEventsClient, AnAgentThatStartsLaterIsFoundAfterTheReconnectInterval) {
  ClientOptions options;
  options.socket_path = socket_path_;  // that path only: not an agent that runs on this host
  options.reconnect_interval = 50ms;
  Client client("job", options);
  client.step(1, 0.5);
  EXPECT_EQ(client.stats().unreachable, 1U);

  AgentSocket agent(socket_path_);
  client.step(2, 0.5);  // within the interval: not tried yet
  std::this_thread::sleep_for(60ms);
  client.step(3, 0.5);
  EXPECT_EQ(agent.receive_event()["step"], 3);
  EXPECT_TRUE(client.connected());
  EXPECT_EQ(client.stats().sent, 1U);
  EXPECT_EQ(client.stats().unreachable, 2U);
}

TEST_F(CppEventsClient, ARestartedAgentIsFoundAgainWithoutLosingTheEvent) {
  auto first = std::make_unique<AgentSocket>(socket_path_);
  ClientOptions options;
  options.reconnect_interval = 20ms;
  Client client("job", options);
  client.step(1, 0.5);
  EXPECT_EQ(first->receive_event()["step"], 1);
  first.reset();
  AgentSocket second(socket_path_);
  std::this_thread::sleep_for(30ms);
  client.step(2, 0.5);  // refused by the old socket, then sent to the new one
  EXPECT_EQ(second.receive_event()["step"], 2);
  EXPECT_EQ(client.stats().sent, 2U);
  EXPECT_EQ(client.dropped(), 0U);
}

TEST_F(CppEventsClient, AnAgentThatNeverReadsCostsBoundedMemoryAndNeverBlocks) {
  AgentSocket agent(socket_path_);  // never reads
  Client client("job");
  constexpr std::uint64_t kEvents = 20000;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < kEvents; ++i) client.step(i, 0.5, 1.0);
  const auto elapsed = std::chrono::steady_clock::now() - start;

  const ClientStats stats = client.stats();
  EXPECT_GT(stats.sent, 0U);
  EXPECT_GT(stats.buffer_full, 0U);
  EXPECT_GT(stats.pending, 0U);
  EXPECT_LT(stats.pending, kMaxPendingBytes / 64);  // each of these events is over 64 bytes
  EXPECT_EQ(stats.deferred, 0U);                    // nothing deferred could go out
  EXPECT_EQ(stats.sent + stats.buffer_full + stats.pending, kEvents);
  EXPECT_EQ(stats.unreachable, 0U);
  EXPECT_LT(elapsed, 5s);
  EXPECT_TRUE(client.connected());
  // The queued events are whole.
  EXPECT_EQ(agent.receive_event()["step"], 0);
}

TEST_F(CppEventsClient, AFullQueueDefersEventsThatArriveOnceEachInOrderWithTheNextEvent) {
  AgentSocket agent(socket_path_);  // not read while the client sends
  ClientOptions options;
  options.send_time = false;
  Client client("job", options);
  const std::uint64_t queued = fill_the_queue(client) - 1;
  EXPECT_LE(queued, max_dgram_qlen() + 1);

  // More events while the queue is full: all of them wait, a few hundred bytes, within the bound.
  std::vector<std::string> expected;  // "step N" / "epoch_end N", in the order sent
  std::uint64_t step = queued;
  for (std::uint64_t i = 0; i <= queued; ++i) expected.push_back("step " + std::to_string(i));
  for (int i = 0; i < 6; ++i) {
    client.step(++step, 0.5, 1.0, {{"lr", 1e-3}});
    expected.push_back("step " + std::to_string(step));
  }
  client.epoch_end(0, 2.0, {1, 2, 3});
  expected.push_back("epoch_end 0");
  client.step(++step, 0.5);
  expected.push_back("step " + std::to_string(step));
  const std::uint64_t deferred = 1 + 6 + 1 + 1;
  EXPECT_EQ(client.stats().pending, deferred);
  EXPECT_EQ(client.stats().buffer_full, 0U);
  EXPECT_EQ(client.stats().sent, queued);

  // The agent catches up; the next event carries the deferred ones, in one datagram.
  std::vector<std::string> datagrams = agent.receive_all();
  EXPECT_EQ(datagrams.size(), queued);
  client.epoch_start(1);
  expected.push_back("epoch_start 1");
  const std::vector<std::string> later = agent.receive_all();
  ASSERT_EQ(later.size(), 1U);
  EXPECT_EQ(lines_of(later.front()).size(), deferred + 1);
  EXPECT_NE(later.front().back(), '\n');
  EXPECT_LE(later.front().size(), kMaxPendingBytes + kMaxEventBytes);
  EXPECT_EQ(agent_accepts(later.front()), deferred + 1);
  datagrams.push_back(later.front());

  std::vector<std::string> arrived;
  for (const std::string& datagram : datagrams) {
    for (const std::string& line : lines_of(datagram)) {
      const json event = json::parse(line, nullptr, /*allow_exceptions=*/false);
      ASSERT_FALSE(event.is_discarded()) << line;
      ASSERT_TRUE(event.contains("event")) << line;
      const std::string kind = event["event"];
      arrived.push_back(kind + " " + std::to_string(event[kind == "step" ? "step" : "epoch"].get<std::uint64_t>()));
    }
  }
  EXPECT_EQ(arrived, expected);  // each once, in order

  const ClientStats stats = client.stats();
  EXPECT_EQ(stats.sent, expected.size());
  EXPECT_EQ(stats.deferred, deferred);
  EXPECT_EQ(stats.pending, 0U);
  EXPECT_EQ(stats.buffer_full, 0U);
  EXPECT_EQ(stats.dropped(), 0U);
}

TEST_F(CppEventsClient, PastTheBoundTheOldestDeferredEventsAreDroppedAndCounted) {
  AgentSocket agent(socket_path_);
  ClientOptions options;
  options.send_time = false;
  Client client("job", options);
  std::uint64_t step = fill_the_queue(client);
  const std::uint64_t queued = step - 1;
  constexpr std::uint64_t kMore = 200;  // some 12 KiB of events: three times the bound
  for (std::uint64_t i = 0; i < kMore; ++i) client.step(step++, 0.5, 1.0);

  const ClientStats full = client.stats();
  const std::uint64_t refused = kMore + 1;
  EXPECT_GT(full.pending, 0U);
  EXPECT_LT(full.pending, refused);
  EXPECT_EQ(full.buffer_full, refused - full.pending);
  EXPECT_EQ(full.sent, queued);

  EXPECT_EQ(agent.receive_all().size(), queued);
  EXPECT_TRUE(client.flush());
  const std::optional<std::string> datagram = agent.receive();
  ASSERT_TRUE(datagram.has_value());
  const std::vector<std::string> lines = lines_of(*datagram);
  ASSERT_EQ(lines.size(), full.pending);
  EXPECT_EQ(agent_accepts(*datagram), full.pending);
  // The newest ones, in order, up to the last step sent.
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(json::parse(lines[i])["step"].get<std::uint64_t>(), step - lines.size() + i);
  }
  // Within the bound (each line with its newline), and the next older one would not have fit.
  EXPECT_LE(datagram->size() + 1, kMaxPendingBytes);
  EXPECT_GT(datagram->size() + 1 + lines.front().size(), kMaxPendingBytes);  // an older line is at most 1 byte shorter

  const ClientStats stats = client.stats();
  EXPECT_EQ(stats.sent, queued + full.pending);
  EXPECT_EQ(stats.deferred, full.pending);
  EXPECT_EQ(stats.buffer_full, refused - full.pending);
  EXPECT_EQ(stats.pending, 0U);
  EXPECT_EQ(stats.sent + stats.dropped(), step);
}

TEST_F(CppEventsClient, FlushSendsThePendingEventsAloneAndKeepsThemWhileTheQueueIsFull) {
  AgentSocket agent(socket_path_);
  Client client("job");
  EXPECT_TRUE(client.flush());  // nothing pending
  std::uint64_t step = fill_the_queue(client);
  client.step(step++, 0.5);
  client.step(step++, 0.5);

  EXPECT_FALSE(client.flush());  // still full: kept, not waited for
  EXPECT_EQ(client.stats().pending, 3U);
  EXPECT_EQ(client.stats().dropped(), 0U);

  EXPECT_EQ(agent.receive_all().size(), step - 3);
  EXPECT_TRUE(client.flush());
  const std::optional<std::string> datagram = agent.receive();
  ASSERT_TRUE(datagram.has_value());
  const std::vector<std::string> lines = lines_of(*datagram);
  ASSERT_EQ(lines.size(), 3U);
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(json::parse(lines[i])["step"], step - 3 + i);
  EXPECT_EQ(agent_accepts(*datagram), 3U);
  EXPECT_TRUE(client.flush());
  EXPECT_TRUE(agent.nothing_arrives());

  const ClientStats stats = client.stats();
  EXPECT_EQ(stats.sent, step);
  EXPECT_EQ(stats.deferred, 3U);
  EXPECT_EQ(stats.pending, 0U);
  EXPECT_EQ(stats.dropped(), 0U);
}

TEST_F(CppEventsClient, TheDestructorTriesOnceToSendWhatIsPending) {
  AgentSocket agent(socket_path_);
  std::uint64_t steps = 0;
  {
    Client client("job");
    steps = fill_the_queue(client);
    client.step(steps++, 0.5);
    EXPECT_EQ(agent.receive_all().size(), steps - 2);
  }
  const std::optional<std::string> datagram = agent.receive();
  ASSERT_TRUE(datagram.has_value());
  const std::vector<std::string> lines = lines_of(*datagram);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(json::parse(lines[1])["step"], steps - 1);
}

TEST_F(CppEventsClient, PendingEventsAreDroppedAsUnreachableWhenTheAgentIsGone) {
  for (const bool by_flush : {false, true}) {
    SCOPED_TRACE(by_flush ? "found gone by flush()" : "found gone by the next event");
    auto agent = std::make_unique<AgentSocket>(socket_path_);
    ClientOptions options;
    options.reconnect_interval = std::chrono::hours(1);  // no reconnect within the test
    Client client("job", options);
    std::uint64_t step = fill_the_queue(client);
    client.step(step++, 0.5);
    client.step(step++, 0.5);
    ASSERT_EQ(client.stats().pending, 3U);

    agent.reset();  // the agent stops: its socket closes, and the events in its queue go with it
    if (by_flush) {
      EXPECT_TRUE(client.flush());
    } else {
      client.step(step++, 0.5);
    }
    const ClientStats stats = client.stats();
    EXPECT_FALSE(client.connected());
    EXPECT_EQ(stats.pending, 0U);
    EXPECT_EQ(stats.unreachable, by_flush ? 3U : 4U);
    EXPECT_EQ(stats.deferred, 0U);
    EXPECT_EQ(stats.buffer_full, 0U);
    EXPECT_EQ(stats.sent + stats.dropped(), step);
  }
}
TEST_F(CppEventsClient, EventsOverTheProtocolsLimitAreNotSentAndCounted) {
  AgentSocket agent(socket_path_);
  ClientOptions options;
  options.send_time = false;  // every byte of the event is then known
  const auto event_size = [&](std::size_t job_length) {
    Client client(std::string(job_length, 'j'), options);
    client.step(1, 0.5);
    return client.stats();
  };
  ASSERT_EQ(event_size(1).sent, 1U);
  const std::size_t overhead = agent.receive().value_or("").size() - 1;

  const ClientStats at_limit = event_size(kMaxEventBytes - overhead);
  EXPECT_EQ(at_limit.sent, 1U);
  EXPECT_EQ(agent.receive().value_or("").size(), kMaxEventBytes);

  const ClientStats over = event_size(kMaxEventBytes - overhead + 1);
  EXPECT_EQ(over.sent, 0U);
  EXPECT_EQ(over.too_large, 1U);
  EXPECT_EQ(over.dropped(), 1U);
  EXPECT_TRUE(agent.nothing_arrives());
}

TEST_F(CppEventsClient, TheSocketIsSearchedForInTheOrderOfTheReadme) {
  if (::access(kSystemSocketPath, F_OK) == 0) GTEST_SKIP() << kSystemSocketPath << " exists on this host";
  // $GPUSCOPE_EVENTS_SOCKET names a path where nothing listens: next, /run/gpuscope/events.sock (absent),
  // then $XDG_RUNTIME_DIR/gpuscope/events.sock.
  ScopedEnvironment socket_variable("GPUSCOPE_EVENTS_SOCKET", directory_.file("absent.sock").c_str());
  const std::string runtime_directory = directory_.file("runtime");
  fs::create_directories(runtime_directory + "/gpuscope");
  ScopedEnvironment runtime_variable("XDG_RUNTIME_DIR", runtime_directory.c_str());
  AgentSocket agent(runtime_directory + "/gpuscope/events.sock");
  Client client("job");
  client.step(4, 0.5);
  EXPECT_EQ(agent.receive_event()["step"], 4);
}

TEST_F(CppEventsClient, SeveralThreadsShareOneClientAndEveryEventArrivesWholeAtMostOnce) {
  AgentSocket agent(socket_path_);
  Client client("job");
  std::atomic<bool> sending{true};
  std::vector<json> received;
  std::thread reader([&] {
    while (true) {
      std::optional<std::string> datagram = agent.receive(sending ? 1000ms : 200ms);
      if (!datagram) {
        if (!sending) return;
        continue;
      }
      for (const std::string& line : lines_of(*datagram)) received.push_back(json::parse(line, nullptr, false));
    }
  });
  constexpr int kThreads = 4;
  constexpr int kStepsEach = 500;
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&client, t] {
      for (int i = 0; i < kStepsEach; ++i) {
        client.step(static_cast<std::uint64_t>(t * kStepsEach + i), 0.5, 1.0, {{"thread", static_cast<double>(t)}});
      }
    });
  }
  for (std::thread& sender : senders) sender.join();
  for (int i = 0; i < 100 && !client.flush(); ++i) std::this_thread::sleep_for(10ms);  // the reader catches up
  sending = false;
  reader.join();

  const ClientStats stats = client.stats();
  EXPECT_EQ(stats.pending, 0U);
  EXPECT_EQ(stats.sent + stats.dropped(), static_cast<std::uint64_t>(kThreads * kStepsEach));
  EXPECT_EQ(received.size(), stats.sent);
  std::set<int> steps;
  for (const json& event : received) {
    ASSERT_FALSE(event.is_discarded());
    const auto step = event["step"].get<int>();
    EXPECT_EQ(event["scalars"]["thread"].get<int>(), step / kStepsEach);
    EXPECT_TRUE(steps.insert(step).second) << "step " << step << " arrived twice";
  }
}

TEST_F(CppEventsClient, AForkedChildKeepsSendingOnTheInheritedSocket) {
  AgentSocket agent(socket_path_);
  Client client("job");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    client.step(42, 0.5);
    ::_exit(client.stats().sent == 1 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(agent.receive_event()["step"], 42);
  EXPECT_EQ(client.stats().sent, 0U);  // the child counted its own
}

TEST_F(CppEventsClient, AForkedChildDoesNotSendItsParentsPendingEvents) {
  AgentSocket agent(socket_path_);
  ClientOptions options;
  options.send_time = false;
  Client client("job", options);
  std::uint64_t step = fill_the_queue(client);
  client.step(step++, 0.5);
  const std::uint64_t deferred_from = step - 2;
  EXPECT_EQ(agent.receive_all().size(), deferred_from);  // the queue is empty, the parent's 2 still pending

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const ClientStats before = client.stats();
    client.step(1000, 0.5);  // alone: the 2 pending are the parent's
    const ClientStats after = client.stats();
    const bool ok = before.pending == 0 && after.pending == 0 && after.sent == before.sent + 1 &&
                    after.deferred == before.deferred && client.flush();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::optional<std::string> from_child = agent.receive();
  ASSERT_TRUE(from_child.has_value());
  EXPECT_EQ(lines_of(*from_child).size(), 1U) << *from_child;
  EXPECT_EQ(json::parse(*from_child)["step"], 1000);
  EXPECT_TRUE(agent.nothing_arrives());

  EXPECT_EQ(client.stats().pending, 2U);  // the parent's are still the parent's to send
  EXPECT_TRUE(client.flush());
  const std::optional<std::string> from_parent = agent.receive();
  ASSERT_TRUE(from_parent.has_value());
  const std::vector<std::string> lines = lines_of(*from_parent);
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_EQ(json::parse(lines[0])["step"], deferred_from);
  EXPECT_EQ(json::parse(lines[1])["step"], deferred_from + 1);
}

// A thread of the parent holds the pending events' mutex most of the time (it sends into a full queue),
// so most forks copy it locked: the child must still defer its own events, never find them locked forever.
TEST_F(CppEventsClient, AForkedChildNeverInheritsTheParentsLockOnThePendingEvents) {
  AgentSocket agent(socket_path_);  // never reads
  Client client("job");
  fill_the_queue(client);
  std::atomic<bool> hammering{true};
  std::thread hammer([&] {
    for (std::uint64_t step = 0; hammering.load(std::memory_order_relaxed); ++step) client.step(step, 0.5, 1.0);
  });
  constexpr int kForks = 40;
  int children_ok = 0;
  for (int i = 0; i < kForks; ++i) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const ClientStats before = client.stats();
      client.step(1000000, 0.5);  // refused by the full queue: deferred in the child's own buffer
      const ClientStats after = client.stats();
      ::_exit(before.pending == 0 && after.pending == 1 && after.buffer_full == before.buffer_full ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++children_ok;
  }
  hammering = false;
  hammer.join();
  EXPECT_EQ(children_ok, kForks);
}

}  // namespace gpuscope::events::client_test
