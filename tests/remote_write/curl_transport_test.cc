// The libcurl transport against a loopback server written here: what it sends (headers, auth, the body
// decoded back) and how it reads each answer (status, Retry-After, the error text, no response).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "remote_write/write_request.h"
#include "remote_write/write_transport.h"

namespace gpuscope::remote_write {
namespace {

// Answers each connection's one request with the next canned response; keeps what it received.
class CannedServer {
 public:
  explicit CannedServer(std::vector<std::string> responses) : responses_(std::move(responses)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 8);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~CannedServer() {
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::vector<std::string> requests;  // head and body, as received

 private:
  void serve() {
    for (const std::string& response : responses_) {
      const int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) return;
      std::string in;
      char buf[65536];
      for (;;) {
        const auto head_end = in.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          std::size_t length = 0;
          if (auto at = in.find("Content-Length: "); at != std::string::npos && at < head_end) {
            length = std::stoul(in.substr(at + 16));
          }
          if (in.size() >= head_end + 4 + length) break;
        }
        const ssize_t n = ::read(conn, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
      }
      requests.push_back(in);
      (void)!::write(conn, response.data(), response.size());
      ::close(conn);
    }
  }
  std::vector<std::string> responses_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(RemoteWriteCurlTransport, SendsTheProtocolsHeadersAndReadsEachKindOfAnswer) {
  CannedServer server({"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
                       "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                       "HTTP/1.1 400 Bad Request\r\nContent-Length: 21\r\nConnection: close\r\n\r\nbad label\nname: nope\n"});
  auto receiver = receiver_from_url("http://agent:pw@127.0.0.1:" + std::to_string(server.port()) + "/api/v1/write");
  ASSERT_TRUE(receiver.has_value());
  receiver->headers = {{"X-Scope-OrgID", "team-a"}};
  receiver->remote_timeout = std::chrono::seconds(10);
  auto transport = make_curl_transport(*receiver, "gpuscope/9.9.9", nullptr);
  const std::vector<store::SeriesSamples> series = {
      {store::Labels{{"__name__", "up"}, {"gpu", "3"}}, {{1767225600000, 1.5}}}};
  const std::string body = encode_write_request(series);

  const PostResult ok = transport->post(body);
  EXPECT_EQ(ok.status, 204);
  const PostResult busy = transport->post(body);
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.retry_after, std::chrono::seconds(3));
  const PostResult refused = transport->post(body);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.error, "bad label name: nope");  // one line
  EXPECT_FALSE(refused.retry_after.has_value());

  ASSERT_EQ(server.requests.size(), 3u);
  const std::string& first = server.requests[0];
  EXPECT_TRUE(first.starts_with("POST /api/v1/write HTTP/1.1\r\n")) << first;
  for (const char* want : {"Content-Encoding: snappy\r\n", "Content-Type: application/x-protobuf\r\n",
                           "X-Prometheus-Remote-Write-Version: 0.1.0\r\n", "User-Agent: gpuscope/9.9.9\r\n",
                           "X-Scope-OrgID: team-a\r\n", "Authorization: Basic YWdlbnQ6cHc=\r\n"}) {
    EXPECT_NE(first.find(want), std::string::npos) << want;
  }
  auto decoded = decode_write_request(first.substr(first.find("\r\n\r\n") + 4));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  ASSERT_EQ(decoded->size(), 1u);
  EXPECT_EQ((*decoded)[0].labels, series[0].labels);
  EXPECT_EQ((*decoded)[0].samples[0].value, 1.5);
}

TEST(RemoteWriteCurlTransport, NoListenerIsNoResponse) {
  // A port that was free a moment ago: nothing listens there now.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  auto receiver = receiver_from_url("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/w");
  auto transport = make_curl_transport(*receiver, "gpuscope/test", nullptr);
  const PostResult r = transport->post(encode_write_request({}));
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.error.empty());
}

// proxy_url: every request goes to the proxy, in the absolute form an HTTP proxy reads (an https
// receiver would be a CONNECT tunnel through it). The receiver's name is never resolved here.
TEST(RemoteWriteCurlTransport, ProxyUrlCarriesEveryRequest) {
  CannedServer proxy({"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"});
  auto receiver = receiver_from_url("http://receiver.invalid:9090/api/v1/write");
  receiver->proxy_url = "http://127.0.0.1:" + std::to_string(proxy.port());
  receiver->remote_timeout = std::chrono::seconds(10);
  const PostResult r = make_curl_transport(*receiver, "gpuscope/test", nullptr)->post(encode_write_request({}));
  EXPECT_EQ(r.status, 204) << r.error;
  ASSERT_EQ(proxy.requests.size(), 1u);
  EXPECT_TRUE(proxy.requests[0].starts_with("POST http://receiver.invalid:9090/api/v1/write HTTP/1.1\r\n"))
      << proxy.requests[0];
}

// As in Prometheus, http_proxy in the environment is not used unless proxy_from_environment says so
// (libcurl alone would use it). A proxy that never answers shows a request that went its way.
TEST(RemoteWriteCurlTransport, EnvironmentProxyOnlyWithProxyFromEnvironment) {
  CannedServer silent_proxy({});
  CannedServer direct({"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"});
  CannedServer env_proxy({"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"});
  ::setenv("http_proxy", ("http://127.0.0.1:" + std::to_string(silent_proxy.port())).c_str(), 1);
  auto plain = receiver_from_url("http://127.0.0.1:" + std::to_string(direct.port()) + "/w");
  plain->remote_timeout = std::chrono::seconds(5);
  const PostResult r = make_curl_transport(*plain, "gpuscope/test", nullptr)->post(encode_write_request({}));
  ::setenv("http_proxy", ("http://127.0.0.1:" + std::to_string(env_proxy.port())).c_str(), 1);
  auto from_env = receiver_from_url("http://receiver.invalid/w");
  from_env->proxy_from_environment = true;
  from_env->remote_timeout = std::chrono::seconds(10);
  const PostResult e = make_curl_transport(*from_env, "gpuscope/test", nullptr)->post(encode_write_request({}));
  ::unsetenv("http_proxy");
  EXPECT_EQ(r.status, 204) << r.error;
  ASSERT_EQ(direct.requests.size(), 1u);
  EXPECT_TRUE(direct.requests[0].starts_with("POST /w HTTP/1.1\r\n")) << direct.requests[0];
  EXPECT_EQ(e.status, 204) << e.error;
  ASSERT_EQ(env_proxy.requests.size(), 1u);
  EXPECT_TRUE(env_proxy.requests[0].starts_with("POST http://receiver.invalid/w HTTP/1.1\r\n")) << env_proxy.requests[0];
}

TEST(RemoteWriteCurlTransport, NoProxyHostsGoDirect) {
  CannedServer silent_proxy({});
  CannedServer direct({"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"});
  auto receiver = receiver_from_url("http://127.0.0.1:" + std::to_string(direct.port()) + "/w");
  receiver->proxy_url = "http://127.0.0.1:" + std::to_string(silent_proxy.port());
  receiver->no_proxy = "localhost,127.0.0.1";
  receiver->remote_timeout = std::chrono::seconds(5);
  const PostResult r = make_curl_transport(*receiver, "gpuscope/test", nullptr)->post(encode_write_request({}));
  EXPECT_EQ(r.status, 204) << r.error;
  ASSERT_EQ(direct.requests.size(), 1u);
  EXPECT_TRUE(direct.requests[0].starts_with("POST /w HTTP/1.1\r\n")) << direct.requests[0];
}

}  // namespace
}  // namespace gpuscope::remote_write
