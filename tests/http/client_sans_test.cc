#include "http/client_sans.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "http/http_server.h"
#include "http/tls_material.h"

namespace gpuscope::http {
namespace {

namespace fs = std::filesystem;

TEST(ClientSans, IpAddressesAreSpelledAsGoPrintsThem) {
  // Expected strings are Go's net.IP.String() for these bytes (RFC 5952: first longest zero run, lower case).
  const unsigned char v4[] = {10, 0, 0, 7};
  EXPECT_EQ(go_ip_string(v4), "10.0.0.7");
  const unsigned char mapped[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 2};
  EXPECT_EQ(go_ip_string(mapped), "192.168.1.2");
  const unsigned char loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(go_ip_string(loopback), "::1");
  const unsigned char doc[] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0x01};
  EXPECT_EQ(go_ip_string(doc), "2001:db8::1:0:0:1");  // two runs of two: the first one
  const unsigned char one_zero[] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  EXPECT_EQ(go_ip_string(one_zero), "2001:db8:0:1:1:1:1:1");  // a single zero group is not shortened
  const unsigned char compat[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
  EXPECT_EQ(go_ip_string(compat), "::102:304");  // not glibc's "::1.2.3.4"
}

TEST(ClientSans, MatchingIsExactAndCaseSensitive) {
  const std::vector<CertificateSan> sans = {{CertificateSan::Kind::kDns, "prom.example"},
                                            {CertificateSan::Kind::kIp, "10.0.0.7"}};
  EXPECT_EQ(first_allowed_san(sans, {"x", "10.0.0.7"}), &sans[1]);
  EXPECT_EQ(first_allowed_san(sans, {"Prom.example", "prom.example.", "*.example", "10.0.0.07"}), nullptr);
  const std::string why = describe_refused_sans(sans);
  EXPECT_NE(why.find("DNS:prom.example, IP:10.0.0.7"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
}

// A scratch directory with a CA and client certificates made by the openssl CLI, as the e2e tests do.
struct ClientSansPki {
  fs::path dir;
  ClientSansPki() {
    char templ[] = "/tmp/gpuscope-sans-XXXXXX";
    dir = ::mkdtemp(templ);
  }
  ~ClientSansPki() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  bool sh(const std::string& command) const { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }
  bool make_ca() const {
    return sh("/usr/bin/openssl req -x509 -newkey rsa:2048 -nodes -keyout " + path("ca.key") + " -out " + path("ca.pem") +
              " -days 2 -subj /CN=ca");
  }
  bool make_cert(const std::string& name, const std::string& san) const {
    std::ofstream(path(name + ".ext")) << "subjectAltName=" << san << "\n";
    return sh("/usr/bin/openssl req -newkey rsa:2048 -nodes -keyout " + path(name + ".key") + " -out " + path(name + ".csr") +
              " -subj /CN=" + name) &&
           sh("/usr/bin/openssl x509 -req -in " + path(name + ".csr") + " -CA " + path("ca.pem") + " -CAkey " +
              path("ca.key") + " -CAcreateserial -days 1 -out " + path(name + ".pem") + " -extfile " + path(name + ".ext"));
  }
  std::string der(const std::string& name) const {
    sh("/usr/bin/openssl x509 -in " + path(name + ".pem") + " -outform DER -out " + path(name + ".der"));
    std::ifstream in(path(name + ".der"), std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // curl's HTTP status ("000": no HTTP answer), with `cert` as the client certificate (none if empty).
  std::string curl(int port, const std::string& cert) const {
    std::string cmd = "/usr/bin/curl -s -o /dev/null --max-time 20 -w '%{http_code}' --cacert " + path("ca.pem");
    if (!cert.empty()) cmd += " --cert " + path(cert + ".pem") + " --key " + path(cert + ".key");
    cmd += " https://127.0.0.1:" + std::to_string(port) + "/metrics 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[64];
    while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    if (p != nullptr) ::pclose(p);
    return out;
  }
};

bool client_sans_tools_present() { return fs::exists("/usr/bin/curl") && fs::exists("/usr/bin/openssl"); }

TEST(ClientSans, ReadsEveryKindFromARealCertificate) {
  if (!client_sans_tools_present()) GTEST_SKIP() << "curl or openssl missing";
  ClientSansPki pki;
  ASSERT_TRUE(pki.make_ca());
  ASSERT_TRUE(pki.make_cert("all", "DNS:prom.example,IP:10.0.0.7,IP:2001:db8::1,email:ops@example.org,"
                                   "URI:spiffe://c/ns/m/sa/prom"));
  const std::string der = pki.der("all");
  auto sans = certificate_sans({reinterpret_cast<const unsigned char*>(der.data()), der.size()});
  ASSERT_TRUE(sans.has_value()) << sans.error();
  std::vector<std::string> seen;
  for (const auto& s : *sans) seen.push_back(fmt::format("{}:{}", certificate_san_kind_name(s.kind), s.value));
  EXPECT_EQ(seen, (std::vector<std::string>{"DNS:prom.example", "IP:10.0.0.7", "IP:2001:db8::1", "email:ops@example.org",
                                            "URI:spiffe://c/ns/m/sa/prom"}));
  EXPECT_FALSE(certificate_sans({reinterpret_cast<const unsigned char*>("junk"), 4}).has_value());
}

TEST(ClientSans, OnlyACertificateWithAnAllowedSanGetsAnAnswerAndAReplacedListApplies) {
  if (!client_sans_tools_present()) GTEST_SKIP() << "curl or openssl missing";
  ClientSansPki pki;
  ASSERT_TRUE(pki.make_ca());
  ASSERT_TRUE(pki.make_cert("server", "IP:127.0.0.1"));
  ASSERT_TRUE(pki.make_cert("prom", "DNS:prom.example"));
  ASSERT_TRUE(pki.make_cert("other", "DNS:other.example,email:x@example.org"));
  TlsServerConfig t;
  t.cert.file = pki.path("server.pem");
  t.key.file = pki.path("server.key");
  t.client_ca.file = pki.path("ca.pem");
  t.client_auth = ClientAuth::kRequireAndVerifyClientCert;
  t.client_allowed_sans = {"10.9.9.9", "prom.example"};
  auto material = load_tls_material(t, pki.path("web.yml"));
  ASSERT_TRUE(material.has_value()) << material.error();

  std::ostringstream log_text;
  log::Logger log{log_text, log::Level::kDebug};
  std::mutex mu;
  std::vector<std::string> refusals;
  HttpServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.tls = *material;
  o.on_tls_refused = [&](std::string_view, std::string_view detail) {
    std::lock_guard lock(mu);
    refusals.emplace_back(detail);
  };
  auto server = HttpServer::start(o, [](const HttpRequest&) { return HttpResponse{200, "text/plain", "ok", {}, nullptr}; }, log);
  ASSERT_TRUE(server.has_value()) << server.error();
  const int port = (*server)->port();
  EXPECT_EQ(pki.curl(port, "prom"), "200");
  EXPECT_EQ(pki.curl(port, "other"), "000");
  EXPECT_EQ(pki.curl(port, ""), "000");  // no certificate: refused as before

  // The re-read config's list applies to new connections.
  TlsMaterial next = *material;
  next.client_allowed_sans = {"other.example"};
  ASSERT_TRUE((*server)->replace_tls(next).has_value());
  EXPECT_EQ(pki.curl(port, "other"), "200");
  EXPECT_EQ(pki.curl(port, "prom"), "000");
  (*server)->stop();

  std::lock_guard lock(mu);
  ASSERT_EQ(refusals.size(), 3u);  // other, none, then prom; the three allowed ones are not counted
  EXPECT_NE(refusals[0].find("none of its subject alternative names is in client_allowed_sans (DNS:other.example, "
                             "email:x@example.org)"), std::string::npos) << refusals[0];
  EXPECT_NE(refusals[2].find("(DNS:prom.example)"), std::string::npos) << refusals[2];
}

}  // namespace
}  // namespace gpuscope::http
