#include "notify/alert_dispatcher.h"

#include <gtest/gtest.h>

#include <map>

#include "notify/alert_matchers.h"
#include "notify/route_selection.h"
#include "notify_test_support.h"

namespace gpuscope::notify {
namespace {

using testing::n_alert;

constexpr std::int64_t kS = 1000;
constexpr std::int64_t kFarFuture = 1'000'000 * kS;  // a valid_until far beyond every test

std::shared_ptr<const NotifyConfig> config_of(std::string_view yaml) {
  auto parsed = parse_notify_config(yaml, "test.yml", [](const std::string&) { return std::nullopt; });
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error()[0]);
  return std::make_shared<const NotifyConfig>(parsed ? std::move(*parsed) : NotifyConfig{});
}

// One receiver with a webhook (send_resolved) and a Slack integration (no send_resolved).
constexpr std::string_view kGrouping = R"(
route:
  receiver: team
  group_by: [alertname]
  group_wait: 30s
  group_interval: 1m
  repeat_interval: 10m
receivers:
  - name: team
    webhook_configs: [{url: 'http://127.0.0.1:1/hook'}]
    slack_configs: [{api_url: 'http://127.0.0.1:1/slack'}]
)";

NotificationAlert hot(std::string gpu, std::int64_t starts, std::int64_t ends = kFarFuture) {
  return n_alert({{"alertname", "GpuHot"}, {"gpu", std::move(gpu)}}, starts, ends);
}

std::vector<std::string> gpus_of(const Notification& n) {
  std::vector<std::string> out;
  for (const auto& a : n.alerts) out.push_back(std::string(a.labels.get("gpu")) + (n.resolved(a) ? "/resolved" : ""));
  return out;
}

std::vector<IntegrationNotification> of_kind(std::vector<IntegrationNotification> all, IntegrationKind kind) {
  std::erase_if(all, [&](const auto& n) { return n.kind != kind; });
  return all;
}

TEST(AlertDispatcher, AnAlertAddedToFlushNowSkipsGroupWaitAndGroupInterval) {
  AlertDispatcher d(config_of(kGrouping), "http://agent");
  d.add({hot("0", 10 * kS)}, 10 * kS, true);
  EXPECT_EQ(d.next_flush_ms(), 10 * kS);
  auto first = d.tick(10 * kS);
  ASSERT_EQ(first.size(), 2u);  // webhook and slack, without the 30 s group_wait
  EXPECT_EQ(gpus_of(first[0].notification), (std::vector<std::string>{"0"}));
  // Joining a group that notified a moment ago: sent now too, not after the group interval.
  d.add({hot("0", 10 * kS), hot("1", 20 * kS)}, 20 * kS, true);
  auto second = d.tick(20 * kS);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(gpus_of(second[0].notification), (std::vector<std::string>{"0", "1"}));
  // Ordinary adds keep their timers.
  d.add({hot("2", 30 * kS)}, 30 * kS);
  EXPECT_TRUE(d.tick(30 * kS).empty());
}

TEST(AlertDispatcher, GroupWaitThenGroupIntervalThenRepeatInterval) {
  AlertDispatcher d(config_of(kGrouping), "http://agent");
  d.add({hot("0", 0)}, 0);
  EXPECT_EQ(d.next_flush_ms(), 30 * kS);
  EXPECT_TRUE(d.tick(29 * kS).empty());

  auto first = d.tick(30 * kS);
  ASSERT_EQ(first.size(), 2u);  // webhook and slack
  EXPECT_EQ(first[0].receiver->name, "team");
  EXPECT_EQ(first[0].notification.group_key, "{}:{alertname=\"GpuHot\"}");
  EXPECT_EQ(first[0].notification.group_labels, (store::Labels{{"alertname", "GpuHot"}}));
  EXPECT_EQ(first[0].notification.external_url, "http://agent");
  EXPECT_EQ(gpus_of(first[0].notification), (std::vector<std::string>{"0"}));
  EXPECT_EQ(d.next_flush_ms(), 90 * kS);

  // A new alert joins: nothing before the group interval ends, then both.
  d.add({hot("0", 0), hot("1", 40 * kS)}, 40 * kS);
  EXPECT_TRUE(d.tick(60 * kS).empty());
  auto second = d.tick(90 * kS);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(gpus_of(second[0].notification), (std::vector<std::string>{"0", "1"}));

  // Nothing changes: silent until repeat_interval (10m after the last notification at 90s).
  for (std::int64_t t = 150; t < 690; t += 60) EXPECT_TRUE(d.tick(t * kS).empty()) << t;
  auto repeat = d.tick(690 * kS);
  ASSERT_EQ(repeat.size(), 2u);
  EXPECT_EQ(gpus_of(repeat[0].notification), (std::vector<std::string>{"0", "1"}));
}

TEST(AlertDispatcher, ResolvedAlertsAndTheFinalResolve) {
  AlertDispatcher d(config_of(kGrouping), "");
  d.add({hot("0", 0), hot("1", 0)}, 0);
  ASSERT_EQ(d.tick(30 * kS).size(), 2u);

  // gpu 1 resolves: the webhook (send_resolved) hears about it, Slack does not.
  d.add({hot("1", 0, 50 * kS)}, 50 * kS);
  auto partial = d.tick(90 * kS);
  auto hooks = of_kind(partial, IntegrationKind::kWebhook);
  ASSERT_EQ(hooks.size(), 1u);
  EXPECT_EQ(gpus_of(hooks[0].notification), (std::vector<std::string>{"0", "1/resolved"}));
  EXPECT_EQ(hooks[0].notification.status(), "firing");
  EXPECT_TRUE(of_kind(partial, IntegrationKind::kSlack).empty());

  // Everything resolves: the webhook gets status resolved, Slack nothing, and the group goes away.
  d.add({hot("0", 0, 100 * kS)}, 100 * kS);
  auto last = d.tick(150 * kS);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].kind, IntegrationKind::kWebhook);
  EXPECT_EQ(last[0].notification.status(), "resolved");
  EXPECT_EQ(gpus_of(last[0].notification), (std::vector<std::string>{"0/resolved"}));
  EXPECT_EQ(d.group_count(), 0u);
  EXPECT_TRUE(d.tick(1000 * kS).empty());

  // It fires again: a new group, waiting group_wait again.
  d.add({hot("0", 2000 * kS)}, 2000 * kS);
  EXPECT_TRUE(d.tick(2010 * kS).empty());
  EXPECT_EQ(d.tick(2030 * kS).size(), 2u);
}

TEST(AlertDispatcher, AnAlertThatStopsBeingResentExpiresAtValidUntil) {
  AlertDispatcher d(config_of(kGrouping), "");
  d.add({hot("0", 0, 240 * kS)}, 0);
  ASSERT_EQ(d.tick(30 * kS).size(), 2u);
  EXPECT_TRUE(d.tick(210 * kS).empty());
  auto expired = of_kind(d.tick(270 * kS), IntegrationKind::kWebhook);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].notification.status(), "resolved");
}

TEST(AlertDispatcher, FiredAndResolvedWithinGroupWaitSendsNothing) {
  AlertDispatcher d(config_of(kGrouping), "");
  d.add({hot("0", 0)}, 0);
  d.add({hot("0", 0, 10 * kS)}, 10 * kS);
  EXPECT_TRUE(d.tick(30 * kS).empty());
  EXPECT_EQ(d.group_count(), 0u);
}

TEST(AlertDispatcher, AnAlertOlderThanGroupWaitIsSentAtOnce) {
  AlertDispatcher d(config_of(kGrouping), "");
  d.add({hot("0", 0)}, 3600 * kS);  // e.g. restored after a restart
  EXPECT_EQ(d.next_flush_ms(), 3600 * kS);
  EXPECT_EQ(d.tick(3600 * kS).size(), 2u);
}

TEST(AlertDispatcher, AFailedNotificationIsSentAgainAtTheNextFlush) {
  AlertDispatcher d(config_of(kGrouping), "");
  d.add({hot("0", 0)}, 0);
  auto first = of_kind(d.tick(30 * kS), IntegrationKind::kWebhook);
  ASSERT_EQ(first.size(), 1u);
  d.report_failure(first[0].log_id);
  auto again = d.tick(90 * kS);
  ASSERT_EQ(again.size(), 1u);  // only the integration that failed
  EXPECT_EQ(again[0].kind, IntegrationKind::kWebhook);
  EXPECT_TRUE(d.tick(150 * kS).empty());
}

TEST(AlertDispatcher, GroupByEveryLabelOrNoLabel) {
  AlertDispatcher all(config_of("route: {receiver: r, group_by: ['...'], group_wait: 0s}\n"
                                "receivers: [{name: r, webhook_configs: [{url: 'http://h/x'}]}]\n"),
                      "");
  all.add({hot("0", 0), hot("1", 0)}, 0);
  EXPECT_EQ(all.group_count(), 2u);
  auto each = all.tick(0);
  ASSERT_EQ(each.size(), 2u);
  EXPECT_EQ(each[0].notification.group_key, "{}:{alertname=\"GpuHot\", gpu=\"0\"}");

  AlertDispatcher none(config_of("route: {receiver: r, group_wait: 0s}\n"
                                 "receivers: [{name: r, webhook_configs: [{url: 'http://h/x'}]}]\n"),
                       "");
  none.add({hot("0", 0), n_alert({{"alertname", "Other"}}, 0, kFarFuture)}, 0);
  EXPECT_EQ(none.group_count(), 1u);
  auto one = none.tick(0);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].notification.group_key, "{}:{}");
  EXPECT_EQ(one[0].notification.alerts.size(), 2u);
}

constexpr std::string_view kRouting = R"(
route:
  receiver: default
  group_by: [alertname]
  group_wait: 0s
  routes:
    - matchers: ['severity="critical"']
      receiver: pager
      continue: true
      routes:
        - matchers: ['team="ml"']
          receiver: ml-pager
    - matchers: ['severity=~"critical|warning"']
      receiver: chat
      group_by: [alertname, gpu]
    - matchers: ['severity="info"']
      receiver: never-reached-after-info
receivers:
  - {name: default, webhook_configs: [{url: 'http://h/default'}]}
  - {name: pager, webhook_configs: [{url: 'http://h/pager'}]}
  - {name: ml-pager, webhook_configs: [{url: 'http://h/ml'}]}
  - {name: chat, webhook_configs: [{url: 'http://h/chat'}]}
  - {name: never-reached-after-info, webhook_configs: [{url: 'http://h/info'}]}
)";

std::vector<std::string> receivers_for(const NotifyConfig& config, store::Labels labels) {
  std::vector<std::string> out;
  for (const Route* r : select_routes(*config.route, labels)) out.push_back(r->receiver);
  return out;
}

TEST(RouteSelection, NestedRoutesMatchersAndContinue) {
  auto config = config_of(kRouting);
  using V = std::vector<std::string>;
  // critical: pager (continue) and then chat; the nested ml route wins over pager for team=ml.
  EXPECT_EQ(receivers_for(*config, {{"alertname", "A"}, {"severity", "critical"}}), (V{"pager", "chat"}));
  EXPECT_EQ(receivers_for(*config, {{"alertname", "A"}, {"severity", "critical"}, {"team", "ml"}}),
            (V{"ml-pager", "chat"}));
  // warning: the first route does not match, chat does and does not continue.
  EXPECT_EQ(receivers_for(*config, {{"alertname", "A"}, {"severity", "warning"}}), (V{"chat"}));
  EXPECT_EQ(receivers_for(*config, {{"alertname", "A"}, {"severity", "info"}}), (V{"never-reached-after-info"}));
  // Nothing matches: the root itself.
  EXPECT_EQ(receivers_for(*config, {{"alertname", "A"}}), (V{"default"}));
}

TEST(RouteSelection, EachMatchedRouteGroupsWithItsOwnKeyAndGroupBy) {
  AlertDispatcher d(config_of(kRouting), "");
  d.add({n_alert({{"alertname", "Hot"}, {"gpu", "0"}, {"severity", "critical"}}, 0, kFarFuture),
         n_alert({{"alertname", "Hot"}, {"gpu", "1"}, {"severity", "critical"}}, 0, kFarFuture)},
        0);
  auto sent = d.tick(0);
  std::map<std::string, std::vector<std::string>> by_receiver;
  for (const auto& n : sent) by_receiver[n.receiver->name].push_back(n.notification.group_key);
  ASSERT_EQ(by_receiver.size(), 2u);
  EXPECT_EQ(by_receiver["pager"], (std::vector<std::string>{"{}/{severity=\"critical\"}:{alertname=\"Hot\"}"}));
  EXPECT_EQ(by_receiver["chat"],
            (std::vector<std::string>{"{}/{severity=~\"critical|warning\"}:{alertname=\"Hot\", gpu=\"0\"}",
                                      "{}/{severity=~\"critical|warning\"}:{alertname=\"Hot\", gpu=\"1\"}"}));
}

TEST(AlertMatchers, ParseLikeAlertmanager) {
  auto quoted = parse_alert_matcher(R"(  summary = "a \"b\" c"  )");
  ASSERT_TRUE(quoted.has_value());
  EXPECT_EQ(quoted->value(), "a \"b\" c");
  auto bare = parse_alert_matcher("gpu=~0|1");
  ASSERT_TRUE(bare.has_value());
  EXPECT_TRUE(bare->matches("1"));
  EXPECT_FALSE(bare->matches("10"));  // anchored
  auto not_equal = parse_alert_matcher("team!=");
  ASSERT_TRUE(not_equal.has_value());
  EXPECT_TRUE(not_equal->matches("ml"));
  EXPECT_FALSE(not_equal->matches(""));
  EXPECT_FALSE(parse_alert_matcher("=x").has_value());
  EXPECT_FALSE(parse_alert_matcher("a=\"x").has_value());
  EXPECT_FALSE(parse_alert_matcher("a>b").has_value());
}

}  // namespace
}  // namespace gpuscope::notify
