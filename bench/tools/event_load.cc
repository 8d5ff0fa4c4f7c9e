// event_load: sends step events to an agent's Unix socket at a fixed rate, as `ranks` training
// processes would (one datagram an event, non-blocking), and says how many it sent and how many the
// kernel refused (the agent's queue full). bench/event_intake.sh reads the agent's count beside it.
//
//   event_load SOCKET RATE_PER_SECOND SECONDS [RANKS]
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: event_load SOCKET RATE_PER_SECOND SECONDS [RANKS]\n");
    return 2;
  }
  const std::string path = argv[1];
  const double rate = std::strtod(argv[2], nullptr);
  const double seconds = std::strtod(argv[3], nullptr);
  const int ranks = argc > 4 ? std::atoi(argv[4]) : 8;
  if (!(rate > 0) || !(seconds > 0) || ranks <= 0 || path.size() >= sizeof(sockaddr_un::sun_path)) {
    std::fprintf(stderr, "event_load: bad arguments\n");
    return 2;
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::fprintf(stderr, "event_load: %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  const auto total = static_cast<std::uint64_t>(rate * seconds);
  std::uint64_t sent = 0, refused = 0;
  // Events sent more than 1 ms after their time: the sender was off the CPU and then catches up in a
  // burst, which a kernel queue of a few thousand datagrams may not hold (a bench artifact on 2 cores,
  // where the sender and the agent share them; training ranks do not catch up).
  std::uint64_t late = 0;
  double most_late_ms = 0;
  std::vector<std::uint64_t> steps(static_cast<std::size_t>(ranks), 0);
  char buffer[512];
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < total; ++i) {
    // Each event at its own time, as ranks stepping independently send them: spun for gaps under
    // 100 µs (a sleep is coarser than that), slept for longer ones.
    const auto due = std::chrono::time_point_cast<std::chrono::steady_clock::duration>(
        start + std::chrono::duration<double>(static_cast<double>(i) / rate));
    if (due - std::chrono::steady_clock::now() > std::chrono::microseconds(100)) std::this_thread::sleep_until(due);
    while (std::chrono::steady_clock::now() < due) {
    }
    const double late_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - due).count();
    if (late_ms > 1) ++late;
    if (late_ms > most_late_ms) most_late_ms = late_ms;
    const int rank = static_cast<int>(i % static_cast<std::uint64_t>(ranks));
    const int n = std::snprintf(buffer, sizeof buffer,
                                "{\"event\":\"step\",\"job\":\"bench\",\"rank\":%d,\"world_size\":%d,\"gpu\":%d,"
                                "\"step\":%llu,\"duration_s\":0.1,\"loss\":1.5,\"scalars\":{\"lr\":0.0003}}",
                                rank, ranks, rank % 8, static_cast<unsigned long long>(steps[rank]++));
    if (::send(fd, buffer, static_cast<std::size_t>(n), MSG_DONTWAIT | MSG_NOSIGNAL) == n) {
      ++sent;
    } else {
      ++refused;
    }
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("sent=%llu refused=%llu seconds=%.3f rate=%.0f late_over_1ms=%llu most_late_ms=%.1f\n",
              static_cast<unsigned long long>(sent), static_cast<unsigned long long>(refused), took,
              static_cast<double>(sent + refused) / took, static_cast<unsigned long long>(late), most_late_ms);
  ::close(fd);
  return 0;
}
