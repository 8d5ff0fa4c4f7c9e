#include "e2e/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <zlib.h>

namespace gpuscope::e2e {

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

HttpResult http_raw(int port, const std::string& raw, std::chrono::milliseconds timeout) {
  HttpResult r;
  const auto start = std::chrono::steady_clock::now();
  const int fd = connect_loopback(port);
  if (fd < 0) return r;
  std::size_t sent = 0;
  while (sent < raw.size()) {
    const ssize_t n = send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string response;
  const auto deadline = start + timeout;
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    response.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto head_end = response.find("\r\n\r\n");
  if (!response.starts_with("HTTP/1.") || head_end == std::string::npos) return r;
  r.status = std::atoi(response.substr(9, 3).c_str());
  std::size_t pos = response.find("\r\n") + 2;
  while (pos < head_end) {
    const auto eol = response.find("\r\n", pos);
    const std::string line = response.substr(pos, eol - pos);
    pos = eol + 2;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    r.headers[name] = value;
  }
  r.body = response.substr(head_end + 4);
  if (r.headers["transfer-encoding"] == "chunked") {
    std::string joined;
    std::size_t at = 0;
    for (;;) {
      const auto eol = r.body.find("\r\n", at);
      if (eol == std::string::npos) break;
      const std::size_t size = std::strtoul(r.body.substr(at, eol - at).c_str(), nullptr, 16);
      if (size == 0 || eol + 2 + size > r.body.size()) break;
      joined.append(r.body, eol + 2, size);
      at = eol + 2 + size + 2;
    }
    r.body = std::move(joined);
  }
  return r;
}

HttpResult http_get(int port, const std::string& path, const std::map<std::string, std::string>& headers,
                    std::chrono::milliseconds timeout) {
  std::string raw = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) raw += k + ": " + v + "\r\n";
  raw += "\r\n";
  return http_raw(port, raw, timeout);
}

std::string gunzip(const std::string& data) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return {};
  std::string out;
  char buf[65536];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
  }
  inflateEnd(&zs);
  return rc == Z_STREAM_END ? out : std::string();
}

}  // namespace gpuscope::e2e
