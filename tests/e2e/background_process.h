// A binary started in the background for a test (the agent, Prometheus): its stderr is collected as
// it comes, a test can wait for a line, and it is stopped by its PID (SIGTERM, then SIGKILL) when the
// test ends. Never by name.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gpuscope::e2e {

class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});
  ~BackgroundProcess();  // SIGKILL and reap if still running
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Everything written to stderr (and stdout) so far.
  std::string output() const;
  // Waits until the output contains `text`; the output line holding it, or nullopt on timeout or exit.
  std::optional<std::string> wait_for_line(const std::string& text, std::chrono::milliseconds timeout) const;
  bool running();
  // Sends `sig`; waits up to `timeout` for the exit. The exit code, or nullopt when it did not exit
  // (or was killed by a signal).
  std::optional<int> signal_and_wait(int sig, std::chrono::milliseconds timeout);
  void send(int sig);

 private:
  void reap(bool block);
  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  mutable std::mutex mu_;
  std::string output_;
  std::thread reader_;
  std::atomic<bool> output_complete_{false};  // the reader saw the pipe's end
};

// The port the agent logged in its `msg=listening address=HOST:PORT` line, or 0.
int logged_port(const BackgroundProcess& agent, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A TCP port on 127.0.0.1 that was free a moment ago (for programs that cannot take port 0).
int free_port();

}  // namespace gpuscope::e2e
