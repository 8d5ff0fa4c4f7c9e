#include "http/basic_auth.h"

#include <gtest/gtest.h>

#include <sstream>

#include "http/web_access.h"

namespace gpuscope::http {
namespace {

// Openwall's crypt_blowfish test vectors (hashes computed by others, at cost 5: fast).
constexpr const char* kBasicAuthUuHash = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";  // "U*U"
constexpr const char* kBasicAuthUuuHash = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK";  // "U*U*"

// RFC 7617's encoding, written out: base64 of "user:password".
std::string basic_header(const std::string& user_password) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "Basic ";
  std::size_t i = 0;
  for (; i + 2 < user_password.size(); i += 3) {
    const unsigned n = (unsigned char)user_password[i] << 16 | (unsigned char)user_password[i + 1] << 8 |
                       (unsigned char)user_password[i + 2];
    out += {table[n >> 18], table[(n >> 12) & 63], table[(n >> 6) & 63], table[n & 63]};
  }
  if (user_password.size() - i == 1) {
    const unsigned n = (unsigned char)user_password[i] << 16;
    out += {table[n >> 18], table[(n >> 12) & 63], '=', '='};
  } else if (user_password.size() - i == 2) {
    const unsigned n = (unsigned char)user_password[i] << 16 | (unsigned char)user_password[i + 1] << 8;
    out += {table[n >> 18], table[(n >> 12) & 63], table[(n >> 6) & 63], '='};
  }
  return out;
}

TEST(BasicAuth, ParsesRfc7617Credentials) {
  // "Aladdin:open sesame" is RFC 7617's own example.
  auto c = parse_basic_credentials("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->first, "Aladdin");
  EXPECT_EQ(c->second, "open sesame");
  auto colon = parse_basic_credentials(basic_header("u:pa:ss"));  // the first colon splits
  ASSERT_TRUE(colon);
  EXPECT_EQ(colon->second, "pa:ss");
  EXPECT_TRUE(parse_basic_credentials("basic " + basic_header("a:b").substr(6)));  // scheme is case-insensitive
  EXPECT_FALSE(parse_basic_credentials("Bearer abc"));
  EXPECT_FALSE(parse_basic_credentials("Basic !!!!"));
  EXPECT_FALSE(parse_basic_credentials("Basic QWxhZGRpbg=="));  // no colon
  EXPECT_FALSE(parse_basic_credentials("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ"));  // not a multiple of 4
  EXPECT_FALSE(parse_basic_credentials("Basic QW=hZGRp"));  // padding in the middle
}

TEST(BasicAuth, TheRightPasswordPassesAndEveryWrongOneSaysWhy) {
  BasicAuthenticator auth({{"alice", kBasicAuthUuHash}, {"bob", kBasicAuthUuuHash}});
  EXPECT_TRUE(auth.check(basic_header("alice:U*U")).ok());
  EXPECT_TRUE(auth.check(basic_header("bob:U*U*")).ok());
  auto wrong = auth.check(basic_header("alice:U*U*"));  // bob's password is not alice's
  EXPECT_EQ(wrong.refusal, AuthRefusal::kWrongPassword);
  EXPECT_EQ(wrong.user, "alice");
  EXPECT_EQ(auth.check(basic_header("carol:U*U")).refusal, AuthRefusal::kUnknownUser);
  EXPECT_EQ(auth.check(std::nullopt).refusal, AuthRefusal::kMissingCredentials);
  EXPECT_EQ(auth.check("Basic nonsense!").refusal, AuthRefusal::kMalformedCredentials);
  EXPECT_EQ(auth.check(basic_header("alice:")).refusal, AuthRefusal::kWrongPassword);
  EXPECT_EQ(auth.check(basic_header("Alice:U*U")).refusal, AuthRefusal::kUnknownUser);  // names are exact
}

TEST(BasicAuth, AVerifiedPasswordIsCachedAndAWrongOneAlwaysPaysBcrypt) {
  BasicAuthenticator auth(std::vector<std::pair<std::string, std::string>>{{"alice", kBasicAuthUuHash}});
  ASSERT_TRUE(auth.check(basic_header("alice:U*U")).ok());
  EXPECT_EQ(auth.bcrypt_runs(), 1u);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(auth.check(basic_header("alice:U*U")).ok());
  EXPECT_EQ(auth.bcrypt_runs(), 1u);  // served from the cache
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(auth.check(basic_header("alice:wrong")).ok());
  EXPECT_EQ(auth.bcrypt_runs(), 4u);  // failures are never cached
  // An unknown user pays a bcrypt too (the decoy), so timing does not reveal which users exist.
  ASSERT_FALSE(auth.check(basic_header("mallory:U*U")).ok());
  EXPECT_EQ(auth.bcrypt_runs(), 5u);
  // A near miss of the cached password is not a cache hit.
  EXPECT_FALSE(auth.check(basic_header("alice:U*U ")).ok());
}

TEST(BasicAuth, ConstantTimeEqualIsEquality) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

struct WebAccessFixture {
  std::ostringstream log_text;
  log::Logger log{log_text, log::Level::kDebug};
  int inner_calls = 0;
};

WebConfig web_access_config() {
  WebConfig c;
  c.basic_auth_users = {{"alice", kBasicAuthUuHash}};
  c.headers = {{"X-Content-Type-Options", "nosniff"}};
  c.auth_excluded_paths = {"/healthz"};
  return c;
}

TEST(WebAccess, RefusesWithAChallengeCountsAndLogsTheUserButNeverThePassword) {
  WebAccessFixture f;
  WebAccess access(web_access_config(), "", f.log);
  auto handler = access.wrap([&](const HttpRequest&) {
    ++f.inner_calls;
    return HttpResponse{200, "text/plain", "ok", {}, nullptr};
  });
  auto refused = handler(HttpRequest("GET", "/metrics", {{"Authorization", basic_header("alice:sw0rdfish")}}));
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(f.inner_calls, 0);
  bool challenge = false, extra = false;
  for (const auto& [k, v] : refused.headers) {
    challenge = challenge || (k == "WWW-Authenticate" && v.starts_with("Basic realm=\"gpuscope\""));
    extra = extra || (k == "X-Content-Type-Options" && v == "nosniff");
  }
  EXPECT_TRUE(challenge);
  EXPECT_TRUE(extra);  // configured headers go on refusals too
  EXPECT_EQ(access.refused(Refusal::kWrongPassword), 1u);
  EXPECT_NE(f.log_text.str().find("user=alice"), std::string::npos) << f.log_text.str();
  EXPECT_EQ(f.log_text.str().find("sw0rdfish"), std::string::npos) << f.log_text.str();

  EXPECT_EQ(handler(HttpRequest("GET", "/api/v1/gpus")).status, 401);
  EXPECT_EQ(access.refused(Refusal::kMissingCredentials), 1u);
  auto ok = handler(HttpRequest("GET", "/metrics", {{"Authorization", basic_header("alice:U*U")}}));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "ok");
  ASSERT_EQ(ok.headers.size(), 1u);
  EXPECT_EQ(ok.headers[0].first, "X-Content-Type-Options");
  EXPECT_EQ(f.inner_calls, 1);
}

TEST(WebAccess, ExcludedPathsAreOpenAlsoBelowTheRoutePrefixAndNothingElseIs) {
  WebAccessFixture f;
  WebAccess access(web_access_config(), "/gpuscope", f.log);
  auto handler = access.wrap([&](const HttpRequest&) { return HttpResponse{200, "text/plain", "ok", {}, nullptr}; });
  EXPECT_EQ(handler(HttpRequest("GET", "/healthz")).status, 200);
  EXPECT_EQ(handler(HttpRequest("GET", "/gpuscope/healthz")).status, 200);
  EXPECT_EQ(handler(HttpRequest("GET", "/healthz/")).status, 401);  // exact paths only
  EXPECT_EQ(handler(HttpRequest("GET", "/health")).status, 401);
  EXPECT_EQ(handler(HttpRequest("GET", "/gpuscope/metrics")).status, 401);
}

TEST(WebAccess, ApplyingANewConfigChangesTheAnswerAndKeepsTheCacheOfUnchangedUsers) {
  WebAccessFixture f;
  WebAccess access(web_access_config(), "", f.log);
  auto handler = access.wrap([&](const HttpRequest&) { return HttpResponse{200, "text/plain", "ok", {}, nullptr}; });
  const HttpRequest alice("GET", "/metrics", {{"Authorization", basic_header("alice:U*U")}});
  EXPECT_EQ(handler(alice).status, 200);
  WebConfig other = web_access_config();
  other.basic_auth_users = {{"alice", kBasicAuthUuuHash}};  // alice's password is now U*U*
  access.apply(other);
  EXPECT_EQ(handler(alice).status, 401);
  EXPECT_EQ(handler(HttpRequest("GET", "/metrics", {{"Authorization", basic_header("alice:U*U*")}})).status, 200);
  WebConfig open;
  access.apply(open);
  EXPECT_EQ(handler(HttpRequest("GET", "/metrics")).status, 200);
}

}  // namespace
}  // namespace gpuscope::http
