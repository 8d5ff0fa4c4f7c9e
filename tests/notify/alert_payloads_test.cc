#include "notify/alert_payloads.h"

#include <gtest/gtest.h>

#include "notify_test_support.h"

namespace gpuscope::notify {
namespace {

using testing::kT0;

using nlohmann::json;
using testing::n_alert;


Notification two_firing_one_resolved() {
  Notification n;
  n.receiver = "oncall";
  n.group_key = "{}/{severity=\"critical\"}:{alertname=\"GpuOverheating\"}";
  n.group_labels = {{"alertname", "GpuOverheating"}};
  n.external_url = "http://agent:9400";
  n.now_ms = kT0 + 60'000;
  n.alerts.push_back(n_alert({{"alertname", "GpuOverheating"}, {"gpu", "0"}, {"severity", "critical"}}, kT0,
                             kT0 + 240'000,
                             {{"summary", "GPU 0 is at 91C"}, {"description", "Above 90C for 5m."}}));
  n.alerts.back().generator_url = "http://agent:9400/graph?g0.expr=up&g0.tab=1";
  n.alerts.push_back(n_alert({{"alertname", "GpuOverheating"}, {"gpu", "1"}, {"severity", "warning"}}, kT0 + 1'500,
                             kT0 + 240'000, {{"summary", "GPU 1 is at 88C"}}));
  n.alerts.push_back(n_alert({{"alertname", "GpuOverheating"}, {"gpu", "2"}, {"severity", "critical"}}, kT0 - 600'000,
                             kT0 + 30'000, {{"summary", "GPU 2 is at 95C"}}));
  return n;
}

TEST(Rfc3339, FormatsUtcWithMilliseconds) {
  EXPECT_EQ(rfc3339(kT0), "2024-05-01T12:00:00.000Z");
  EXPECT_EQ(rfc3339(kT0 + 1'500), "2024-05-01T12:00:01.500Z");
  EXPECT_EQ(rfc3339(0), "0001-01-01T00:00:00Z");
}

TEST(Fingerprint, MatchesPrometheus) {
  // Values from Prometheus's model.LabelSet.Fingerprint (prometheus/common signature_test.go).
  EXPECT_EQ(labels_fingerprint({}), 14695981039346656037ULL);
  EXPECT_EQ(labels_fingerprint({{"name", "garland, briggs"}, {"fear", "love is not enough"}}), 5799056148416392346ULL);
  EXPECT_EQ(fingerprint_text({{"name", "garland, briggs"}, {"fear", "love is not enough"}}), "507a62d79ee76c9a");
}

TEST(GeneratorUrl, IsPrometheusGraphLink) {
  EXPECT_EQ(generator_url("http://agent:9400/", "max(x) > 90"),
            "http://agent:9400/graph?g0.expr=max%28x%29+%3E+90&g0.tab=1");
  EXPECT_EQ(generator_url("http://agent:9400", ""), "");
}

TEST(NotificationAlertFromRule, FiringEndsAtValidUntilResolvedAtResolvedAt) {
  rules::Alert firing = testing::firing_alert({{"alertname", "X"}}, kT0, kT0 + 240'000);
  firing.active_at_ms = kT0 - 300'000;
  NotificationAlert a = notification_alert(firing, "g");
  EXPECT_EQ(a.starts_at_ms, kT0);  // fired, not became pending
  EXPECT_EQ(a.ends_at_ms, kT0 + 240'000);
  EXPECT_EQ(a.generator_url, "g");
  NotificationAlert r = notification_alert(testing::resolved_alert({{"alertname", "X"}}, kT0, kT0 + 90'000), "");
  EXPECT_EQ(r.ends_at_ms, kT0 + 90'000);
  EXPECT_TRUE(r.resolved_at(kT0 + 90'000));
  EXPECT_FALSE(a.resolved_at(kT0 + 90'000));
}

TEST(AlertmanagerBody, HasTheV2Fields) {
  Notification n = two_firing_one_resolved();
  json body = alertmanager_alerts_body(n.alerts);
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 3u);
  EXPECT_EQ(body[0]["labels"], json({{"alertname", "GpuOverheating"}, {"gpu", "0"}, {"severity", "critical"}}));
  EXPECT_EQ(body[0]["annotations"]["summary"], "GPU 0 is at 91C");
  EXPECT_EQ(body[0]["startsAt"], "2024-05-01T12:00:00.000Z");
  EXPECT_EQ(body[0]["endsAt"], "2024-05-01T12:04:00.000Z");
  EXPECT_EQ(body[0]["generatorURL"], "http://agent:9400/graph?g0.expr=up&g0.tab=1");
  EXPECT_FALSE(body[1].contains("generatorURL"));
  EXPECT_EQ(body[2]["endsAt"], "2024-05-01T12:00:30.000Z");
  EXPECT_EQ(body[0].size(), 5u);
}

TEST(WebhookBody, IsAlertmanagersWebhookMessage) {
  Notification n = two_firing_one_resolved();
  json body = webhook_body(n, 0);
  EXPECT_EQ(body["version"], "4");
  EXPECT_EQ(body["groupKey"], n.group_key);
  EXPECT_EQ(body["truncatedAlerts"], 0);
  EXPECT_EQ(body["status"], "firing");
  EXPECT_EQ(body["receiver"], "oncall");
  EXPECT_EQ(body["groupLabels"], json({{"alertname", "GpuOverheating"}}));
  EXPECT_EQ(body["commonLabels"], json({{"alertname", "GpuOverheating"}}));
  EXPECT_EQ(body["commonAnnotations"], json::object());
  EXPECT_EQ(body["externalURL"], "http://agent:9400");
  ASSERT_EQ(body["alerts"].size(), 3u);
  const json& first = body["alerts"][0];
  EXPECT_EQ(first["status"], "firing");
  EXPECT_EQ(first["labels"]["gpu"], "0");
  EXPECT_EQ(first["annotations"]["description"], "Above 90C for 5m.");
  EXPECT_EQ(first["startsAt"], "2024-05-01T12:00:00.000Z");
  EXPECT_EQ(first["endsAt"], "2024-05-01T12:04:00.000Z");
  EXPECT_EQ(first["generatorURL"], "http://agent:9400/graph?g0.expr=up&g0.tab=1");
  EXPECT_EQ(first["fingerprint"], fingerprint_text(n.alerts[0].labels));
  EXPECT_EQ(body["alerts"][2]["status"], "resolved");

  json cut = webhook_body(n, 2);
  EXPECT_EQ(cut["alerts"].size(), 2u);
  EXPECT_EQ(cut["truncatedAlerts"], 1);

  n.now_ms = kT0 + 300'000;  // all ended
  EXPECT_EQ(webhook_body(n, 0)["status"], "resolved");
}

TEST(WebhookBody, CommonLabelsAndAnnotationsAreTheSharedOnes) {
  Notification n;
  n.now_ms = kT0;
  n.alerts = {n_alert({{"alertname", "A"}, {"gpu", "0"}, {"node", "n1"}}, kT0, 0, {{"runbook", "r"}, {"summary", "s0"}}),
              n_alert({{"alertname", "A"}, {"gpu", "1"}, {"node", "n1"}}, kT0, 0, {{"runbook", "r"}, {"summary", "s1"}})};
  json body = webhook_body(n, 0);
  EXPECT_EQ(body["commonLabels"], json({{"alertname", "A"}, {"node", "n1"}}));
  EXPECT_EQ(body["commonAnnotations"], json({{"runbook", "r"}}));
  EXPECT_EQ(body["alerts"][0]["endsAt"], "0001-01-01T00:00:00Z");
}

TEST(NotificationTitle, CountsFiringAlerts) {
  Notification n = two_firing_one_resolved();
  EXPECT_EQ(notification_title(n), "[FIRING:2] GpuOverheating");
  n.now_ms = kT0 + 300'000;
  EXPECT_EQ(notification_title(n), "[RESOLVED] GpuOverheating");
  Notification mixed;
  mixed.group_labels = {{"instance", "node-1"}};
  mixed.alerts = {n_alert({{"alertname", "A"}, {"instance", "node-1"}}, kT0, 0),
                  n_alert({{"alertname", "B"}, {"instance", "node-1"}}, kT0, 0)};
  EXPECT_EQ(notification_title(mixed), "[FIRING:2] node-1");
}

TEST(SlackBody, HasTitleTextAndChannel) {
  Notification n = two_firing_one_resolved();
  SlackIntegration slack;
  slack.channel = "#gpu";
  slack.username = "gpuscope";
  json body = slack_body(n, slack);
  EXPECT_EQ(body["channel"], "#gpu");
  EXPECT_EQ(body["username"], "gpuscope");
  EXPECT_FALSE(body.contains("icon_emoji"));
  ASSERT_EQ(body["attachments"].size(), 1u);
  const json& a = body["attachments"][0];
  EXPECT_EQ(a["title"], "[FIRING:2] GpuOverheating");
  EXPECT_EQ(a["fallback"], "[FIRING:2] GpuOverheating");
  EXPECT_EQ(a["title_link"], "http://agent:9400");
  EXPECT_EQ(a["color"], "danger");
  const std::string text = a["text"];
  EXPECT_NE(text.find("• GPU 0 is at 91C (gpu=0 severity=critical)\n  Above 90C for 5m."), std::string::npos) << text;
  EXPECT_NE(text.find("• GPU 1 is at 88C (gpu=1 severity=warning)"), std::string::npos) << text;
  EXPECT_NE(text.find("*Resolved:*\n• GPU 2 is at 95C"), std::string::npos) << text;
  n.now_ms = kT0 + 300'000;
  EXPECT_EQ(slack_body(n, SlackIntegration{})["attachments"][0]["color"], "good");
  EXPECT_FALSE(slack_body(n, SlackIntegration{}).contains("channel"));
}

TEST(PagerDutyBody, TriggerThenResolveWithTheSameDedupKey) {
  Notification n = two_firing_one_resolved();
  PagerDutyIntegration pd;
  pd.routing_key = Secret("R0UT1NG");
  json trigger = pagerduty_body(n, pd, "gpu-node-7");
  EXPECT_EQ(trigger["routing_key"], "R0UT1NG");
  EXPECT_EQ(trigger["event_action"], "trigger");
  const std::string dedup = trigger["dedup_key"];
  EXPECT_EQ(dedup, pagerduty_dedup_key(n.group_key));
  EXPECT_EQ(trigger["payload"]["summary"], "[FIRING:2] GpuOverheating");
  EXPECT_EQ(trigger["payload"]["source"], "gpu-node-7");
  EXPECT_EQ(trigger["payload"]["severity"], "critical");
  EXPECT_EQ(trigger["payload"]["class"], "GpuOverheating");
  EXPECT_EQ(trigger["payload"]["custom_details"]["num_firing"], 2);
  EXPECT_EQ(trigger["payload"]["custom_details"]["num_resolved"], 1);
  EXPECT_NE(trigger["payload"]["custom_details"]["firing"].get<std::string>().find("GPU 0 is at 91C"), std::string::npos);
  EXPECT_EQ(trigger["client"], "gpuscope");
  EXPECT_EQ(trigger["client_url"], "http://agent:9400");

  n.now_ms = kT0 + 300'000;
  json resolve = pagerduty_body(n, pd, "gpu-node-7");
  EXPECT_EQ(resolve["event_action"], "resolve");
  EXPECT_EQ(resolve["dedup_key"], dedup);
  EXPECT_EQ(resolve["routing_key"], "R0UT1NG");
  EXPECT_FALSE(resolve.contains("payload"));

  Notification other = two_firing_one_resolved();
  other.group_key = "{}:{alertname=\"Other\"}";
  EXPECT_NE(pagerduty_dedup_key(other.group_key), dedup);
}

TEST(PagerDutyBody, SeverityMapping) {
  PagerDutyIntegration pd;
  const auto severity_of = [&](std::vector<std::string> levels) {
    Notification n;
    n.now_ms = kT0;
    int gpu = 0;
    for (const std::string& s : levels) n.alerts.push_back(n_alert({{"gpu", std::to_string(gpu++)}, {"severity", s}}, kT0, 0));
    return pagerduty_severity(n, pd);
  };
  EXPECT_EQ(severity_of({"warning", "critical"}), "critical");
  EXPECT_EQ(severity_of({"warn"}), "warning");
  EXPECT_EQ(severity_of({"info"}), "info");
  EXPECT_EQ(severity_of({"error", "info"}), "error");
  EXPECT_EQ(severity_of({"page-me"}), "error");
  EXPECT_EQ(severity_of({}), "error");
  pd.severity = "info";
  EXPECT_EQ(severity_of({"critical"}), "info");
}

TEST(EmailMessage, HeadersAndPlainTextBody) {
  Notification n = two_firing_one_resolved();
  EmailIntegration email;
  email.from = "gpuscope@example.com";
  email.to = {"a@example.com", "b@example.com"};
  const std::string m = email_message(n, email, "node-7");
  EXPECT_EQ(m.find("From: gpuscope@example.com\r\n"), 0u);
  EXPECT_NE(m.find("\r\nTo: a@example.com, b@example.com\r\n"), std::string::npos);
  EXPECT_NE(m.find("\r\nSubject: [FIRING:2] GpuOverheating\r\n"), std::string::npos);
  EXPECT_NE(m.find("\r\nDate: Wed, 01 May 2024 12:01:00 +0000\r\n"), std::string::npos);
  EXPECT_NE(m.find("@node-7>\r\n"), std::string::npos);
  EXPECT_NE(m.find("\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"),
            std::string::npos);
  EXPECT_NE(m.find("Firing (2):\r\n\r\n- GPU 0 is at 91C\r\n  Above 90C for 5m.\r\n"
                   "  Labels: alertname=GpuOverheating, gpu=0, severity=critical\r\n"
                   "  Started: 2024-05-01T12:00:00.000Z\r\n  Source: http://agent:9400/graph?g0.expr=up&g0.tab=1\r\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("Resolved (1):\r\n\r\n- GPU 2 is at 95C\r\n"), std::string::npos) << m;
  EXPECT_NE(m.find("  Ended: 2024-05-01T12:00:30.000Z\r\n"), std::string::npos);
  // No bare LF anywhere: SMTP needs CRLF.
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] == '\n') {
      ASSERT_TRUE(i > 0 && m[i - 1] == '\r') << "bare LF at " << i;
    }
  }
}

TEST(EmailMessage, HeaderInjectionAndNonAsciiSubjects) {
  EmailIntegration email;
  email.from = "g@x.org";
  email.to = {"a@x.org"};
  const auto headers_of = [&](std::string alertname) {
    Notification n;
    n.now_ms = kT0;
    n.alerts = {n_alert({{"alertname", std::move(alertname)}}, kT0, 0)};
    const std::string m = email_message(n, email, "h");
    return m.substr(0, m.find("\r\n\r\n") + 2);
  };
  const std::string ascii = headers_of("Hot\r\nBcc: evil@x.org");
  EXPECT_EQ(ascii.find("\r\nBcc:"), std::string::npos) << ascii;
  EXPECT_NE(ascii.find("Subject: [FIRING:1] Hot  Bcc: evil@x.org\r\n"), std::string::npos) << ascii;
  const std::string utf8 = headers_of("Ã" "berhitzung\r\nBcc: evil@x.org");
  EXPECT_EQ(utf8.find("\r\nBcc:"), std::string::npos) << utf8;
  EXPECT_NE(utf8.find("Subject: =?UTF-8?B?"), std::string::npos) << utf8;
}

}  // namespace
}  // namespace gpuscope::notify
