#include "http/web_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "http/tls_priorities.h"

namespace gpuscope::http {
namespace {

// A hash htpasswd -nbB -C 5 wrote (any well-formed bcrypt hash parses).
constexpr const char* kWebConfigTestHash = "$2y$05$95Fwdp8nJ/iBr.Gh9LR/uuZx3wapY/8P9yv7ZkdUQS4wpdm5EdEJG";

std::expected<WebConfig, std::string> parse_web(const std::string& text) {
  return parse_web_config(text, "/etc/gpuscope/web.yml");
}

std::string web_error(const std::string& text) {
  auto c = parse_web(text);
  EXPECT_FALSE(c.has_value()) << text;
  return c ? std::string() : c.error();
}

TEST(WebConfig, ReadsEveryPartOfAGoodFile) {
  auto c = parse_web(std::string("tls_server_config:\n"
                                 "  cert_file: server.crt\n"
                                 "  key_file: /abs/server.key\n"
                                 "  client_ca_file: ca.crt\n"
                                 "  client_auth_type: RequireAndVerifyClientCert\n"
                                 "  min_version: TLS13\n"
                                 "  curve_preferences: [X25519, CurveP256]\n"
                                 "http_server_config:\n"
                                 "  http2: true\n"
                                 "  headers:\n"
                                 "    X-Frame-Options: deny\n"
                                 "    Strict-Transport-Security: max-age=31536000\n"
                                 "    X-XSS-Protection: ''\n"
                                 "basic_auth_users:\n"
                                 "  alice: ") + kWebConfigTestHash + "\n"
                                 "auth_excluded_paths: [/healthz, /health]\n");
  ASSERT_TRUE(c.has_value()) << c.error();
  ASSERT_TRUE(c->tls.has_value());
  // Relative names are the config's directory's, as exporter-toolkit resolves them.
  EXPECT_EQ(c->tls->cert.file, "/etc/gpuscope/server.crt");
  EXPECT_EQ(c->tls->key.file, "/abs/server.key");
  EXPECT_EQ(c->tls->client_ca.file, "/etc/gpuscope/ca.crt");
  EXPECT_EQ(c->tls->cert.line, 2);
  EXPECT_EQ(c->tls->client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(c->tls->min_version, TlsVersion::kTls13);
  EXPECT_EQ(c->tls->max_version, TlsVersion::kTls13);
  EXPECT_EQ(c->tls->curve_preferences, (std::vector<std::string>{"X25519", "CurveP256"}));
  // A blank header is unset, as in exporter-toolkit.
  ASSERT_EQ(c->headers.size(), 2u);
  EXPECT_EQ(c->headers[0], (std::pair<std::string, std::string>{"X-Frame-Options", "deny"}));
  ASSERT_EQ(c->basic_auth_users.size(), 1u);
  EXPECT_EQ(c->basic_auth_users[0].first, "alice");
  EXPECT_EQ(c->basic_auth_users[0].second, kWebConfigTestHash);
  EXPECT_EQ(c->auth_excluded_paths, (std::vector<std::string>{"/healthz", "/health"}));
}

TEST(WebConfig, ClientAllowedSansAreReadInOrderWithAVerifyingOrRequiringClientAuth) {
  auto c = parse_web("tls_server_config:\n  cert_file: a\n  key_file: k\n  client_ca_file: ca\n"
                     "  client_auth_type: RequireAndVerifyClientCert\n"
                     "  client_allowed_sans: [prometheus.example, 10.0.0.7, 'spiffe://c/ns/m/sa/prom', ops@example.org]\n");
  ASSERT_TRUE(c.has_value()) << c.error();
  EXPECT_EQ(c->tls->client_allowed_sans,
            (std::vector<std::string>{"prometheus.example", "10.0.0.7", "spiffe://c/ns/m/sa/prom", "ops@example.org"}));
  // RequireAnyClientCert is allowed as in exporter-toolkit; an empty list asks for nothing, with any type.
  EXPECT_TRUE(parse_web("tls_server_config:\n  cert_file: a\n  key_file: k\n  client_auth_type: RequireAnyClientCert\n"
                        "  client_allowed_sans: [x]\n"));
  auto empty = parse_web("tls_server_config:\n  cert_file: a\n  key_file: k\n  client_allowed_sans: []\n");
  ASSERT_TRUE(empty.has_value()) << empty.error();
  EXPECT_TRUE(empty->tls->client_allowed_sans.empty());
}

TEST(WebConfig, AnEmptyFileAsksForNothing) {
  auto c = parse_web("");
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->tls);
  EXPECT_TRUE(c->basic_auth_users.empty());
  EXPECT_TRUE(c->headers.empty());
}

TEST(WebConfig, EveryBadInputIsOneLineNamingFileAndLine) {
  const std::string h = kWebConfigTestHash;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"basic_auth_user:\n  a: " + h + "\n", "/etc/gpuscope/web.yml:1: unknown key 'basic_auth_user'"},
      {"basic_auth_users:\n  alice: secret\n", "/etc/gpuscope/web.yml:2: the password of user 'alice' is not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $1$abc$def\n", ":2: the password of user 'alice'"},
      {"basic_auth_users:\n  alice: " + h.substr(0, 59) + "\n", ":2: the password of user 'alice'"},
      {"basic_auth_users:\n  alice: $2y$03$" + h.substr(7) + "\n", ":2: the password"},  // cost below 4
      {"basic_auth_users:\n  alice: " + h + "\n  alice: " + h + "\n", "listed twice"},
      {"basic_auth_users:\n  'a:b': " + h + "\n", ":2: invalid user name 'a:b'"},
      {"basic_auth_users: [a, b]\n", ":1: basic_auth_users must be a mapping"},
      {"tls_server_config:\n  cert_file: a.crt\n", ":2: tls_server_config needs key_file"},
      {"tls_server_config:\n  key_file: a.key\n", "tls_server_config needs cert_file"},
      {"tls_server_config:\n  cert_file: a\n  cert: b\n  key_file: k\n", ":3: give cert_file or cert, not both"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  min_version: TLS14\n", ":4: unknown min_version 'TLS14'"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  min_version: TLS13\n  max_version: TLS12\n",
       ":4: min_version is above max_version"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  client_auth_type: Sometimes\n", ":4: unknown client_auth_type"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  client_auth_type: RequireAndVerifyClientCert\n",
       ":4: client_auth_type RequireAndVerifyClientCert needs client_ca_file"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  client_ca_file: ca\n",
       "client_ca_file is set but client_auth_type is NoClientCert"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n",
       ":4: unknown or unsupported cipher suite 'TLS_RSA_WITH_RC4_128_SHA'"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  curve_preferences: [CurveP999]\n", ":4: unknown curve"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  prefer_server_cipher_suites: maybe\n", "must be true or false"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  client_allowed_sans: [x]\n",
       ":4: client_allowed_sans needs client_auth_type RequireAndVerifyClientCert (or RequireAnyClientCert), not NoClientCert"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  client_ca_file: ca\n  client_auth_type: VerifyClientCertIfGiven\n"
       "  client_allowed_sans: [x]\n", ":6: client_allowed_sans needs client_auth_type"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  client_ca_file: ca\n  client_auth_type: RequireAndVerifyClientCert\n"
       "  client_allowed_sans: prom.example\n", ":6: client_allowed_sans must be a list of strings"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  client_ca_file: ca\n  client_auth_type: RequireAndVerifyClientCert\n"
       "  client_allowed_sans:\n    - ok.example\n    - ''\n", ":8: client_allowed_sans: an empty name"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  client_ca_file: ca\n  client_auth_type: RequireAndVerifyClientCert\n"
       "  client_allowed_sans:\n    - {a: b}\n", ":7: each item of client_allowed_sans must be a string"},
      {"tls_server_config:\n  cert_file: a\n  key_file: k\n  cert_fil: b\n", ":4: unknown key 'cert_fil' in tls_server_config"},
      {"http_server_config:\n  headers:\n    Server: gpuscope\n", ":3: HTTP header 'Server' can not be configured"},
      {"http_server_config:\n  headers:\n    Authorization: x\n", "HTTP header 'Authorization' can not be configured"},
      {"http_server_config:\n  headers:\n    X-Frame-Options: allow\n", ":3: invalid value 'allow' for X-Frame-Options"},
      {"http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n", "invalid value 'sniff'"},
      {"http_server_config:\n  http3: true\n", ":2: unknown key 'http3' in http_server_config"},
      {"rate_limit:\n  interval: 1s\n", "rate_limit is not supported"},
      {"auth_excluded_paths: [healthz]\n", ":1: auth_excluded_paths: 'healthz' is not a path"},
      {"basic_auth_users:\n  alice: [unterminated\n", "/etc/gpuscope/web.yml:"},
      {"- a\n- b\n", ":1: the web config is a mapping"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string e = web_error(text);
    EXPECT_NE(e.find(expected), std::string::npos) << "input:\n" << text << "error: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_TRUE(e.starts_with("/etc/gpuscope/web.yml")) << e;
  }
}

TEST(WebConfig, APlainPasswordInPlaceOfAHashIsNeverRepeatedInTheError) {
  const std::string e = web_error("basic_auth_users:\n  alice: hunter2-is-my-password\n");
  EXPECT_EQ(e.find("hunter2"), std::string::npos) << e;
}

TEST(WebConfig, AMissingFileIsOneLineNamingIt) {
  auto c = load_web_config("/nonexistent/gpuscope-web.yml");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().find("/nonexistent/gpuscope-web.yml: cannot read"), std::string::npos) << c.error();
}

TEST(WebConfigTlsPriorities, VersionsCiphersAndCurvesBecomeAGnutlsPriorityString) {
  TlsServerConfig t;
  EXPECT_EQ(gnutls_priorities(t), "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE");
  t.min_version = TlsVersion::kTls13;
  t.prefer_server_cipher_suites = false;
  t.cipher_suites = {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"};
  t.curve_preferences = {"X25519", "CurveP384"};
  EXPECT_EQ(gnutls_priorities(t),
            "NORMAL:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:+ECDHE-RSA:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:-MAC-ALL:+AEAD"
            ":-GROUP-ALL:+GROUP-X25519:+GROUP-SECP384R1");
}

TEST(WebConfigTlsPriorities, AListGnutlsCannotExpressExactlyIsRefusedNamingWhatWouldComeAlong) {
  // RSA and ECDSA key exchanges with two different ciphers: the product adds the two crossed suites.
  auto widened = check_cipher_suites_expressible(
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"});
  ASSERT_FALSE(widened.has_value());
  EXPECT_NE(widened.error().find("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"), std::string::npos) << widened.error();
  // GCM and CBC-SHA1 together: GCM with SHA1 and CBC with AEAD are no suites, so nothing comes along.
  EXPECT_TRUE(check_cipher_suites_expressible({"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"}));
  // A suite only GnuTLS names counts too.
  auto gnutls_only = check_cipher_suites_expressible(
      {"TLS_RSA_WITH_AES_128_CBC_SHA256", "TLS_RSA_WITH_AES_256_CBC_SHA", "TLS_RSA_WITH_AES_128_CBC_SHA"});
  ASSERT_FALSE(gnutls_only.has_value());
  EXPECT_NE(gnutls_only.error().find("TLS_RSA_WITH_AES_256_CBC_SHA256"), std::string::npos);
  // And in the config, on the list's line.
  const std::string e = web_error(
      "tls_server_config:\n  cert_file: a\n  key_file: k\n  cipher_suites:\n    - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"
      "    - TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384\n");
  EXPECT_NE(e.find("web.yml:5: cipher_suites: GnuTLS enables every combination"), std::string::npos) << e;
}

TEST(WebConfig, BcryptHashShapes) {
  EXPECT_TRUE(is_bcrypt_hash(kWebConfigTestHash));
  EXPECT_TRUE(is_bcrypt_hash("$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_FALSE(is_bcrypt_hash("$2x$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_FALSE(is_bcrypt_hash("$2a$32$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
  EXPECT_FALSE(is_bcrypt_hash("$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOe!"));
}

}  // namespace
}  // namespace gpuscope::http
