// The metadata endpoint's protocols against a fake metadata server on loopback: GCE's TRUE/FALSE with its
// Metadata-Flavor header, AWS IMDSv2's token (asked for once, renewed before it ends and on a 401) and
// its instance-action JSON, any URL's answers, and every way an endpoint can fail being an error, never
// a notice and never a hang past the timeout.
#include "agent/metadata_endpoint.h"

#include <gtest/gtest.h>

#include <thread>

#include "preemption_test_support.h"

namespace gpuscope::agent::preemption_endpoint_test {

using namespace std::chrono_literals;
using preemption_testing::answer;
using preemption_testing::AwsMetadata;
using preemption_testing::FakeMetadataServer;
using preemption_testing::GceMetadata;

MetadataEndpoint endpoint_for(PreemptionSource source, std::string base_url,
                              const model::Clock& clock = model::system_clock(),
                              std::chrono::milliseconds timeout = 2000ms) {
  MetadataEndpointOptions options;
  options.source = std::move(source);
  options.base_url = std::move(base_url);
  options.timeout = timeout;
  options.clock = &clock;
  return MetadataEndpoint(std::move(options));
}

const PreemptionSource kGce{PreemptionProvider::kGce, {}};
const PreemptionSource kAws{PreemptionProvider::kAws, {}};

// --- flags ---

TEST(PreemptionNoticeFlag, NamesAProviderOrAnHttpUrl) {
  EXPECT_EQ(parse_preemption_notice("gce"), kGce);
  EXPECT_EQ(parse_preemption_notice("aws"), kAws);
  EXPECT_EQ(parse_preemption_notice("http://10.0.0.1:8080/preempted"),
            (PreemptionSource{PreemptionProvider::kUrl, "http://10.0.0.1:8080/preempted"}));
  EXPECT_EQ(parse_preemption_notice("https://spot.example/notice?node=a")->provider, PreemptionProvider::kUrl);
  EXPECT_EQ(parse_preemption_notice("http://[::1]:80/x")->provider, PreemptionProvider::kUrl);
}

TEST(PreemptionNoticeFlag, AnythingElseIsAOneLineErrorNamingTheFlagAndValue) {
  EXPECT_EQ(parse_preemption_notice("azure").error(),
            "invalid value 'azure' for --preemption-notice (gce, aws, or an http:// or https:// URL)");
  for (const char* bad : {"", "GCE", "ftp://host/x", "http://", "http://:80/x", "http://host:99999/", "http://a b/",
                          "metadata.google.internal", "http://host:port/"}) {
    auto parsed = parse_preemption_notice(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_NE(parsed.error().find("for --preemption-notice"), std::string::npos) << parsed.error();
    EXPECT_EQ(parsed.error().find('\n'), std::string::npos) << parsed.error();
  }
  EXPECT_EQ(parse_preemption_notice("x\ny").error().find('\n'), std::string::npos);
}

TEST(PreemptionMetadataUrlFlag, IsAnHttpBaseWithoutTrailingSlash) {
  EXPECT_EQ(parse_metadata_base_url("http://127.0.0.1:8080").value(), "http://127.0.0.1:8080");
  EXPECT_EQ(parse_metadata_base_url("http://127.0.0.1:8080/").value(), "http://127.0.0.1:8080");
  EXPECT_EQ(parse_metadata_base_url("https://proxy.local/metadata/").value(), "https://proxy.local/metadata");
  EXPECT_EQ(parse_metadata_base_url("127.0.0.1:8080").error(),
            "invalid value '127.0.0.1:8080' for --preemption-metadata-url (http://HOST[:PORT], e.g. http://127.0.0.1:8080)");
  EXPECT_FALSE(parse_metadata_base_url("http://host/?x=1").has_value());
  EXPECT_FALSE(parse_metadata_base_url("").has_value());
}

TEST(PreemptionMetadataEndpoint, PollsTheProvidersOwnAddressesUnlessTold) {
  EXPECT_EQ(endpoint_for(kGce, "").polled_url(), "http://metadata.google.internal/computeMetadata/v1/instance/preempted");
  EXPECT_EQ(endpoint_for(kAws, "").polled_url(), "http://169.254.169.254/latest/meta-data/spot/instance-action");
  EXPECT_EQ(endpoint_for(kAws, "http://127.0.0.1:1").polled_url(),
            "http://127.0.0.1:1/latest/meta-data/spot/instance-action");
  const PreemptionSource url{PreemptionProvider::kUrl, "http://metadata.invalid/spot/notice?node=a"};
  EXPECT_EQ(endpoint_for(url, "").polled_url(), "http://metadata.invalid/spot/notice?node=a");
  EXPECT_EQ(endpoint_for(url, "http://127.0.0.1:1").polled_url(), "http://127.0.0.1:1/spot/notice?node=a");
}

// --- GCE ---

TEST(PreemptionMetadataEndpoint, GceTrueIsANoticeAndTheMetadataFlavorHeaderIsSent) {
  GceMetadata gce;
  gce.preempted = true;
  FakeMetadataServer server([&](const http::HttpRequest& r) { return gce(r); });
  auto endpoint = endpoint_for(kGce, server.base_url());
  auto polled = endpoint.poll();
  ASSERT_TRUE(polled.has_value()) << polled.error();
  ASSERT_TRUE(polled->has_value());
  EXPECT_EQ((*polled)->provider, "gce");
  EXPECT_EQ((*polled)->action, "");
  EXPECT_FALSE((*polled)->action_time.has_value());
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].path, kGcePreemptedPath);
  EXPECT_EQ(seen[0].flavor, "Google");
}

TEST(PreemptionMetadataEndpoint, GceFalseIsNoNotice) {
  GceMetadata gce;
  FakeMetadataServer server([&](const http::HttpRequest& r) { return gce(r); });
  auto endpoint = endpoint_for(kGce, server.base_url());
  auto polled = endpoint.poll();
  ASSERT_TRUE(polled.has_value()) << polled.error();
  EXPECT_FALSE(polled->has_value());
}

TEST(PreemptionMetadataEndpoint, GceRefusalAndGarbageAreErrorsNotNotices) {
  FakeMetadataServer forbidden([](const http::HttpRequest&) { return answer(403, "Missing Metadata-Flavor:Google header."); });
  auto refused = endpoint_for(kGce, forbidden.base_url()).poll();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error(), "HTTP 403: Missing Metadata-Flavor:Google header.");

  FakeMetadataServer garbage([](const http::HttpRequest&) { return answer(200, "MAYBE\x01"); });
  auto unclear = endpoint_for(kGce, garbage.base_url()).poll();
  ASSERT_FALSE(unclear.has_value());
  EXPECT_EQ(unclear.error(), "unexpected answer 'MAYBE\\x01' (TRUE or FALSE)");
}

// --- AWS ---

TEST(PreemptionMetadataEndpoint, AwsAsksForATokenThenReadsTheInstanceActionWithIt) {
  AwsMetadata aws;
  aws.set_action(R"({"action": "terminate", "time": "2026-11-27T08:22:00Z"})");
  FakeMetadataServer server([&](const http::HttpRequest& r) { return aws(r); });
  auto endpoint = endpoint_for(kAws, server.base_url());
  auto polled = endpoint.poll();
  ASSERT_TRUE(polled.has_value()) << polled.error();
  ASSERT_TRUE(polled->has_value());
  EXPECT_EQ((*polled)->provider, "aws");
  EXPECT_EQ((*polled)->action, "terminate");
  ASSERT_TRUE((*polled)->action_time.has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>((*polled)->action_time->time_since_epoch()).count(),
            1795767720);
  EXPECT_EQ((*polled)->detail, R"({"action": "terminate", "time": "2026-11-27T08:22:00Z"})");
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].method, "PUT");
  EXPECT_EQ(seen[0].path, kAwsTokenPath);
  EXPECT_EQ(seen[0].token_ttl, "21600");
  EXPECT_EQ(seen[1].method, "GET");
  EXPECT_EQ(seen[1].path, kAwsInstanceActionPath);
  EXPECT_EQ(seen[1].token, "token-1");
}

TEST(PreemptionMetadataEndpoint, Aws404IsNoNoticeAndTheTokenIsKeptForTheNextPolls) {
  AwsMetadata aws;
  FakeMetadataServer server([&](const http::HttpRequest& r) { return aws(r); });
  auto endpoint = endpoint_for(kAws, server.base_url());
  for (int i = 0; i < 3; ++i) {
    auto polled = endpoint.poll();
    ASSERT_TRUE(polled.has_value()) << polled.error();
    EXPECT_FALSE(polled->has_value());
  }
  EXPECT_EQ(aws.tokens_issued(), 1);
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST(PreemptionMetadataEndpoint, AwsTokenIsRenewedOnA401) {
  AwsMetadata aws;
  FakeMetadataServer server([&](const http::HttpRequest& r) { return aws(r); });
  auto endpoint = endpoint_for(kAws, server.base_url());
  ASSERT_TRUE(endpoint.poll().has_value());
  aws.revoke_tokens();
  aws.set_action(R"({"action": "stop", "time": "2026-11-27T08:22:00Z"})");
  auto polled = endpoint.poll();
  ASSERT_TRUE(polled.has_value()) << polled.error();
  ASSERT_TRUE(polled->has_value());
  EXPECT_EQ((*polled)->action, "stop");
  EXPECT_EQ(aws.tokens_issued(), 2);
  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 5u);  // token, action; action (401), token, action
  EXPECT_EQ(seen[2].token, "token-1");
  EXPECT_EQ(seen[3].method, "PUT");
  EXPECT_EQ(seen[4].token, "token-2");
}

TEST(PreemptionMetadataEndpoint, AwsTokenIsRenewedBeforeItExpiresOnTheClock) {
  model::VirtualClock clock;
  AwsMetadata aws;
  FakeMetadataServer server([&](const http::HttpRequest& r) { return aws(r); });
  auto endpoint = endpoint_for(kAws, server.base_url(), clock);
  ASSERT_TRUE(endpoint.poll().has_value());
  clock.advance(kAwsTokenTtl - kAwsTokenRenewMargin - 1s);
  ASSERT_TRUE(endpoint.poll().has_value());
  EXPECT_EQ(aws.tokens_issued(), 1);
  clock.advance(1s);
  ASSERT_TRUE(endpoint.poll().has_value());
  EXPECT_EQ(aws.tokens_issued(), 2);
}

TEST(PreemptionMetadataEndpoint, AwsTokenRefusedOrActionGarbledIsAnError) {
  FakeMetadataServer no_imds([](const http::HttpRequest&) { return answer(403, ""); });
  auto refused = endpoint_for(kAws, no_imds.base_url()).poll();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error(), "token: HTTP 403");

  AwsMetadata aws;
  aws.set_action("<html>not json</html>");
  FakeMetadataServer garbled([&](const http::HttpRequest& r) { return aws(r); });
  auto unclear = endpoint_for(kAws, garbled.base_url()).poll();
  ASSERT_FALSE(unclear.has_value());
  EXPECT_EQ(unclear.error(), "unexpected answer '<html>not json</html>' (a JSON object with action and time)");

  aws.set_action(R"({"action": "terminate", "time": "soon"})");  // an unreadable time still is a notice
  auto undated = endpoint_for(kAws, garbled.base_url()).poll();
  ASSERT_TRUE(undated.has_value()) << undated.error();
  ASSERT_TRUE(undated->has_value());
  EXPECT_FALSE((*undated)->action_time.has_value());
}

// --- any URL ---

TEST(PreemptionMetadataEndpoint, AUrlSaysNoWith404EmptyOrFalseAndAnythingElseIsTheNotice) {
  std::mutex mu;
  http::HttpResponse next = answer(404, "");
  FakeMetadataServer server([&](const http::HttpRequest&) {
    std::lock_guard lock(mu);
    return next;
  });
  auto endpoint = endpoint_for({PreemptionProvider::kUrl, server.base_url() + "/spot/notice"}, "");
  auto set = [&](int status, std::string body) {
    std::lock_guard lock(mu);
    next = answer(status, std::move(body));
  };
  for (const char* no : {"", "  \n", "FALSE", "false\n", "0"}) {
    set(200, no);
    auto polled = endpoint.poll();
    ASSERT_TRUE(polled.has_value()) << polled.error();
    EXPECT_FALSE(polled->has_value()) << no;
  }
  set(404, "no notice");
  EXPECT_FALSE(endpoint.poll().value().has_value());

  set(200, "  node drains at 12:00\n");
  auto polled = endpoint.poll();
  ASSERT_TRUE(polled.has_value()) << polled.error();
  ASSERT_TRUE(polled->has_value());
  EXPECT_EQ((*polled)->provider, "url");
  EXPECT_EQ((*polled)->detail, "node drains at 12:00");

  set(200, std::string(10000, 'x'));  // bounded: the detail goes into logs and notifications
  EXPECT_EQ(endpoint.poll().value()->detail, std::string(kMaxNoticeDetailBytes, 'x') + "...");
  EXPECT_EQ(server.requests().back().path, "/spot/notice");
  EXPECT_EQ(server.requests().back().flavor, "");
}

TEST(PreemptionMetadataEndpoint, TheMetadataUrlReplacesAUrlsHostAndKeepsItsPath) {
  FakeMetadataServer server([](const http::HttpRequest&) { return answer(200, "TRUE"); });
  auto endpoint = endpoint_for({PreemptionProvider::kUrl, "http://metadata.invalid/spot/notice"}, server.base_url());
  auto polled = endpoint.poll();
  ASSERT_TRUE(polled.has_value()) << polled.error();
  EXPECT_TRUE(polled->has_value());
  EXPECT_EQ(server.requests().at(0).path, "/spot/notice");
}

// --- broken endpoints ---

TEST(PreemptionMetadataEndpoint, ServerErrorsAndARefusedPortAreErrors) {
  FakeMetadataServer failing([](const http::HttpRequest&) { return answer(500, "boom\n"); });
  for (const auto& source : {kGce, kAws, PreemptionSource{PreemptionProvider::kUrl, failing.base_url() + "/x"}}) {
    auto polled = endpoint_for(source, failing.base_url()).poll();
    ASSERT_FALSE(polled.has_value()) << preemption_provider_name(source.provider);
    EXPECT_NE(polled.error().find("HTTP 500: boom"), std::string::npos) << polled.error();
  }
  const std::string nobody = "http://127.0.0.1:" + std::to_string(preemption_testing::closed_port());
  for (const auto& source : {kGce, kAws, PreemptionSource{PreemptionProvider::kUrl, nobody + "/x"}}) {
    auto polled = endpoint_for(source, nobody).poll();
    ASSERT_FALSE(polled.has_value()) << preemption_provider_name(source.provider);
    EXPECT_FALSE(polled.error().empty());
    EXPECT_EQ(polled.error().find('\n'), std::string::npos) << polled.error();
  }
}

TEST(PreemptionMetadataEndpoint, AnEndpointSlowerThanTheTimeoutIsAnError) {
  FakeMetadataServer server([&](const http::HttpRequest&) {
    server.gate.wait(30s);
    return answer(200, "TRUE");
  });
  auto polled = endpoint_for(kGce, server.base_url(), model::system_clock(), 200ms).poll();
  ASSERT_FALSE(polled.has_value());
  EXPECT_NE(polled.error().find("timed out"), std::string::npos) << polled.error();
}

TEST(PreemptionMetadataEndpoint, CancelEndsAPollInFlightAndEveryLaterOne) {
  FakeMetadataServer server([&](const http::HttpRequest&) {
    server.gate.wait(30s);
    return answer(200, "TRUE");
  });
  // A timeout longer than the gate: only the cancel can make this poll end in an error.
  auto endpoint = endpoint_for(kGce, server.base_url(), model::system_clock(), 60s);
  std::expected<std::optional<PreemptionNotice>, std::string> polled;
  std::thread poller([&] { polled = endpoint.poll(); });
  ASSERT_TRUE(server.gate.wait_held());
  endpoint.cancel();
  poller.join();
  ASSERT_FALSE(polled.has_value());
  EXPECT_EQ(polled.error(), "cancelled");
  server.gate.open();
  auto later = endpoint.poll();
  ASSERT_FALSE(later.has_value());
  EXPECT_EQ(later.error(), "cancelled");
  EXPECT_EQ(server.requests().size(), 1u);
}

}  // namespace gpuscope::agent::preemption_endpoint_test
