// `gpuscope eval` where it meets the outside: a --data-dir that is not a store (never created by a
// read), and a --url that is not Prometheus's API (a web page, an empty answer, a server that never
// answers), each a one-line error naming what answered.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "cli/eval_verb.h"
#include "store/tsdb.h"
#include "cli/scratch_dir.h"

namespace gpuscope::cli {
namespace {

namespace fs = std::filesystem;

using testing::ScratchDir;

// A loopback server that answers every connection with `response` as is (after reading the request),
// or, when `response` is empty, accepts and never answers.
class CannedServer {
 public:
  explicit CannedServer(std::string response) : response_(std::move(response)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd_, 8) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
    thread_ = std::thread([this] { serve(); });
  }
  ~CannedServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    ::close(fd_);
    for (int c : held_) ::close(c);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void serve() {
    while (!stopping_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      if (response_.empty()) {
        held_.push_back(c);  // open and silent until the test ends
        continue;
      }
      char buf[4096];
      (void)!::recv(c, buf, sizeof buf, 0);
      (void)!::send(c, response_.data(), response_.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  std::string response_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::vector<int> held_;
  std::thread thread_;
};

std::string http_response(const std::string& status_line, const std::string& type, const std::string& body) {
  return "HTTP/1.1 " + status_line + "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

TEST(EvalDataDir, AMissingOrEmptyDirectoryIsAnErrorAndNothingIsCreated) {
  ScratchDir dir;
  const fs::path missing = dir.path / "nowhere";
  auto r = testing::run_gpuscope({"eval", "up", "--data-dir", missing.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: --data-dir " + missing.string() + ": no such directory\n");
  EXPECT_FALSE(fs::exists(missing)) << "a read created the directory";

  r = testing::run_gpuscope({"eval", "up", "--data-dir", dir.path.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: --data-dir " + dir.path.string() +
                       ": holds no history (no chunks.sqlite; is it the directory an agent's --data-dir names?)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(fs::is_empty(dir.path)) << "a read created a store";
}

TEST(EvalDataDir, GoesThroughTheAgentsSampleLimitWhichTheFlagSets) {
  // 2,000 readings of one series, flushed as an agent would: a query holding all of them is over a
  // --query.max-samples of 1000 and answers with the default limit.
  ScratchDir dir;
  const std::int64_t t0 = 1'700'000'000'000;
  {
    store::TsdbOptions so;
    so.data_dir = dir.path.string();
    auto db = store::Tsdb::open(std::move(so), t0);
    ASSERT_TRUE(db) << db.error();
    for (int i = 0; i < 2000; ++i) ASSERT_TRUE((*db)->append(store::Labels{{"__name__", "m"}}, t0 + i * 1000, i));
    ASSERT_TRUE((*db)->flush(t0 + 2000 * 1000));
  }
  const std::string at = std::to_string((t0 + 1999 * 1000) / 1000);
  auto r = testing::run_gpuscope({"eval", "count_over_time(m[1h])", "--data-dir", dir.path.string(), "--time", at,
                                  "--query.max-samples", "1000"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "gpuscope: query processing would load too many samples into memory in query execution\n");
  r = testing::run_gpuscope({"eval", "count_over_time(m[1h])", "--data-dir", dir.path.string(), "--time", at});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{} => 2000 @[" + at + ".000]\n");

  r = testing::run_gpuscope({"eval", "m", "--url", "http://127.0.0.1:1", "--query.max-samples", "1000"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: --query.max-samples is for --data-dir; with --url the agent's own --query.max-samples applies\n");
  r = testing::run_gpuscope({"eval", "m", "--data-dir", dir.path.string(), "--query.max-samples", "10"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: invalid value '10' for --query.max-samples (1000 to 1000000000)\n");
}

TEST(EvalUrl, AWebPageIsOneLineWithTheStatusAndAnEscapedExcerpt) {
  const std::string page = "<!DOCTYPE html>\n<html>\n<head><title>404 Not Found</title></head>\n<body>\n" +
                           std::string(400, 'x') + "\n</body>\n</html>\n";
  CannedServer server(http_response("404 Not Found", "text/html", page));
  auto r = testing::run_gpuscope({"eval", "up", "--url", server.url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.err.starts_with("gpuscope: " + server.url() + "/api/v1/query?query=up&time=")) << r.err;
  EXPECT_NE(r.err.find(": HTTP 404 text/html, not Prometheus API JSON: \"<!DOCTYPE html>\\n<html>\\n<head>"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("... (" + std::to_string(page.size()) + " bytes)\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(std::string(200, 'x')), std::string::npos) << "the whole body was printed";
}

TEST(EvalUrl, AnEmptyAnswerSaysEmptyBody) {
  CannedServer server(http_response("200 OK", "text/plain", ""));
  auto r = testing::run_gpuscope({"eval", "up", "--url", server.url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.err.ends_with(": HTTP 200 text/plain, not Prometheus API JSON: empty body\n")) << r.err;
}

TEST(EvalUrl, BytesOutsidePrintableAsciiAreEscaped) {
  CannedServer server(http_response("502 Bad Gateway", "text/plain", std::string("bad\x01\xff\"gate\"\r\n", 13)));
  auto r = testing::run_gpuscope({"eval", "up", "--url", server.url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.err.ends_with(": HTTP 502 text/plain, not Prometheus API JSON: \"bad\\x01\\xff\\\"gate\\\"\\r\\n\"\n"))
      << r.err;
}

TEST(EvalUrl, AServerThatNeverAnswersIsGivenUpOnAfterTimeout) {
  CannedServer server("");
  auto r = testing::run_gpuscope({"eval", "up", "--url", server.url(), "--timeout", "300ms"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.err.starts_with("gpuscope: " + server.url() + "/api/v1/query?query=up&time=")) << r.err;
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.ends_with(" (--timeout 300ms)\n")) << r.err;
}

TEST(EvalArgsTimeout, DefaultIsTheAgentsQueryTimeoutPlusAMarginAndBadValuesAreRefused) {
  auto d = parse_eval_args(std::vector<std::string>{"up", "--url", "u"}, 0);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->timeout, std::chrono::seconds(130));
  auto t = parse_eval_args(std::vector<std::string>{"up", "--url", "u", "--timeout", "5s"}, 0);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->timeout, std::chrono::seconds(5));
  for (const char* bad : {"0s", "forever", "2h"}) {
    auto b = parse_eval_args(std::vector<std::string>{"up", "--url", "u", "--timeout", bad}, 0);
    ASSERT_FALSE(b) << bad;
    EXPECT_EQ(b.error().text, std::string("invalid value '") + bad + "' for --timeout (100ms to 1h, e.g. 30s)");
  }
}

}  // namespace
}  // namespace gpuscope::cli
