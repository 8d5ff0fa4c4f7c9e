// EventSocket: the Unix datagram socket training processes send their step events to. Datagrams, so a
// sender never waits for the agent (no connection, no reply: a full or absent socket drops the event on
// the sender's side) and the agent reads many per system call (recvmmsg). The kernel adds each sender's
// pid (SO_PASSCRED), translated into the agent's PID namespace, which is what NVML reports.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "analysis/training_intake.h"
#include "log/logger.h"
#include "model/clock.h"

namespace gpuscope::agent {

// Where the socket goes when --events-socket does not say: $RUNTIME_DIRECTORY/events.sock (systemd's
// RuntimeDirectory=), /run/gpuscope/events.sock where /run/gpuscope is (or can be made) writable,
// $XDG_RUNTIME_DIR/gpuscope/events.sock; empty when none is available. `env` reads a variable.
std::string default_events_socket_path(const std::function<const char*(const char*)>& env);

struct EventSocketOptions {
  std::string path;
  std::optional<gid_t> group;  // chown'd to it (mode 0660 lets that group's training processes send)
};

// "gpuscope" → its gid; a one-line error for a group the system does not know.
std::expected<gid_t, std::string> parse_group(const std::string& name);

class EventSocket {
 public:
  // Binds the socket (a stale one left by a killed agent is replaced; a live one is "in use") and starts
  // the receiving thread.
  static std::expected<std::unique_ptr<EventSocket>, std::string> open(const EventSocketOptions& options,
                                                                       analysis::TrainingIntake& intake,
                                                                       const model::Clock& clock, log::Logger& log);
  ~EventSocket();  // stop()
  EventSocket(const EventSocket&) = delete;
  EventSocket& operator=(const EventSocket&) = delete;

  // Ends the thread (woken at once) and removes the socket file, if it is still this one.
  void stop();
  const std::string& path() const { return path_; }

 private:
  EventSocket(int fd, int wake_fd, std::string path, ino_t inode, analysis::TrainingIntake& intake,
              const model::Clock& clock, log::Logger& log)
      : fd_(fd), wake_fd_(wake_fd), path_(std::move(path)), inode_(inode), intake_(intake), clock_(clock), log_(log) {}
  void run();

  int fd_;
  int wake_fd_;  // an eventfd stop() writes to
  const std::string path_;
  const ino_t inode_;
  analysis::TrainingIntake& intake_;
  const model::Clock& clock_;
  log::Logger& log_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gpuscope::agent
