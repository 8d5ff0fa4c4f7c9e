// What the C++ training client (clients/cpp/gpuscope_events.h) costs a training loop per step event,
// against issue 18's budget of 5 µs and no system call that can block: with an agent that reads (a
// thread draining the socket, as the agent's receiver does), paced like a training loop or back to back,
// without an agent (the drop path: a clock read and a counter, no system call), and with an agent whose
// queue is full (one send that fails with EAGAIN; the event joins the pending ones, which that send
// carried too, and the oldest of them is dropped).
#include <benchmark/benchmark.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include "gpuscope_events.h"

namespace {

using gpuscope::events::Client;
using gpuscope::events::ClientOptions;
using gpuscope::events::ClientStats;

// A datagram socket bound in a directory of its own, standing in for the agent.
class AgentStandIn {
 public:
  AgentStandIn() {
    char pattern[] = "/tmp/gpuscope-events-bench-XXXXXX";
    if (::mkdtemp(pattern) != nullptr) directory_ = pattern;
    path_ = directory_ + "/events.sock";
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
    bound_ = ::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  }
  AgentStandIn(const AgentStandIn&) = delete;
  AgentStandIn& operator=(const AgentStandIn&) = delete;
  ~AgentStandIn() {
    stop_draining();
    ::close(fd_);
    ::unlink(path_.c_str());
    ::rmdir(directory_.c_str());
  }

  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }

  // Reads every datagram as it comes, on a thread of its own, until stop_draining(), and counts the
  // events in them (JSON lines: a datagram carries the deferred events too).
  void start_draining() {
    drainer_ = std::thread([this] {
      char datagram[16 * 1024];
      while (draining_.load(std::memory_order_relaxed)) {
        pollfd readable{fd_, POLLIN, 0};
        if (::poll(&readable, 1, 50) != 1) continue;
        ssize_t n;
        while ((n = ::recv(fd_, datagram, sizeof datagram, MSG_DONTWAIT)) >= 0) {
          std::uint64_t events = 1;
          for (ssize_t i = 0; i < n; ++i) events += datagram[i] == '\n' ? 1 : 0;
          received_.fetch_add(events, std::memory_order_relaxed);
        }
      }
    });
  }
  void stop_draining() {
    draining_ = false;
    if (drainer_.joinable()) drainer_.join();
  }
  std::uint64_t received() const { return received_.load(std::memory_order_relaxed); }

 private:
  std::string directory_;
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::atomic<bool> draining_{true};
  std::atomic<std::uint64_t> received_{0};
  std::thread drainer_;
};

ClientOptions options_for(const std::string& socket_path) {
  ClientOptions options;
  options.socket_path = socket_path;
  options.rank = 3;
  options.world_size = 8;
  options.local_rank = 3;
  options.gpu_index = 3;
  return options;
}

// A typical step: number, duration, loss and the learning rate.
void send_steps(benchmark::State& state, Client& client) {
  std::uint64_t step = 0;
  for (auto _ : state) {
    client.step(step, 0.512, 2.31, {{"lr", 3e-4}});
    ++step;
  }
}

// What became of the timed events: the client's stats now, less those before the timed loop. Sent
// includes the deferred ones (refused once by a full queue, sent with a later event); pending ones are
// neither sent nor dropped yet.
void report(benchmark::State& state, const ClientStats& now, const ClientStats& before = {}) {
  const auto sent = static_cast<double>(now.sent - before.sent);
  const auto deferred = static_cast<double>(now.deferred - before.deferred);
  const auto dropped = static_cast<double>(now.dropped() - before.dropped());
  const double events = sent + dropped;
  state.counters["sent_ratio"] = events > 0 ? sent / events : 0;
  state.counters["deferred_ratio"] = events > 0 ? deferred / events : 0;
  state.counters["dropped_ratio"] = events > 0 ? dropped / events : 0;
  state.counters["connect_attempts"] = static_cast<double>(now.connect_attempts);
  state.SetItemsProcessed(state.iterations());
}

// The agent is there and reads, and the training loop is slower than the agent (steps take
// milliseconds): each event finds the agent's queue empty and the agent asleep in poll(), so the send
// also wakes it. Only the call is timed (manual time); between calls the loop waits until the stand-in
// agent has read the event.
template <class SendOne>
void send_paced(benchmark::State& state, AgentStandIn& agent, SendOne send_one) {
  std::uint64_t step = 0;
  for (auto _ : state) {
    while (agent.received() < step) std::this_thread::yield();
    const auto start = std::chrono::steady_clock::now();
    send_one(step);
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    ++step;
  }
}

void BM_StepEventSend(benchmark::State& state) {
  AgentStandIn agent;
  if (!agent.bound()) {
    state.SkipWithError("cannot bind the stand-in agent's socket");
    return;
  }
  agent.start_draining();
  Client client("bench-job", options_for(agent.path()));
  send_paced(state, agent, [&client](std::uint64_t step) { client.step(step, 0.512, 2.31, {{"lr", 3e-4}}); });
  report(state, client.stats());
}
BENCHMARK(BM_StepEventSend)->UseManualTime();

// The floor under BM_StepEventSend: the same bytes, formatted once, handed to send() on a connected
// non-blocking socket. The difference is what the client adds; the rest is the kernel's (and waking the
// agent).
void BM_BareDatagramSendFloor(benchmark::State& state) {
  AgentStandIn agent;
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, agent.path().c_str(), agent.path().size() + 1);
  if (!agent.bound() || ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    state.SkipWithError("cannot reach the stand-in agent's socket");
    ::close(fd);
    return;
  }
  agent.start_draining();
  static constexpr std::string_view kEvent =
      R"({"event":"step","job":"bench-job","rank":3,"world_size":8,"local_rank":3,"gpu":3,)"
      R"("time":1764253000.123456,"step":12345,"duration_s":0.512,"loss":2.31,"scalars":{"lr":0.0003}})";
  send_paced(state, agent, [fd](std::uint64_t) {
    benchmark::DoNotOptimize(::send(fd, kEvent.data(), kEvent.size(), MSG_DONTWAIT | MSG_NOSIGNAL));
  });
  ::close(fd);
}
BENCHMARK(BM_BareDatagramSendFloor)->UseManualTime();

// Events back to back, faster than the agent reads: the agent's queue (net.unix.max_dgram_qlen, 10 by
// default, whatever its SO_RCVBUF) fills, and the events it has no room for are deferred: they go out
// with the next event the queue takes (dropped only past kMaxPendingBytes of them).
void BM_StepEventSendBurst(benchmark::State& state) {
  AgentStandIn agent;
  if (!agent.bound()) {
    state.SkipWithError("cannot bind the stand-in agent's socket");
    return;
  }
  agent.start_draining();
  Client client("bench-job", options_for(agent.path()));
  send_steps(state, client);
  report(state, client.stats());
}
BENCHMARK(BM_StepEventSendBurst);

// No agent: the event is dropped before it is formatted; at most one connect() a second.
void BM_StepEventNoAgent(benchmark::State& state) {
  Client client("bench-job", options_for("/tmp/gpuscope-events-bench-no-agent/events.sock"));
  send_steps(state, client);
  report(state, client.stats());
}
BENCHMARK(BM_StepEventNoAgent);

// The agent is there but does not read: its queue is full, every send() fails at once with EAGAIN. The
// worst case of deferring: each send carries the pending events too (kMaxPendingBytes, about 4 KiB, that
// the kernel copies before it refuses them), then the event joins them and the oldest is dropped.
void BM_StepEventBufferFull(benchmark::State& state) {
  AgentStandIn agent;
  if (!agent.bound()) {
    state.SkipWithError("cannot bind the stand-in agent's socket");
    return;
  }
  agent.stop_draining();
  Client client("bench-job", options_for(agent.path()));
  while (client.stats().buffer_full == 0) client.step(0, 0.512);  // fill the queue and the pending events first
  const ClientStats before = client.stats();
  send_steps(state, client);
  report(state, client.stats(), before);
}
BENCHMARK(BM_StepEventBufferFull);

// The RAII timer around a step that does nothing: two steady_clock reads on top of BM_StepEventSend.
void BM_StepTimerSend(benchmark::State& state) {
  AgentStandIn agent;
  if (!agent.bound()) {
    state.SkipWithError("cannot bind the stand-in agent's socket");
    return;
  }
  agent.start_draining();
  Client client("bench-job", options_for(agent.path()));
  std::uint64_t step = 0;
  for (auto _ : state) {
    auto timer = client.time_step(step++);
    timer.set_loss(2.31);
  }
  report(state, client.stats());
}
BENCHMARK(BM_StepTimerSend);

}  // namespace
