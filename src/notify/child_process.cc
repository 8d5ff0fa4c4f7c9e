#include "notify/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace gpuscope::notify {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void keep_tail(std::string& tail, const char* data, std::size_t n, std::size_t max) {
  tail.append(data, n);
  if (tail.size() > max) tail.erase(0, tail.size() - max);
}

}  // namespace

ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const ChildOptions& options, const std::atomic<bool>* abort) {
  ChildOutcome outcome;
  const auto start = Clock::now();
  if (argv.empty()) {
    outcome.spawn_error = "empty command";
    return outcome;
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    outcome.spawn_error = fmt::format("pipe: {}", std::strerror(errno));
    return outcome;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills whatever it started too. Signals the agent blocks (serve
  // blocks SIGTERM/SIGINT for its signal thread) or ignores go back to normal in the child.
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args = c_strings(argv);
  std::vector<char*> envp = c_strings(env);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    outcome.spawn_error = fmt::format("cannot run {}: {}", argv[0], std::strerror(rc));
    outcome.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return outcome;
  }

  const auto deadline = start + options.timeout;
  std::optional<Clock::time_point> kill_at;  // set once SIGTERM went to the group
  int read_fd = pipe_fds[0];
  int status = 0;
  bool exited = false;
  char buffer[4096];
  while (!exited) {
    if (read_fd >= 0) {
      pollfd p{read_fd, POLLIN, 0};
      if (poll(&p, 1, 20) > 0) {
        const ssize_t n = read(read_fd, buffer, sizeof buffer);
        if (n > 0) {
          keep_tail(outcome.output_tail, buffer, static_cast<std::size_t>(n), options.output_tail_bytes);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          close(read_fd);
          read_fd = -1;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      exited = true;
      break;
    }
    const auto now = Clock::now();
    const bool cancel = abort != nullptr && abort->load();
    if (!kill_at && (now >= deadline || cancel)) {
      outcome.timed_out = now >= deadline;
      kill(-pid, SIGTERM);
      kill_at = now + options.kill_grace;
    } else if (kill_at && now >= *kill_at) {
      kill(-pid, SIGKILL);
      kill_at = Clock::time_point::max();
    }
  }
  // What the child wrote just before exiting; a grandchild holding the pipe must not keep us here.
  if (read_fd >= 0) {
    fcntl(read_fd, F_SETFL, O_NONBLOCK);
    ssize_t n;
    while ((n = read(read_fd, buffer, sizeof buffer)) > 0) {
      keep_tail(outcome.output_tail, buffer, static_cast<std::size_t>(n), options.output_tail_bytes);
    }
    close(read_fd);
  }
  if (outcome.timed_out || kill_at) kill(-pid, SIGKILL);  // leftovers of a killed group
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  outcome.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return outcome;
}

}  // namespace gpuscope::notify
