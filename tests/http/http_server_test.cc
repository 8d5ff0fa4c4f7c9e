#include "http/http_server.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <thread>

#include "e2e/http_client.h"

namespace gpuscope::http {
namespace {

using namespace std::chrono_literals;

struct Server {
  std::ostringstream log_text;
  log::Logger log{log_text, log::Level::kDebug};
  std::unique_ptr<HttpServer> server;
  explicit Server(HttpServerOptions options, HttpHandler handler = nullptr) {
    options.host = "127.0.0.1";
    options.port = 0;
    if (!handler) {
      handler = [](const HttpRequest& r) {
        HttpResponse out;
        out.body = std::string(r.method()) + " " + std::string(r.path()) + " q=" +
                   std::string(r.query("q").value_or("-")) + " h=" + std::string(r.header("X-Test").value_or("-")) +
                   " body=" + std::to_string(r.body().size());
        return out;
      };
    }
    auto started = HttpServer::start(options, handler, log);
    EXPECT_TRUE(started.has_value()) << started.error();
    if (started) server = std::move(*started);
  }
  int port() const { return server->port(); }
};

TEST(HttpServer, ServesTheHandlerWithHeadersQueryAndBody) {
  Server s({});
  ASSERT_GT(s.port(), 0);
  auto r = e2e::http_get(s.port(), "/x?q=a%20b", {{"X-Test", "yes"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /x q=a b h=yes body=0");
  auto post = e2e::http_raw(s.port(), "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  EXPECT_EQ(post.body, "POST /p q=- h=- body=5");
}

TEST(HttpServer, BodyOverTheLimitIs413AndTheServerGoesOn) {
  HttpServerOptions o;
  o.max_body_bytes = 100;
  Server s(o);
  auto r = e2e::http_raw(s.port(), "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\nConnection: close\r\n\r\n" +
                                       std::string(101, 'x'));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(e2e::http_get(s.port(), "/ok").status, 200);
}

TEST(HttpServer, HeadersOverTheLimitAreRefusedWithA4xx) {
  HttpServerOptions o;
  o.max_header_bytes = 4096;
  Server s(o);
  auto r = e2e::http_get(s.port(), "/x", {{"X-Big", std::string(8192, 'a')}});
  EXPECT_EQ(r.status / 100, 4) << r.status;
  EXPECT_EQ(e2e::http_get(s.port(), "/ok").status, 200);
}

// Over the limit, the agent answers in its own words (one line of text, as its 413), not with
// libmicrohttpd's HTML page: 414 for the URL, 431 for the headers; the server goes on.
TEST(HttpServer, AUrlOrHeadersOverTheLimitGetTheAgentsOwnOneLineAnswer) {
  HttpServerOptions o;
  o.max_header_bytes = 4096;
  Server s(o);
  auto url = e2e::http_get(s.port(), "/api/v1/query?query=" + std::string(9000, 'a'));
  EXPECT_EQ(url.status, 414);
  EXPECT_EQ(url.headers["content-type"], "text/plain; charset=utf-8");
  EXPECT_EQ(url.body, "414 URI too long: the URL is 9020 bytes, over the limit of 4096\n");
  auto headers = e2e::http_get(s.port(), "/x", {{"X-Big", std::string(8192, 'a')}});
  EXPECT_EQ(headers.status, 431);
  EXPECT_EQ(headers.headers["content-type"], "text/plain; charset=utf-8");
  EXPECT_TRUE(headers.body.starts_with("431 request headers too large: ")) << headers.body;
  EXPECT_TRUE(headers.body.ends_with(" bytes, over the limit of 4096\n")) << headers.body;
  EXPECT_EQ(std::count(headers.body.begin(), headers.body.end(), '\n'), 1) << headers.body;
  EXPECT_EQ(e2e::http_get(s.port(), "/ok").status, 200);
}

// HEAD answers what GET would, less the body: the same status and headers, Content-Length included.
TEST(HttpServer, HeadGetsTheHeadersOfGetWithoutTheBody) {
  Server s({}, [](const HttpRequest& r) {
    HttpResponse out;
    out.status = r.path() == "/missing" ? 404 : 200;
    out.content_type = "text/html; charset=utf-8";
    out.headers.emplace_back("Vary", "Accept");
    if (r.path() == "/shared") {
      out.shared_body = std::make_shared<const std::string>(777, 's');
    } else {
      out.body = std::string(r.path() == "/missing" ? 12 : 1030, 'b');
    }
    return out;
  });
  for (const char* path : {"/", "/shared", "/missing"}) {
    auto get = e2e::http_get(s.port(), path);
    auto head = e2e::http_raw(s.port(), std::string("HEAD ") + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(head.status, get.status) << path;
    EXPECT_EQ(head.headers["content-length"], std::to_string(get.body.size())) << path;
    EXPECT_EQ(head.headers["content-type"], get.headers["content-type"]) << path;
    EXPECT_EQ(head.headers["vary"], "Accept") << path;
    EXPECT_EQ(head.body, "") << path;
  }
}

TEST(HttpServer, ConnectionsBeyondTheLimitAreNotServedUntilOthersClose) {
  HttpServerOptions o;
  o.max_connections = 2;
  o.threads = 1;
  Server s(o);
  const int a = e2e::connect_loopback(s.port());
  const int b = e2e::connect_loopback(s.port());
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(e2e::http_get(s.port(), "/third", {}, 2s).status, 0) << "a third connection must not be served";
  close(a);
  close(b);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(e2e::http_get(s.port(), "/after").status, 200);
}

TEST(HttpServer, AClientThatNeverFinishesItsHeadersIsCutOffAtTheHeaderTimeout) {
  HttpServerOptions o;
  o.header_timeout = 1s;
  Server s(o);
  auto r = e2e::http_raw(s.port(), "GET /slow HTTP/1.1\r\nHost: x\r\nX-Trickle: a", 6s);
  EXPECT_EQ(r.status, 0);
  EXPECT_GE(r.seconds, 0.9);
  EXPECT_LT(r.seconds, 2.5) << "closed by the header deadline, not by the idle timeout";
  EXPECT_EQ(e2e::http_get(s.port(), "/ok").status, 200);
}

TEST(HttpServer, AHandlerThatThrowsGives500NotACrash) {
  Server s({}, [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
  EXPECT_EQ(e2e::http_get(s.port(), "/x").status, 500);
  EXPECT_NE(s.log_text.str().find("err=boom"), std::string::npos) << s.log_text.str();
}

TEST(HttpServer, APortInUseIsAnErrorNamingTheAddress) {
  Server first({});
  std::ostringstream text;
  log::Logger log(text, log::Level::kInfo);
  HttpServerOptions o;
  o.port = static_cast<std::uint16_t>(first.port());
  auto second = HttpServer::start(o, [](const HttpRequest&) { return HttpResponse{}; }, log);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error(), "cannot listen on 127.0.0.1:" + std::to_string(first.port()) +
                                " (in use, or not an address of this host)");
}

TEST(ListenAddress, AcceptsHostPortFormsAndRejectsTheRest) {
  EXPECT_EQ(parse_listen_address("127.0.0.1:9400").value(), (std::pair<std::string, std::uint16_t>{"127.0.0.1", 9400}));
  EXPECT_EQ(parse_listen_address(":9400").value(), (std::pair<std::string, std::uint16_t>{"", 9400}));
  EXPECT_EQ(parse_listen_address("[::1]:0").value(), (std::pair<std::string, std::uint16_t>{"::1", 0}));
  EXPECT_EQ(parse_listen_address("localhost:80").value(), (std::pair<std::string, std::uint16_t>{"localhost", 80}));
  EXPECT_FALSE(parse_listen_address("9400").has_value());
  EXPECT_FALSE(parse_listen_address("host:99999").has_value());
  EXPECT_FALSE(parse_listen_address("host:").has_value());
  EXPECT_FALSE(parse_listen_address("[::1]9400").has_value());
  EXPECT_EQ(parse_listen_address("host:x").error(), "invalid port in listen address 'host:x' (0 to 65535)");
}

}  // namespace
}  // namespace gpuscope::http

namespace gpuscope::http {
namespace {

TEST(HttpServer, StartsWithoutLibmicrohttpdComplainingAboutItsOptions) {
  Server s({});
  ASSERT_GT(s.port(), 0);
  EXPECT_EQ(s.log_text.str().find("option"), std::string::npos) << s.log_text.str();
}

}  // namespace
}  // namespace gpuscope::http
