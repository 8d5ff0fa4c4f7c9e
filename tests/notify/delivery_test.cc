// The Notifier end to end against receivers on 127.0.0.1: what arrives, retries, timeouts, drops.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <optional>

#include <nlohmann/json.hpp>

#include "notify/alert_payloads.h"
#include "notify/delivery_queue.h"
#include "notify/notifier.h"
#include "notify_test_support.h"

namespace gpuscope::notify {
namespace {

using testing::kT0;

using namespace std::chrono_literals;
using nlohmann::json;
using testing::eventually;
using testing::firing_alert;
using testing::LogCapture;
using testing::RecordingReceiver;
using testing::resolved_alert;


NotifyConfig config_of(const std::string& yaml) {
  auto parsed = parse_notify_config(yaml, "test.yml", [](const std::string&) { return std::nullopt; });
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error()[0]);
  return parsed ? std::move(*parsed) : NotifyConfig{};
}

NotifierOptions fast_options() {
  NotifierOptions o;
  o.external_url = "http://agent:9400";
  o.source = "node-7";
  o.delivery.initial_backoff = 20ms;
  o.delivery.max_backoff = 100ms;
  o.delivery.max_attempts = 3;
  o.delivery.sender_threads = 2;
  return o;
}

std::unique_ptr<Notifier> make_notifier(const std::string& yaml, LogCapture& logs, NotifierOptions options = fast_options()) {
  auto created = Notifier::create(config_of(yaml), logs.log, std::move(options));
  EXPECT_TRUE(created.has_value()) << (created ? "" : created.error());
  return created ? std::move(*created) : nullptr;
}

// A copy: the stats are a snapshot that the caller often holds only as a temporary.
std::optional<IntegrationCounters> counters_of(const NotifyStats& stats, std::string_view receiver,
                                               std::string_view integration) {
  for (const auto& c : stats.integrations) {
    if (c.receiver == receiver && c.integration == integration) return c;
  }
  return std::nullopt;
}

// A TCP listener that accepts connections into its backlog and never answers.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd_, 64), 0);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() { close(fd_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A port nothing listens on (bound, then closed).
int closed_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(Notifier, EveryIntegrationReceivesItsPayload) {
  RecordingReceiver am1, am2, hook, slack, pagerduty;
  LogCapture logs;
  const std::string yaml = "alertmanagers:\n  - url: " + am1.url("") + "\n  - url: " + am2.url("/") +
                           "\nroute:\n  receiver: all\n  group_by: [alertname]\n  group_wait: 0s\n"
                           "receivers:\n  - name: all\n"
                           "    webhook_configs: [{url: '" + hook.url() + "'}]\n"
                           "    slack_configs: [{api_url: '" + slack.url("/slack") + "', channel: '#gpu', send_resolved: true}]\n"
                           "    pagerduty_configs: [{routing_key: KEY, url: '" + pagerduty.url("/v2/enqueue") + "'}]\n";
  NotifierOptions options = fast_options();
  options.external_labels = {{"cluster", "lab"}};
  auto notifier = make_notifier(yaml, logs, options);
  ASSERT_NE(notifier, nullptr);

  notifier->submit({firing_alert({{"alertname", "GpuHot"}, {"gpu", "0"}, {"severity", "critical"}}, kT0, kT0 + 240'000,
                                 {{"summary", "GPU 0 is hot"}})},
                   kT0, "max(gpu_temp) > 90");

  for (RecordingReceiver* am : {&am1, &am2}) {
    auto got = am->wait_for(1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].method, "POST");
    EXPECT_EQ(got[0].path, "/api/v2/alerts");
    EXPECT_EQ(got[0].content_type, "application/json");
    json body = json::parse(got[0].body);
    ASSERT_EQ(body.size(), 1u);
    EXPECT_EQ(body[0]["labels"], json({{"alertname", "GpuHot"}, {"cluster", "lab"}, {"gpu", "0"}, {"severity", "critical"}}));
    EXPECT_EQ(body[0]["startsAt"], "2024-05-01T12:00:00.000Z");
    EXPECT_EQ(body[0]["endsAt"], "2024-05-01T12:04:00.000Z");
    EXPECT_EQ(body[0]["generatorURL"], "http://agent:9400/graph?g0.expr=max%28gpu_temp%29+%3E+90&g0.tab=1");
  }
  auto hooks = hook.wait_for(1);
  ASSERT_EQ(hooks.size(), 1u);
  json webhook = json::parse(hooks[0].body);
  EXPECT_EQ(webhook["status"], "firing");
  EXPECT_EQ(webhook["receiver"], "all");
  EXPECT_EQ(webhook["groupKey"], "{}:{alertname=\"GpuHot\"}");
  EXPECT_EQ(webhook["externalURL"], "http://agent:9400");
  EXPECT_EQ(webhook["alerts"][0]["labels"]["cluster"], "lab");

  auto slacks = slack.wait_for(1);
  ASSERT_EQ(slacks.size(), 1u);
  EXPECT_EQ(slacks[0].path, "/slack");
  json slack_msg = json::parse(slacks[0].body);
  EXPECT_EQ(slack_msg["channel"], "#gpu");
  EXPECT_EQ(slack_msg["attachments"][0]["title"], "[FIRING:1] GpuHot");

  auto pages = pagerduty.wait_for(1);
  ASSERT_EQ(pages.size(), 1u);
  json trigger = json::parse(pages[0].body);
  EXPECT_EQ(trigger["event_action"], "trigger");
  EXPECT_EQ(trigger["routing_key"], "KEY");
  EXPECT_EQ(trigger["payload"]["source"], "node-7");
  EXPECT_EQ(trigger["payload"]["severity"], "critical");

  // Resolve: Alertmanagers get the end time, the group notifies once more at its group interval.
  notifier->submit({resolved_alert({{"alertname", "GpuHot"}, {"gpu", "0"}, {"severity", "critical"}}, kT0, kT0 + 60'000)},
                   kT0 + 60'000);
  EXPECT_EQ(notifier->next_tick_ms(), kT0 + 300'000);  // default group_interval 5m after the first flush
  notifier->tick(kT0 + 300'000);
  auto am_resolved = am1.wait_for(2);
  ASSERT_EQ(am_resolved.size(), 2u);
  EXPECT_EQ(json::parse(am_resolved[1].body)[0]["endsAt"], "2024-05-01T12:01:00.000Z");
  auto hook_resolved = hook.wait_for(2);
  ASSERT_EQ(hook_resolved.size(), 2u);
  EXPECT_EQ(json::parse(hook_resolved[1].body)["status"], "resolved");
  EXPECT_EQ(json::parse(slack.wait_for(2).at(1).body)["attachments"][0]["title"], "[RESOLVED] GpuHot");
  auto resolve_pages = pagerduty.wait_for(2);
  ASSERT_EQ(resolve_pages.size(), 2u);
  json resolve = json::parse(resolve_pages[1].body);
  EXPECT_EQ(resolve["event_action"], "resolve");
  EXPECT_EQ(resolve["dedup_key"], trigger["dedup_key"]);

  ASSERT_TRUE(eventually([&] {
    const std::optional<IntegrationCounters> c = counters_of(notifier->stats(), "all", "pagerduty");
    return c.has_value() && c->total == 2;
  }));
  NotifyStats stats = notifier->stats();
  const std::optional<IntegrationCounters> am_counters = counters_of(stats, am1.url(""), "alertmanager");
  ASSERT_TRUE(am_counters.has_value());
  EXPECT_EQ(am_counters->failed, 0u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.alert_groups, 0u);
  notifier->stop(1s);
}

TEST(Notifier, PendingAlertsAreNotSent) {
  RecordingReceiver am;
  LogCapture logs;
  auto notifier = make_notifier("alertmanagers: [{url: '" + am.url("") + "'}]\n", logs);
  rules::Alert pending = firing_alert({{"alertname", "X"}}, 0, 0);
  pending.state = rules::AlertState::kPending;
  notifier->submit({pending}, kT0);
  notifier->stop(1s);
  EXPECT_TRUE(am.requests().empty());
}

TEST(Notifier, A500IsRetriedUntilItSucceeds) {
  RecordingReceiver hook({500, 503});
  LogCapture logs;
  auto notifier = make_notifier("route: {receiver: r, group_wait: 0s}\nreceivers: [{name: r, webhook_configs: [{url: '" +
                                    hook.url() + "'}]}]\n",
                                logs);
  notifier->submit({firing_alert({{"alertname", "X"}}, kT0, kT0 + 240'000)}, kT0);
  auto got = hook.wait_for(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].body, got[2].body);
  ASSERT_TRUE(eventually([&] {
    const std::optional<IntegrationCounters> c = counters_of(notifier->stats(), "r", "webhook");
    return c.has_value() && c->total == 1;
  }));
  const std::optional<IntegrationCounters> c = counters_of(notifier->stats(), "r", "webhook");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->failed, 0u);
  EXPECT_EQ(c->retries, 2u);
  EXPECT_NE(logs.text().find("notification failed, retrying"), std::string::npos);
  EXPECT_NE(logs.text().find("HTTP 500: boom"), std::string::npos) << logs.text();
}

TEST(Notifier, A4xxIsNotRetriedAndTheGroupTriesAgainNextInterval) {
  RecordingReceiver hook({400});
  LogCapture logs;
  auto notifier = make_notifier("route: {receiver: r, group_wait: 0s, group_interval: 1m}\n"
                                "receivers: [{name: r, webhook_configs: [{url: '" + hook.url() + "'}]}]\n",
                                logs);
  notifier->submit({firing_alert({{"alertname", "X"}}, kT0, kT0 + 240'000)}, kT0);
  ASSERT_TRUE(eventually([&] {
    const std::optional<IntegrationCounters> c = counters_of(notifier->stats(), "r", "webhook");
    return c.has_value() && c->failed == 1;
  }));
  EXPECT_EQ(hook.requests().size(), 1u);
  // The failure was reported back: the next flush sends again rather than waiting for repeat_interval.
  notifier->tick(kT0 + 60'000);
  EXPECT_EQ(hook.wait_for(2).size(), 2u);
}

TEST(Notifier, RetriesAreBounded) {
  RecordingReceiver hook({500, 500, 500, 500});
  LogCapture logs;
  auto notifier = make_notifier("route: {receiver: r, group_wait: 0s}\nreceivers: [{name: r, webhook_configs: [{url: '" +
                                    hook.url() + "'}]}]\n",
                                logs);
  notifier->submit({firing_alert({{"alertname", "X"}}, kT0, kT0 + 240'000)}, kT0);
  ASSERT_TRUE(eventually([&] {
    const std::optional<IntegrationCounters> c = counters_of(notifier->stats(), "r", "webhook");
    return c.has_value() && c->failed == 1;
  }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(hook.requests().size(), 3u);  // max_attempts
}

TEST(Notifier, SubmitNeverWaitsOnAReceiverAndAFullQueueDrops) {
  SilentListener silent;
  LogCapture logs;
  NotifierOptions options = fast_options();
  options.delivery.sender_threads = 1;
  options.delivery.capacity = 3;
  options.delivery.max_attempts = 1;
  // The receiver never answers and its timeout is long: a submit that waited on it would not return
  // before the first request failed.
  auto notifier = make_notifier("route: {receiver: r, group_by: ['...'], group_wait: 0s}\n"
                                "receivers: [{name: r, webhook_configs: [{url: '" + silent.url() + "', timeout: 1h}]}]\n",
                                logs, options);
  for (int i = 0; i < 10; ++i) {
    notifier->submit({firing_alert({{"alertname", "X"}, {"gpu", std::to_string(i)}}, kT0, kT0 + 240'000)}, kT0);
  }
  NotifyStats stats = notifier->stats();
  const std::optional<IntegrationCounters> c = counters_of(stats, "r", "webhook");
  EXPECT_TRUE(!c.has_value() || c->failed == 0) << "submit waited on the receiver";
  // One in flight, three waiting, the other six pushed out.
  EXPECT_GE(stats.dropped, 6u);
  EXPECT_LE(stats.queue_length, 3u);
  const std::string text = logs.text();
  const auto first_warning = text.find("notification queue full");
  ASSERT_NE(first_warning, std::string::npos);
  EXPECT_EQ(text.find("notification queue full", first_warning + 1), std::string::npos) << "warned per drop: " << text;
  // Stopping aborts the request in flight rather than waiting for its hour.
  notifier->stop(0ms);
  EXPECT_EQ(notifier->stats().queue_length, 0u);
}

TEST(Notifier, ASilentReceiverTimesOut) {
  SilentListener silent;
  LogCapture logs;
  NotifierOptions options = fast_options();
  options.delivery.max_attempts = 1;
  auto notifier = make_notifier("route: {receiver: r, group_by: ['...'], group_wait: 0s}\n"
                                "receivers: [{name: r, webhook_configs: [{url: '" + silent.url() + "', timeout: 300ms}]}]\n",
                                logs, options);
  notifier->submit({firing_alert({{"alertname", "X"}}, kT0, kT0 + 240'000)}, kT0);
  ASSERT_TRUE(eventually([&] {
    const std::optional<IntegrationCounters> c = counters_of(notifier->stats(), "r", "webhook");
    return c.has_value() && c->failed >= 1;
  }));
  EXPECT_NE(logs.text().find("timed out"), std::string::npos) << logs.text();
  notifier->stop(0ms);
}

TEST(Notifier, SecretsNeverReachTheLog) {
  LogCapture logs;
  const std::string secret_url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/services/T0PSECRET";
  auto notifier = make_notifier("route: {receiver: r, group_wait: 0s}\n"
                                "receivers:\n  - name: r\n"
                                "    slack_configs: [{api_url: '" + secret_url + "'}]\n"
                                "    pagerduty_configs: [{routing_key: R0UTINGKEY, url: '" + secret_url + "'}]\n",
                                logs);
  notifier->submit({firing_alert({{"alertname", "X"}}, kT0, kT0 + 240'000)}, kT0);
  ASSERT_TRUE(eventually([&] {
    NotifyStats s = notifier->stats();
    const std::optional<IntegrationCounters> slack = counters_of(s, "r", "slack");
    const std::optional<IntegrationCounters> pd = counters_of(s, "r", "pagerduty");
    return slack.has_value() && pd.has_value() && slack->failed == 1 && pd->failed == 1;
  }));
  const std::string text = logs.text();
  EXPECT_NE(text.find("notification failed"), std::string::npos);
  EXPECT_EQ(text.find("T0PSECRET"), std::string::npos) << text;
  EXPECT_EQ(text.find("R0UTINGKEY"), std::string::npos) << text;
}

TEST(Notifier, StopDropsWhatIsLeftAndCountsIt) {
  SilentListener silent;
  LogCapture logs;
  NotifierOptions options = fast_options();
  options.delivery.sender_threads = 1;
  auto notifier = make_notifier("alertmanagers: [{url: '" + silent.url() + "', timeout: 10s}]\n", logs, options);
  for (int i = 0; i < 3; ++i) notifier->submit({firing_alert({{"alertname", "X"}}, kT0, kT0 + 240'000)}, kT0);
  const auto start = std::chrono::steady_clock::now();
  notifier->stop(100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << "stop waited for the 10s request timeout";
  EXPECT_GE(notifier->stats().dropped, 2u);
}

TEST(UrlWithoutCredentials, StripsUserinfo) {
  EXPECT_EQ(url_without_credentials("http://user:pass@am:9093/x@y"), "http://am:9093/x@y");
  EXPECT_EQ(url_without_credentials("http://am:9093"), "http://am:9093");
}

TEST(DeliveryQueue, BackoffDoublesAndIsBounded) {
  LogCapture logs;
  model::VirtualClock clock;
  std::mutex mu;
  std::vector<model::Clock::SteadyTime> attempts;
  DeliveryQueueOptions options;
  options.initial_backoff = 40ms;
  options.max_backoff = 80ms;
  options.max_attempts = 4;
  options.sender_threads = 1;
  options.clock = &clock;
  DeliveryQueue queue(options, logs.log, [&](const OutgoingRequest&, const std::atomic<bool>&) -> std::expected<void, SendError> {
    std::lock_guard lock(mu);
    attempts.push_back(clock.steady());
    return std::unexpected(SendError{"nope", true});
  });
  auto attempts_made = [&] {
    std::lock_guard lock(mu);
    return attempts.size();
  };
  std::atomic<int> done{0};
  const auto t0 = clock.steady();
  queue.push(Delivery{"r", "webhook", HttpPost{}, [&](bool ok) { done = ok ? 1 : 2; }});
  // Each retry waits on the clock for its backoff: 40 ms, then 80, then 80 again (the cap). Just
  // short of it nothing is sent; at it, the next attempt is.
  for (const auto backoff : {40ms, 80ms, 80ms}) {
    ASSERT_TRUE(eventually([&] { return clock.waiters() == 1; }));
    const std::size_t made = attempts_made();
    clock.advance(backoff - 1ms);
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(attempts_made(), made) << "sent before its backoff of " << backoff.count() << " ms";
    clock.advance(1ms);
    ASSERT_TRUE(eventually([&] { return attempts_made() == made + 1; }));
  }
  ASSERT_TRUE(eventually([&] { return done.load() != 0; }));
  EXPECT_EQ(done.load(), 2);
  std::lock_guard lock(mu);
  ASSERT_EQ(attempts.size(), 4u);
  EXPECT_EQ(attempts[0], t0);
  EXPECT_EQ(attempts[1] - attempts[0], 40ms);
  EXPECT_EQ(attempts[2] - attempts[1], 80ms);
  EXPECT_EQ(attempts[3] - attempts[2], 80ms) << "capped at max_backoff";
  DeliveryStats stats = queue.stats();
  ASSERT_EQ(stats.integrations.size(), 1u);
  EXPECT_EQ(stats.integrations[0].total, 1u);
  EXPECT_EQ(stats.integrations[0].failed, 1u);
  EXPECT_EQ(stats.integrations[0].retries, 3u);
}

TEST(DeliveryQueue, ADueDeliveryPassesOneWaitingForItsRetry) {
  LogCapture logs;
  DeliveryQueueOptions options;
  options.initial_backoff = 10s;
  options.sender_threads = 1;
  std::atomic<int> a_attempts{0};
  std::atomic<bool> b_sent{false};
  DeliveryQueue queue(options, logs.log, [&](const OutgoingRequest& r, const std::atomic<bool>&) -> std::expected<void, SendError> {
    if (std::get<HttpPost>(r).body == "a") {
      ++a_attempts;
      return std::unexpected(SendError{"down", true});
    }
    b_sent = true;
    return {};
  });
  queue.push(Delivery{"a", "webhook", HttpPost{Secret(), "a"}, {}});
  ASSERT_TRUE(eventually([&] { return a_attempts.load() == 1; }));
  queue.push(Delivery{"b", "webhook", HttpPost{Secret(), "b"}, {}});
  EXPECT_TRUE(eventually([&] { return b_sent.load(); }, 2s));
  EXPECT_EQ(queue.stats().queue_length, 1u);  // a, waiting for its retry
  queue.stop(0ms);
  EXPECT_EQ(queue.stats().dropped, 1u);
}

}  // namespace
}  // namespace gpuscope::notify
