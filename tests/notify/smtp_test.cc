// Email over SMTP through libcurl, against a tiny SMTP sink on a loopback socket.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "notify/notifier.h"
#include "notify_test_support.h"
#include "smtp_sink.h"

namespace gpuscope::notify {
namespace {

using testing::kT0;

using namespace std::chrono_literals;
using testing::SmtpSink;
using testing::eventually;
using testing::firing_alert;
using testing::LogCapture;



std::unique_ptr<Notifier> email_notifier(const std::string& smarthost, LogCapture& logs, const std::string& extra = "") {
  auto config = parse_notify_config("route: {receiver: mail, group_by: [alertname], group_wait: 0s}\n"
                                    "receivers:\n  - name: mail\n    email_configs:\n"
                                    "      - to: [ops@example.com, gpu@example.com]\n"
                                    "        from: gpuscope@example.com\n"
                                    "        smarthost: " + smarthost + "\n"
                                    "        hello: agent.example.com\n"
                                    "        require_tls: false\n" + extra,
                                    "test.yml", [](const std::string& name) -> std::optional<std::string> {
                                      if (name == "SMTP_PASSWORD") return "s3cret";
                                      return std::nullopt;
                                    });
  EXPECT_TRUE(config.has_value()) << (config ? "" : config.error()[0]);
  NotifierOptions options;
  options.external_url = "http://agent:9400";
  options.source = "node-7";
  options.delivery.initial_backoff = 20ms;
  options.delivery.max_attempts = 2;
  auto notifier = Notifier::create(std::move(*config), logs.log, options);
  EXPECT_TRUE(notifier.has_value());
  return std::move(*notifier);
}

TEST(Email, ReachesTheSmtpServerWithHeadersAndBody) {
  SmtpSink sink;
  LogCapture logs;
  auto notifier = email_notifier(sink.url(), logs);
  notifier->submit({firing_alert({{"alertname", "GpuHot"}, {"gpu", "0"}}, kT0, kT0 + 240'000,
                                 {{"summary", "GPU 0 is hot"}, {"description", "before\n.\nafter"}})},
                   kT0);
  ASSERT_TRUE(eventually([&] { return !sink.messages().empty(); })) << logs.text();
  const std::vector<std::string> commands = sink.commands();
  ASSERT_GE(commands.size(), 5u);
  EXPECT_EQ(commands[0], "EHLO agent.example.com");
  EXPECT_TRUE(commands[1].starts_with("MAIL FROM:<gpuscope@example.com>")) << commands[1];
  EXPECT_EQ(commands[2], "RCPT TO:<ops@example.com>");
  EXPECT_EQ(commands[3], "RCPT TO:<gpu@example.com>");
  EXPECT_EQ(commands[4], "DATA");
  const std::string message = sink.messages()[0];
  EXPECT_EQ(message.find("From: gpuscope@example.com\r\n"), 0u) << message;
  EXPECT_NE(message.find("\r\nTo: ops@example.com, gpu@example.com\r\n"), std::string::npos);
  EXPECT_NE(message.find("\r\nSubject: [FIRING:1] GpuHot\r\n"), std::string::npos);
  EXPECT_NE(message.find("\r\n\r\n[FIRING:1] GpuHot\r\n"), std::string::npos);
  EXPECT_NE(message.find("- GPU 0 is hot\r\n"), std::string::npos);
  // A line of a lone dot would end DATA early: libcurl dot-stuffs it, the sink sees the wire format.
  EXPECT_NE(message.find("  before\r\n..\r\nafter\r\n"), std::string::npos) << message;
  EXPECT_NE(message.find("Labels: alertname=GpuHot, gpu=0"), std::string::npos);
  ASSERT_TRUE(eventually([&] {
    for (const auto& c : notifier->stats().integrations) {
      if (c.integration == "email" && c.total == 1) return c.failed == 0;
    }
    return false;
  }));
}

TEST(Email, AuthenticatesWithPlain) {
  SmtpSink sink;
  LogCapture logs;
  auto notifier = email_notifier(sink.url(), logs, "        auth_username: bot\n        auth_password: ${SMTP_PASSWORD}\n");
  notifier->submit({firing_alert({{"alertname", "GpuHot"}}, kT0, kT0 + 240'000)}, kT0);
  ASSERT_TRUE(eventually([&] { return !sink.messages().empty(); })) << logs.text();
  // base64("\0bot\0s3cret")
  bool authenticated = false;
  for (const std::string& c : sink.commands()) {
    if (c.find("AGJvdABzM2NyZXQ=") != std::string::npos) authenticated = true;
  }
  EXPECT_TRUE(authenticated);
  EXPECT_EQ(logs.text().find("s3cret"), std::string::npos);
}

TEST(Email, APermanentRefusalIsCountedAsFailedWithoutRetry) {
  SmtpSink sink(/*reject_data=*/true);
  LogCapture logs;
  auto notifier = email_notifier(sink.url(), logs);
  notifier->submit({firing_alert({{"alertname", "GpuHot"}}, kT0, kT0 + 240'000)}, kT0);
  ASSERT_TRUE(eventually([&] {
    for (const auto& c : notifier->stats().integrations) {
      if (c.integration == "email") return c.failed == 1;
    }
    return false;
  })) << logs.text();
  EXPECT_EQ(sink.messages().size(), 1u);
}

TEST(Email, RequireTlsRefusesAServerWithoutStartTls) {
  SmtpSink sink;
  LogCapture logs;
  auto config = parse_notify_config("route: {receiver: mail, group_wait: 0s}\nreceivers:\n  - name: mail\n"
                                    "    email_configs: [{to: a@b.c, from: d@e.f, smarthost: '" + sink.url() + "'}]\n",
                                    "t.yml");
  ASSERT_TRUE(config.has_value());
  NotifierOptions options;
  options.delivery.max_attempts = 1;
  auto notifier = Notifier::create(std::move(*config), logs.log, options);
  ASSERT_TRUE(notifier.has_value());
  (*notifier)->submit({firing_alert({{"alertname", "GpuHot"}}, kT0, kT0 + 240'000)}, kT0);
  ASSERT_TRUE(eventually([&] {
    for (const auto& c : (*notifier)->stats().integrations) {
      if (c.integration == "email") return c.failed == 1;
    }
    return false;
  })) << logs.text();
  EXPECT_TRUE(sink.messages().empty());
}

}  // namespace
}  // namespace gpuscope::notify
