#include "e2e/background_process.h"

#include "e2e/command_runner.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace gpuscope::e2e {

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return;
  auto image = exec_image(argv, env);

  pid_ = fork();
  if (pid_ == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execve(image.argv[0], image.argv.data(), image.envp.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  out_fd_ = pipe_fds[0];
  reader_ = std::thread([this] {
    char buf[4096];
    for (;;) {
      const ssize_t n = read(out_fd_, buf, sizeof buf);
      if (n <= 0) break;
      std::lock_guard lock(mu_);
      output_.append(buf, static_cast<std::size_t>(n));
    }
    output_complete_ = true;
  });
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    reap(true);
  }
  if (reader_.joinable()) reader_.join();
  if (out_fd_ >= 0) close(out_fd_);
}

std::string BackgroundProcess::output() const {
  std::lock_guard lock(mu_);
  return output_;
}

std::optional<std::string> BackgroundProcess::wait_for_line(const std::string& text,
                                                            std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mu_);
      const auto at = output_.find(text);
      if (at != std::string::npos) {
        const auto begin = output_.rfind('\n', at);
        const auto end = output_.find('\n', at);
        const auto b = begin == std::string::npos ? 0 : begin + 1;
        return output_.substr(b, end == std::string::npos ? std::string::npos : end - b);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

void BackgroundProcess::reap(bool block) {
  if (pid_ <= 0 || reaped_) return;
  if (waitpid(pid_, &status_, block ? 0 : WNOHANG) == pid_) reaped_ = true;
}

bool BackgroundProcess::running() {
  reap(false);
  return pid_ > 0 && !reaped_;
}

void BackgroundProcess::send(int sig) {
  if (running()) kill(pid_, sig);
}

std::optional<int> BackgroundProcess::signal_and_wait(int sig, std::chrono::milliseconds timeout) {
  send(sig);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // What the process wrote last may still be in the pipe when it is reaped: wait for the reader to
  // reach its end (unless a child of the process still holds the pipe open), so output() has it all.
  while (reaped_ && !output_complete_ && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!reaped_ || !WIFEXITED(status_)) return std::nullopt;
  return WEXITSTATUS(status_);
}

int logged_port(const BackgroundProcess& agent, std::chrono::milliseconds timeout) {
  auto line = agent.wait_for_line("msg=listening address=", timeout);
  if (!line) return 0;
  const auto addr = line->find("address=");
  const auto space = line->find(' ', addr);
  const std::string a = line->substr(addr + 8, space == std::string::npos ? std::string::npos : space - addr - 8);
  return std::atoi(a.substr(a.rfind(':') + 1).c_str());
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace gpuscope::e2e
