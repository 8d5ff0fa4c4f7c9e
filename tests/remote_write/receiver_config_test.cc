#include "remote_write/receiver_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "remote_write/retry_backoff.h"
#include "remote_write/send_cursor.h"
#include "remote_write/write_relabel.h"

namespace gpuscope::remote_write {
namespace {

std::filesystem::path config_temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(RemoteWriteConfig, AFullReceiverIsRead) {
  const auto dir = config_temp_dir("rw_config_full");
  std::ofstream(dir / "pw") << "s3cret\n";
  const std::string text = "remote_write:\n"
                           "  - url: https://user:inline@mimir.example:9009/api/v1/push?token=x\n"
                           "    name: mimir\n"
                           "    remote_timeout: 10s\n"
                           "    headers: {X-Scope-OrgID: team-a}\n"
                           "    basic_auth: {username: agent, password_file: " + (dir / "pw").string() + "}\n"
                           "    write_relabel_configs:\n"
                           "      - {source_labels: [__name__], regex: 'DCGM_.*', action: keep}\n"
                           "    queue_config: {max_samples_per_send: 500, min_backoff: 100ms, max_backoff: 10s}\n"
                           "  - url: http://127.0.0.1:9090/api/v1/write\n"
                           "    authorization: {credentials: tok}\n";
  auto receivers = parse_receivers(text, "rw.yml");
  ASSERT_TRUE(receivers.has_value()) << receivers.error();
  ASSERT_EQ(receivers->size(), 2u);
  const ReceiverConfig& r = (*receivers)[0];
  EXPECT_EQ(r.display_url, "https://mimir.example:9009/api/v1/push");
  EXPECT_EQ(r.name, "mimir");
  EXPECT_EQ(r.remote_timeout, std::chrono::seconds(10));
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].second, "team-a");
  EXPECT_EQ(r.basic_auth_username, "agent");
  EXPECT_EQ(r.basic_auth_password, "s3cret");
  EXPECT_EQ(r.write_relabel.size(), 1u);
  EXPECT_EQ(r.queue.max_samples_per_send, 500u);
  EXPECT_EQ(r.queue.min_backoff, std::chrono::milliseconds(100));
  EXPECT_EQ((*receivers)[1].bearer_token, "tok");
}

// Each mistake is one line naming the file and the line it is on.
TEST(RemoteWriteConfig, MistakesNameTheFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"remote_write:\n  - url: http://a/w\n    timeout: 5s\n", "rw.yml:3: unknown key 'timeout'"},
      {"remote_write:\n  - name: x\n", "rw.yml:2: a remote_write entry needs a url"},
      {"remote_write:\n  - url: ftp://a/w\n", "rw.yml:2: invalid remote-write URL 'ftp://a/w'"},
      {"remote_write:\n  - url: http://a/w\n    basic_auth: {password: p}\n", "rw.yml:3: basic_auth needs a username"},
      {"remote_write:\n  - url: http://a/w\n    headers:\n      Content-Type: text/plain\n",
       "rw.yml:4: header 'Content-Type' is set by gpuscope"},
      {"remote_write:\n  - url: http://a/w\n    write_relabel_configs:\n      - {regex: '(', action: keep}\n",
       "rw.yml:4: invalid regex '('"},
      {"remote_write:\n  - url: http://a/w\n    write_relabel_configs:\n      - {action: replace}\n",
       "rw.yml:4: action 'replace' is not supported"},
      {"remote_write:\n  - url: http://a/w\n    queue_config: {min_backoff: soon}\n", "rw.yml:3: invalid duration 'soon'"},
      {"remote_write:\n  - url: http://a/w\n    bearer_token_file: /nonexistent/token\n",
       "rw.yml:3: bearer_token_file /nonexistent/token: No such file or directory"},
      {"remote_write: [\n", "rw.yml:2: "},
      {"remote_write:\n  - url: http://a/w\n  - url: http://a/w\n", "rw.yml:3: receiver http://a/w is listed twice"},
  };
  for (const auto& [text, want] : cases) {
    auto parsed = parse_receivers(text, "rw.yml");
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().rfind(want, 0), 0u) << "got: " << parsed.error() << "\nwant prefix: " << want;
    EXPECT_EQ(parsed.error().find('\n'), std::string::npos);
  }
}

TEST(RemoteWriteConfig, AMissingFileIsOneLine) {
  auto parsed = load_receivers_file("/nonexistent/rw.yml");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error(), "/nonexistent/rw.yml: No such file or directory");
}

TEST(RemoteWriteConfig, ShownUrlsCarryNoCredentials) {
  EXPECT_EQ(display_url("https://u:p@host:1/a/b?key=1#f"), "https://host:1/a/b");
  EXPECT_EQ(display_url("http://host/api/v1/write"), "http://host/api/v1/write");
  EXPECT_EQ(display_url("http://u@host"), "http://host");
}

TEST(RemoteWriteRelabel, KeepAndDropApplyInOrder) {
  auto keep = make_relabel_rule(WriteRelabelRule::Action::kKeep, {"__name__"}, ";", "DCGM_.*");
  auto drop = make_relabel_rule(WriteRelabelRule::Action::kDrop, {"__name__", "gpu"}, ";", "DCGM_FI_DEV_GPU_TEMP;1");
  ASSERT_TRUE(keep && drop);
  const std::vector<WriteRelabelRule> rules = {*keep, *drop};
  EXPECT_TRUE(keeps_series(rules, store::Labels{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", "0"}}));
  EXPECT_FALSE(keeps_series(rules, store::Labels{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", "1"}}));
  EXPECT_FALSE(keeps_series(rules, store::Labels{{"__name__", "gpuscope_sample_age_seconds"}}));
  // Anchored: a regex matches the whole value, as in Prometheus.
  EXPECT_FALSE(keeps_series(rules, store::Labels{{"__name__", "x_DCGM_FI"}}));
  EXPECT_TRUE(keeps_series({}, store::Labels{{"__name__", "anything"}}));
}

TEST(RemoteWriteBackoff, DoublesFromMinToMaxWithJitterAndHonoursRetryAfter) {
  double r = 0.999999;  // jitter at its top: the full backoff
  RetryBackoff backoff(std::chrono::milliseconds(30), std::chrono::milliseconds(500), [&] { return r; });
  std::vector<std::int64_t> waits;
  for (int i = 0; i < 7; ++i) waits.push_back(backoff.next().count());
  // 30, 60, 120, 240, 480, then capped at 500 (each times ~1: the full value, less a rounding)
  const std::vector<std::int64_t> want = {29, 59, 119, 239, 479, 499, 499};
  EXPECT_EQ(waits, want);
  r = 0.0;  // jitter at its bottom: half
  EXPECT_EQ(backoff.next().count(), 250);
  backoff.reset();
  EXPECT_EQ(backoff.next().count(), 15);
  // A Retry-After longer than the backoff wins; one beyond the cap is cut to it.
  EXPECT_EQ(backoff.next(std::chrono::seconds(2)).count(), 2000);
  EXPECT_EQ(backoff.next(std::chrono::hours(2)), std::chrono::milliseconds(RetryBackoff::kMaxRetryAfter));
  // A shorter one does not shorten the backoff.
  EXPECT_GE(backoff.next(std::chrono::milliseconds(1)).count(), 15);
}

TEST(RemoteWriteCursor, SavedCursorIsReadByTheNextRunAndNamesNoCredentials) {
  const auto dir = config_temp_dir("rw_cursor");
  const std::string url = "https://user:secret@host/api/v1/write";
  SendCursor first(dir, url, display_url(url));
  auto none = first.load();
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(first.save(1767225600123).has_value());
  ASSERT_TRUE(first.save(1767225600456).has_value());
  SendCursor second(dir, url, display_url(url));
  auto loaded = second.load();
  ASSERT_TRUE(loaded.has_value()) << loaded.error();
  EXPECT_EQ(*loaded, 1767225600456);
  // Another receiver has its own cursor.
  SendCursor other(dir, "https://host/api/v1/write", "https://host/api/v1/write");
  EXPECT_FALSE(other.load()->has_value());
  EXPECT_EQ(first.path().string().find("secret"), std::string::npos);
  std::ifstream in(first.path());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("secret"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(first.path().string() + ".tmp"));
}

TEST(RemoteWriteCursor, ADamagedCursorFileIsAnError) {
  const auto dir = config_temp_dir("rw_cursor_damaged");
  SendCursor cursor(dir, "http://h/w", "http://h/w");
  std::filesystem::create_directories(cursor.path().parent_path());
  std::ofstream(cursor.path()) << "{\"cursor_ms\": \"soon\"}";
  auto loaded = cursor.load();
  ASSERT_FALSE(loaded.has_value());
  EXPECT_NE(loaded.error().find("not a remote-write cursor file"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::remote_write
