// SmtpSink: a tiny SMTP server on a loopback socket for the notify tests (libcurl's email path), so
// no test needs a mail server.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuscope::notify::testing {

// Speaks just enough SMTP for libcurl: 220, EHLO (advertising AUTH PLAIN), MAIL, RCPT, DATA, QUIT. Records
// the commands and the message. `reject_data` answers the end of DATA with 554.
class SmtpSink {
 public:
  explicit SmtpSink(bool reject_data = false) : reject_data_(reject_data) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(listen_fd_, 8), 0);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~SmtpSink() {
    shutdown(listen_fd_, SHUT_RDWR);
    close(listen_fd_);
    thread_.join();
  }
  std::string url() const { return "smtp://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> commands() {
    std::lock_guard lock(mu_);
    return commands_;
  }
  std::vector<std::string> messages() {
    std::lock_guard lock(mu_);
    return messages_;
  }

 private:
  void serve() {
    while (true) {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      session(fd);
      close(fd);
    }
  }

  void session(int fd) {
    const auto say = [&](const std::string& line) { (void)!write(fd, line.data(), line.size()); };
    std::string buffer;
    const auto read_line = [&](std::string& line) {
      while (true) {
        const std::size_t end = buffer.find("\r\n");
        if (end != std::string::npos) {
          line = buffer.substr(0, end);
          buffer.erase(0, end + 2);
          return true;
        }
        char chunk[4096];
        const ssize_t n = read(fd, chunk, sizeof chunk);
        if (n <= 0) return false;
        buffer.append(chunk, static_cast<std::size_t>(n));
      }
    };
    say("220 sink ESMTP\r\n");
    std::string line;
    while (read_line(line)) {
      {
        std::lock_guard lock(mu_);
        commands_.push_back(line);
      }
      const std::string verb = line.substr(0, 4);
      if (verb == "EHLO") {
        say("250-sink\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n");
      } else if (line.starts_with("AUTH PLAIN")) {
        if (line.size() > 11) {
          say("235 ok\r\n");
        } else {
          say("334 \r\n");
          if (!read_line(line)) return;
          std::lock_guard lock(mu_);
          commands_.push_back("AUTH-RESPONSE " + line);
          say("235 ok\r\n");
        }
      } else if (verb == "DATA") {
        say("354 go on\r\n");
        std::string message;
        while (read_line(line) && line != ".") message += line + "\r\n";
        {
          std::lock_guard lock(mu_);
          messages_.push_back(message);
        }
        say(reject_data_ ? "554 no thanks\r\n" : "250 queued\r\n");
      } else if (verb == "QUIT") {
        say("221 bye\r\n");
        return;
      } else {
        say("250 ok\r\n");
      }
    }
  }

  bool reject_data_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> commands_;
  std::vector<std::string> messages_;
};

}  // namespace gpuscope::notify::testing
