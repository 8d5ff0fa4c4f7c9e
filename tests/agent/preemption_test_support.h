// Shared pieces of the preemption tests: a fake cloud metadata server on 127.0.0.1 port 0 (GCE's and
// AWS IMDSv2's rules for headers and tokens, or any handler), a gate that holds a request as a slow
// endpoint does, and a child process (`sleep 60`) to be signalled in place of a training job.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent/metadata_endpoint.h"
#include "http/http_server.h"
#include "log/logger.h"

extern char** environ;

namespace gpuscope::agent::preemption_testing {

using namespace std::chrono_literals;

struct SeenRequest {
  std::string method;
  std::string path;
  std::string flavor;     // Metadata-Flavor
  std::string token;      // X-aws-ec2-metadata-token
  std::string token_ttl;  // X-aws-ec2-metadata-token-ttl-seconds
};

// Holds requests until opened (or until `limit`), as an endpoint that does not answer.
class Gate {
 public:
  void wait(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    ++held_;
    ++arrivals_;
    cv_.notify_all();
    cv_.wait_for(lock, limit, [this] { return open_; });
    --held_;
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // Waits until a request is held.
  bool wait_held(std::chrono::milliseconds limit = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return held_ > 0; });
  }
  // Waits until `n` requests have come to the gate since it was made.
  bool wait_arrivals(int n, std::chrono::milliseconds limit = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return arrivals_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int held_ = 0;
  int arrivals_ = 0;
};

class FakeMetadataServer {
 public:
  using Handler = std::function<http::HttpResponse(const http::HttpRequest&)>;

  explicit FakeMetadataServer(Handler handler) : handler_(std::move(handler)) {
    http::HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.threads = 4;
    auto started = http::HttpServer::start(
        options,
        [this](const http::HttpRequest& r) {
          {
            std::lock_guard lock(mu_);
            requests_.push_back({std::string(r.method()), std::string(r.path()),
                                 std::string(r.header("Metadata-Flavor").value_or("")),
                                 std::string(r.header("X-aws-ec2-metadata-token").value_or("")),
                                 std::string(r.header("X-aws-ec2-metadata-token-ttl-seconds").value_or(""))});
          }
          return handler_(r);
        },
        log_);
    EXPECT_TRUE(started.has_value()) << (started ? "" : started.error());
    if (started) server_ = std::move(*started);
  }
  ~FakeMetadataServer() {
    gate.open();  // a held request must not hold up the server's stop
    server_.reset();
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(server_ ? server_->port() : 0); }
  std::vector<SeenRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

  Gate gate;

 private:
  Handler handler_;
  std::ostringstream log_text_;
  log::Logger log_{log_text_, log::Level::kError};
  mutable std::mutex mu_;
  std::vector<SeenRequest> requests_;
  std::unique_ptr<http::HttpServer> server_;
};

inline http::HttpResponse answer(int status, std::string body) {
  http::HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

// GCE's metadata server: instance/preempted answers TRUE or FALSE, and only with Metadata-Flavor: Google
// (403 without, as GCE does).
struct GceMetadata {
  std::atomic<bool> preempted{false};
  http::HttpResponse operator()(const http::HttpRequest& r) const {
    if (r.header("Metadata-Flavor").value_or("") != "Google") return answer(403, "Missing Metadata-Flavor:Google header.");
    if (r.path() != kGcePreemptedPath) return answer(404, "not found");
    return answer(200, preempted ? "TRUE" : "FALSE");
  }
};

// AWS IMDSv2: a PUT with a TTL header gets a token; instance-action answers 401 without a valid token,
// 404 while there is no action, and the action's JSON once there is one.
class AwsMetadata {
 public:
  http::HttpResponse operator()(const http::HttpRequest& r) {
    std::lock_guard lock(mu_);
    if (r.path() == kAwsTokenPath) {
      if (r.method() != "PUT") return answer(405, "");
      if (!r.header("X-aws-ec2-metadata-token-ttl-seconds")) return answer(400, "");
      ++tokens_issued_;
      valid_token_ = "token-" + std::to_string(tokens_issued_);
      return answer(200, valid_token_);
    }
    if (r.header("X-aws-ec2-metadata-token").value_or("") != valid_token_ || valid_token_.empty()) return answer(401, "");
    if (r.path() != kAwsInstanceActionPath) return answer(404, "");
    if (action_.empty()) return answer(404, "<?xml version=\"1.0\"?><Error>Not Found</Error>");
    return answer(200, action_);
  }
  void set_action(std::string json) {
    std::lock_guard lock(mu_);
    action_ = std::move(json);
  }
  // Tokens issued so far stop working (the instance restarted): the next request gets a 401.
  void revoke_tokens() {
    std::lock_guard lock(mu_);
    valid_token_ = "revoked";
  }
  int tokens_issued() const {
    std::lock_guard lock(mu_);
    return tokens_issued_;
  }

 private:
  mutable std::mutex mu_;
  std::string valid_token_;
  std::string action_;
  int tokens_issued_ = 0;
};

// A port nothing listens on (bound, then closed).
inline int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// `sleep 60` in place of a training job, with default signal dispositions and nothing blocked (whatever
// the test process blocks), killed and reaped at the end if a test left it running.
class Sleeper {
 public:
  Sleeper() {
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char sleep_name[] = "sleep";
    char seconds[] = "60";
    char* argv[] = {sleep_name, seconds, nullptr};
    const int rc = posix_spawn(&pid_, "/bin/sleep", nullptr, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    EXPECT_EQ(rc, 0) << "posix_spawn /bin/sleep";
    if (rc != 0) pid_ = -1;
  }
  ~Sleeper() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;

  int pid() const { return pid_; }
  // The signal that ended it, waiting up to `limit`; nullopt when it is still running (or exited).
  std::optional<int> ended_by(std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!reaped_) {
      int status = 0;
      const pid_t got = ::waitpid(pid_, &status, WNOHANG);
      if (got == pid_) {
        reaped_ = true;
        if (WIFSIGNALED(status)) signal_ = WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(5ms);
    }
    return signal_;
  }
  bool running() {
    if (reaped_) return false;
    int status = 0;
    const pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      reaped_ = true;
      if (WIFSIGNALED(status)) signal_ = WTERMSIG(status);
    }
    return got == 0;
  }
  // Kills and reaps it now: its pid then names no process (ESRCH), until the system reuses it.
  void reap() {
    ::kill(pid_, SIGKILL);
    ended_by();
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::optional<int> signal_;
};

}  // namespace gpuscope::agent::preemption_testing
