// The preemption watcher on a virtual clock: it polls at start and then every interval, counts each
// poll's answer, hands only the run's first notice to the response, logs a failing endpoint once as it
// starts failing and once as it recovers, and a stop ends a poll stuck on a silent endpoint. The last
// test runs the whole chain: a GCE notice from a loopback metadata server ends in SIGTERM to a process.
#include "agent/preemption_watcher.h"

#include <gtest/gtest.h>

#include <deque>
#include <sstream>

#include "agent/metadata_endpoint.h"
#include "agent/preemption_response.h"
#include "export/timestamp_text.h"
#include "preemption_test_support.h"

namespace gpuscope::agent::preemption_watcher_test {

using namespace std::chrono_literals;
using Answer = std::expected<std::optional<PreemptionNotice>, std::string>;

// Answers from a script (the last one again once it runs out); a poll can be made to block until cancelled.
class ScriptedSource final : public PreemptionNoticeSource {
 public:
  explicit ScriptedSource(std::vector<Answer> script) : script_(script.begin(), script.end()) {}

  Answer poll() override {
    std::unique_lock lock(mu_);
    ++polls_;
    if (block_) {
      blocked_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return cancelled_; });
    }
    if (cancelled_) return std::unexpected("cancelled");
    Answer a = script_.front();
    if (script_.size() > 1) script_.pop_front();
    return a;
  }
  void cancel() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

  void block_polls() {
    std::lock_guard lock(mu_);
    block_ = true;
  }
  bool wait_blocked() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [this] { return blocked_; });
  }
  bool cancelled() const {
    std::lock_guard lock(mu_);
    return cancelled_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Answer> script_;
  int polls_ = 0;
  bool block_ = false;
  bool blocked_ = false;
  bool cancelled_ = false;
};

const Answer kNone = std::optional<PreemptionNotice>{};
const Answer kError = std::unexpected(std::string("Connection refused"));
Answer notice(std::optional<std::chrono::system_clock::time_point> at = std::nullopt) {
  return std::optional<PreemptionNotice>(PreemptionNotice{"aws", "terminate", at, "{}"});
}

std::uint64_t polls(const exporter::PreemptionStatus& s) {
  return s.polls_notice_total + s.polls_none_total + s.polls_error_total;
}

int count_of(const std::string& text, std::string_view what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Fixture {
  model::VirtualClock clock;
  std::ostringstream log_text;
  log::Logger log{log_text, log::Level::kDebug};
  std::vector<std::pair<PreemptionNotice, std::chrono::system_clock::time_point>> notices;  // watcher thread only
  std::mutex notices_mu;

  PreemptionWatcher::NoticeHandler handler() {
    return [this](const PreemptionNotice& n, std::chrono::system_clock::time_point seen) {
      std::lock_guard lock(notices_mu);
      notices.emplace_back(n, seen);
    };
  }
  // Steps the clock one interval at a time until `n` polls were counted.
  void run_polls(PreemptionWatcher& w, std::uint64_t n, std::chrono::milliseconds interval) {
    ASSERT_TRUE(w.wait_for_polls(1, 10s));
    while (polls(w.status()) < n) {
      const std::uint64_t before = polls(w.status());
      clock.advance(interval);
      ASSERT_TRUE(w.wait_for_polls(before + 1, 10s)) << "poll " << before + 1;
    }
  }
};

TEST(PreemptionPollIntervalFlag, IsADurationFrom100msTo30s) {
  EXPECT_EQ(parse_preemption_poll_interval("5s").value(), 5000ms);
  EXPECT_EQ(parse_preemption_poll_interval("250ms").value(), 250ms);
  EXPECT_EQ(parse_preemption_poll_interval("30s").value(), 30000ms);
  EXPECT_EQ(parse_preemption_poll_interval("0").error(),
            "invalid value '0' for --preemption-poll-interval (100ms to 30s, e.g. 5s)");
  for (const char* bad : {"0s", "50ms", "31s", "1h", "5", "fast", ""}) {
    auto parsed = parse_preemption_poll_interval(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_NE(parsed.error().find("--preemption-poll-interval"), std::string::npos);
  }
}

TEST(PreemptionWatcher, PollsAtStartThenEveryIntervalAndCountsEachAnswer) {
  Fixture f;
  ScriptedSource source({kNone, kNone, kError, kNone});
  PreemptionWatcher watcher(source, f.handler(), {"gce", 5000ms}, f.clock, f.log);
  watcher.start();
  f.run_polls(watcher, 4, 5000ms);
  watcher.stop();
  const auto s = watcher.status();
  EXPECT_EQ(s.provider, "gce");
  EXPECT_EQ(s.polls_none_total, 3u);
  EXPECT_EQ(s.polls_error_total, 1u);
  EXPECT_EQ(s.polls_notice_total, 0u);
  EXPECT_FALSE(s.noticed);
  EXPECT_TRUE(f.notices.empty());
  EXPECT_TRUE(source.cancelled());
}

TEST(PreemptionWatcher, TheNoticeIsHandledOnceEvenWhilePollsKeepSayingIt) {
  Fixture f;
  ScriptedSource source({kNone, notice(), notice(), notice(), kError, notice()});
  PreemptionWatcher watcher(source, f.handler(), {"aws", 1000ms}, f.clock, f.log);
  watcher.start();
  f.run_polls(watcher, 6, 1000ms);
  watcher.stop();
  ASSERT_EQ(f.notices.size(), 1u);
  EXPECT_EQ(f.notices[0].first.action, "terminate");
  // Seen at the second poll, one interval after the start.
  EXPECT_EQ(f.notices[0].second, model::VirtualClock().wall() + 1000ms);
  const auto s = watcher.status();
  EXPECT_TRUE(s.noticed);
  EXPECT_EQ(s.polls_notice_total, 4u);
  EXPECT_EQ(s.notice_timestamp_seconds, exporter::unix_seconds(model::VirtualClock().wall() + 1000ms));
}

TEST(PreemptionWatcher, TheNoticeTimestampIsTheProvidersTimeWhenItGivesOne) {
  Fixture f;
  const auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1795767720));
  ScriptedSource source({notice(at)});
  PreemptionWatcher watcher(source, f.handler(), {"aws", 1000ms}, f.clock, f.log);
  watcher.start();
  ASSERT_TRUE(watcher.wait_for_polls(1, 10s));
  watcher.stop();
  EXPECT_EQ(watcher.status().notice_timestamp_seconds, 1795767720);
  ASSERT_EQ(f.notices.size(), 1u);
  EXPECT_EQ(f.notices[0].second, f.clock.wall());  // the handler still learns when it was seen
}

TEST(PreemptionWatcher, AFailingEndpointIsLoggedOnceAsItStartsAndOnceAsItRecovers) {
  Fixture f;
  ScriptedSource source({kError, kError, kError, kNone, kNone, kError, kError, kNone});
  PreemptionWatcher watcher(source, f.handler(), {"gce", 1000ms}, f.clock, f.log);
  watcher.start();
  f.run_polls(watcher, 8, 1000ms);
  watcher.stop();
  const std::string text = f.log_text.str();
  EXPECT_EQ(count_of(text, "level=warn"), 2) << text;
  EXPECT_EQ(count_of(text, "preemption notice endpoint not answering"), 2) << text;
  EXPECT_EQ(count_of(text, "err=\"Connection refused\""), 2) << text;
  EXPECT_EQ(count_of(text, "preemption notice endpoint answering again"), 2) << text;
  EXPECT_EQ(count_of(text, "failed_polls=3"), 1) << text;
  EXPECT_EQ(count_of(text, "failed_polls=2"), 1) << text;
  EXPECT_EQ(watcher.status().polls_error_total, 5u);
}

TEST(PreemptionWatcher, StopCancelsAPollStuckOnTheEndpointAndDoesNotCountIt) {
  Fixture f;
  ScriptedSource source({kNone});
  source.block_polls();
  PreemptionWatcher watcher(source, f.handler(), {"gce", 1000ms}, f.clock, f.log);
  watcher.start();
  ASSERT_TRUE(source.wait_blocked());
  watcher.stop();  // would never return if the stuck poll were not cancelled
  EXPECT_EQ(polls(watcher.status()), 0u);
  EXPECT_EQ(f.log_text.str().find("level=warn"), std::string::npos) << f.log_text.str();
}

TEST(PreemptionWatcher, StopEndsTheWaitBetweenPolls) {
  Fixture f;
  ScriptedSource source({kNone});
  PreemptionWatcher watcher(source, f.handler(), {"gce", 30000ms}, f.clock, f.log);
  watcher.start();
  ASSERT_TRUE(watcher.wait_for_polls(1, 10s));
  watcher.stop();  // the virtual clock never reaches the next poll: only the stop ends the wait
  EXPECT_EQ(polls(watcher.status()), 1u);
}

TEST(PreemptionWatcher, ASlowRealEndpointCountsAsAnErrorAndTheWatcherStillStops) {
  Fixture f;
  preemption_testing::FakeMetadataServer server([&](const http::HttpRequest&) {
    server.gate.wait(30s);
    return preemption_testing::answer(200, "TRUE");
  });
  MetadataEndpointOptions options;
  options.source = {PreemptionProvider::kGce, {}};
  options.base_url = server.base_url();
  options.timeout = 200ms;
  MetadataEndpoint endpoint(options);
  PreemptionWatcher watcher(endpoint, f.handler(), {"gce", 1000ms}, f.clock, f.log);
  watcher.start();
  ASSERT_TRUE(watcher.wait_for_polls(1, 10s));
  EXPECT_EQ(watcher.status().polls_error_total, 1u);
  f.clock.advance(1000ms);
  ASSERT_TRUE(server.gate.wait_arrivals(2));  // the second poll now waits on the endpoint
  watcher.stop();
  EXPECT_EQ(watcher.status().polls_error_total, 1u);
  EXPECT_TRUE(f.notices.empty());
  EXPECT_NE(f.log_text.str().find("timed out"), std::string::npos) << f.log_text.str();
}

TEST(PreemptionWatcher, AGceNoticeEndsInOneSigtermToTheGpuProcess) {
  Fixture f;
  preemption_testing::GceMetadata gce;
  preemption_testing::FakeMetadataServer server([&](const http::HttpRequest& r) { return gce(r); });
  MetadataEndpointOptions options;
  options.source = {PreemptionProvider::kGce, {}};
  options.base_url = server.base_url();
  MetadataEndpoint endpoint(options);
  preemption_testing::Sleeper job;
  PreemptionResponseOptions ro;
  ro.gpu_pids = [&] { return std::vector<int>{job.pid()}; };
  ro.hostname = "gpu-node-7";
  PreemptionResponse response(ro, f.clock, f.log);
  std::vector<PreemptionResponseReport> reports;  // watcher thread only, read after stop
  PreemptionWatcher watcher(
      endpoint,
      [&](const PreemptionNotice& n, std::chrono::system_clock::time_point seen) { reports.push_back(response.respond(n, seen)); },
      {"gce", 1000ms}, f.clock, f.log);
  watcher.start();
  f.run_polls(watcher, 2, 1000ms);
  EXPECT_TRUE(job.running());
  gce.preempted = true;
  f.run_polls(watcher, 5, 1000ms);
  watcher.stop();
  EXPECT_EQ(job.ended_by(), SIGTERM);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].signalled, std::vector<int>{job.pid()});
  EXPECT_EQ(watcher.status().polls_notice_total, 3u);
  EXPECT_EQ(count_of(f.log_text.str(), "preemption notice: this VM is being taken away"), 1) << f.log_text.str();
}

}  // namespace gpuscope::agent::preemption_watcher_test
