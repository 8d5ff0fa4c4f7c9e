// `serve --web.config.file` end to end: the agent under --simulate, Debian's curl as the client (right and
// wrong passwords, client certificates missing, unknown and expired, plain HTTP to the TLS port), a real
// Prometheus scraping over TLS with basic auth, and a certificate rotated under the running agent.
// Certificates are made here with the openssl CLI, bcrypt hashes with htpasswd (apache2-utils).

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/test_pki.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kWebSecurityExe = GPUSCOPE_EXE;

// A keep-alive TLS client in Python's ssl module: one request, then a second on the same connection once
// `flag` exists; prints each status with the certificate's CN.
constexpr const char* kWebSecurityKeepAliveClient = R"PY(
import os, socket, ssl, sys, time
port, ca, flag = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
cn = dict(x[0] for x in s.getpeercert()["subject"])["commonName"]
def ask():
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    head, body = data.split(b"\r\n\r\n", 1)
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0]
    while len(body) < length:
        body += s.recv(4096)
    return head.split(b" ")[1].decode()
print("first", ask(), cn, flush=True)
while not os.path.exists(flag):
    time.sleep(0.05)
print("second", ask(), cn, flush=True)
)PY";

bool web_security_tools_present() {
  return fs::exists("/usr/bin/curl") && fs::exists("/usr/bin/openssl") && fs::exists("/usr/bin/htpasswd");
}

// `htpasswd -nbB` prints "user:hash"; cost 5 keeps the test fast (the agent reads any cost).
std::string web_security_bcrypt(const std::string& user, const std::string& password) {
  auto r = run_command({"/usr/bin/htpasswd", "-nbB", "-C", "5", user, password});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string line = r.out.substr(0, r.out.find('\n'));
  return line.substr(line.find(':') + 1);
}

struct CurlOutcome {
  int exit_code = -1;
  std::string status;  // "200", "401", "000" when no HTTP answer came
  std::string headers;
  std::string body;
};

CurlOutcome web_security_curl(const std::string& url, std::vector<std::string> extra) {
  std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "--max-time", "20", "-D", "/dev/stderr", "-w",
                                   "\n%{http_code}", url};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = run_command(argv, {}, 30);
  CurlOutcome out;
  out.exit_code = r.exit_code;
  const auto nl = r.out.rfind('\n');
  out.status = nl == std::string::npos ? r.out : r.out.substr(nl + 1);
  out.body = nl == std::string::npos ? "" : r.out.substr(0, nl);
  out.headers = r.err;
  return out;
}

// The value of gpuscope_http_requests_refused_total{reason} in a /metrics body, or -1.
double refused_count(const std::string& metrics, const std::string& reason) {
  const std::regex re("gpuscope_http_requests_refused_total\\{reason=\"" + reason + "\"\\} ([0-9.e+]+)");
  std::smatch m;
  return std::regex_search(metrics, m, re) ? std::stod(m[1]) : -1;
}

// /metrics is rendered once a reading: polls until the counter reaches `at_least` (or 20 s pass).
double wait_for_refused(const std::function<std::string()>& scrape, const std::string& reason, double at_least) {
  double v = -1;
  for (int i = 0; i < 200; ++i) {
    v = refused_count(scrape(), reason);
    if (v >= at_least) return v;
    std::this_thread::sleep_for(100ms);
  }
  return v;
}

TEST(WebSecurityE2e, BasicAuthGuardsEveryRouteButTheExcludedHealthCheck) {
  if (!web_security_tools_present()) GTEST_SKIP() << "curl, openssl or htpasswd missing (scripts/setup installs them)";
  TempDir dir;
  const auto config = dir.write("web.yml", "basic_auth_users:\n  prometheus: " + web_security_bcrypt("prometheus", "s3cret-Pw") +
                                               "\nauth_excluded_paths: [/healthz]\nhttp_server_config:\n  headers:\n"
                                               "    X-Content-Type-Options: nosniff\n");
  Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history", "--web.config.file", config}, frozen_env(600));
  ASSERT_GT(agent.port, 0) << agent.process->output();
  const std::string base = "http://127.0.0.1:" + std::to_string(agent.port);
  const std::vector<std::string> good = {"-u", "prometheus:s3cret-Pw"};

  for (const std::string path : {"/metrics", "/api/v1/gpus", "/", "/api/v1/query?query=up", "/api/v1/diagnosis"}) {
    auto ok = web_security_curl(base + path, good);
    EXPECT_EQ(ok.status, "200") << path << ok.headers;
    EXPECT_NE(ok.headers.find("X-Content-Type-Options: nosniff"), std::string::npos) << path;
    auto none = web_security_curl(base + path, {});
    EXPECT_EQ(none.status, "401") << path;
    EXPECT_NE(none.headers.find("WWW-Authenticate: Basic realm=\"gpuscope\""), std::string::npos) << none.headers;
    EXPECT_NE(none.headers.find("X-Content-Type-Options: nosniff"), std::string::npos);
    EXPECT_EQ(web_security_curl(base + path, {"-u", "prometheus:wrong"}).status, "401") << path;
  }
  // The training events' POST too.
  EXPECT_EQ(web_security_curl(base + "/api/v1/events", {"-X", "POST", "--data", "{}"}).status, "401");
  EXPECT_EQ(web_security_curl(base + "/api/v1/events", {"-u", "nobody:s3cret-Pw"}).status, "401");
  // Probes reach /healthz without a password; /health (not excluded) is guarded.
  EXPECT_EQ(web_security_curl(base + "/healthz", {}).status, "200");
  EXPECT_EQ(web_security_curl(base + "/health", {}).status, "401");

  // 5 paths x (one missing, one wrong) + the POST and /health without credentials, the unknown user once.
  auto scrape = [&] { return web_security_curl(base + "/metrics", good).body; };
  EXPECT_EQ(wait_for_refused(scrape, "missing_credentials", 7), 7);
  EXPECT_EQ(wait_for_refused(scrape, "wrong_password", 5), 5);
  EXPECT_EQ(wait_for_refused(scrape, "unknown_user", 1), 1);
  const std::string log = agent.process->output();
  EXPECT_NE(log.find("msg=\"request refused\" reason=wrong_password user=prometheus"), std::string::npos) << log;
  EXPECT_EQ(log.find("s3cret-Pw"), std::string::npos);
}

TEST(WebSecurityE2e, ABadWebConfigStopsServeWithOneLineNamingFileAndLine) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tls_server_config:\n  cert_file: server.pem\n  key_fil: server.key\n", "web.yml:3: unknown key 'key_fil'"},
      {"basic_auth_users:\n  alice: not-a-hash\n", "web.yml:2: the password of user 'alice' is not a bcrypt hash"},
      {"tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n", "web.yml:2: cert_file"},
  };
  for (const auto& [text, expected] : cases) {
    const auto config = dir.write("web.yml", text);
    auto r = run_command({kWebSecurityExe, "--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history",
                          "--web.config.file", config},
                         frozen_env(600), 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    int error_lines = 0;
    std::istringstream lines(r.err);
    for (std::string line; std::getline(lines, line);) error_lines += line.starts_with("gpuscope: ");
    EXPECT_EQ(error_lines, 1) << r.err;
  }
  auto missing = run_command({kWebSecurityExe, "--simulate", "serve", "--no-history", "--web.config.file",
                              (dir.path / "nope.yml").string()},
                             frozen_env(600), 30);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.yml: cannot read"), std::string::npos) << missing.err;
}

TEST(WebSecurityE2e, ClientCertificatesMissingUnknownOrExpiredAndPlainHttpAreRefused) {
  if (!web_security_tools_present()) GTEST_SKIP() << "curl, openssl or htpasswd missing (scripts/setup installs them)";
  TestPki pki;
  pki.make_ca("ca");
  pki.make_ca("stranger_ca");
  pki.make_cert("server", "ca");
  pki.make_cert("client", "ca");
  pki.make_cert("stranger", "stranger_ca");
  pki.make_cert("expired", "ca", true);
  const auto config = pki.dir.write(
      "web.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  client_ca_file: ca.pem\n"
                 "  client_auth_type: RequireAndVerifyClientCert\nbasic_auth_users:\n  prometheus: " +
                     web_security_bcrypt("prometheus", "pw") + "\n");
  Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history", "--web.config.file", config}, frozen_env(600));
  ASSERT_GT(agent.port, 0) << agent.process->output();
  const std::string url = "https://127.0.0.1:" + std::to_string(agent.port) + "/metrics";
  const std::vector<std::string> trust = {"--cacert", pki.path("ca.pem"), "-u", "prometheus:pw"};
  auto with = [&](const std::string& cert) {
    auto args = trust;
    for (const auto& a : {std::string("--cert"), pki.path(cert + ".pem"), std::string("--key"), pki.path(cert + ".key")}) {
      args.push_back(a);
    }
    return args;
  };

  EXPECT_EQ(web_security_curl(url, with("client")).status, "200");
  auto no_cert = web_security_curl(url, trust);
  EXPECT_EQ(no_cert.status, "000");
  EXPECT_NE(no_cert.exit_code, 0);
  EXPECT_EQ(web_security_curl(url, with("stranger")).status, "000");
  EXPECT_EQ(web_security_curl(url, with("expired")).status, "000");
  // Plain HTTP to the TLS port: the connection ends, no HTTP answer, and the server goes on serving.
  auto plain = http_raw(agent.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 20s);
  EXPECT_EQ(plain.status, 0);
  EXPECT_EQ(web_security_curl("http://127.0.0.1:" + std::to_string(agent.port) + "/metrics", {}).status, "000");
  // A right certificate with a wrong password is TLS-accepted and then refused by basic auth.
  auto wrong_pw = with("client");
  wrong_pw[3] = "prometheus:nope";
  EXPECT_EQ(web_security_curl(url, wrong_pw).status, "401");
  EXPECT_EQ(web_security_curl(url, with("client")).status, "200");

  auto scrape = [&] { return web_security_curl(url, with("client")).body; };
  // Exactly the five bad ones: the good connections (each curl, each scrape) are never counted.
  EXPECT_EQ(wait_for_refused(scrape, "tls_handshake", 5), 5);
  EXPECT_EQ(wait_for_refused(scrape, "wrong_password", 1), 1);
  const std::string log = agent.process->output();
  EXPECT_NE(log.find("detail=\"client certificate refused: expired\""), std::string::npos) << log;
  EXPECT_NE(log.find("detail=\"client certificate refused: not signed by the client CA\""), std::string::npos) << log;
}

TEST(WebSecurityE2e, TheOtherClientAuthTypesAskRequireAndVerifyAsGoDefinesThem) {
  if (!web_security_tools_present()) GTEST_SKIP() << "curl, openssl or htpasswd missing (scripts/setup installs them)";
  TestPki pki;
  pki.make_ca("ca");
  pki.make_ca("stranger_ca");
  pki.make_cert("server", "ca");
  pki.make_cert("client", "ca");
  pki.make_cert("stranger", "stranger_ca");
  struct Case {
    std::string type;
    bool no_cert_ok, stranger_ok;
  };
  // Go's tls.ClientAuthType: RequireAny takes any certificate but needs one; VerifyIfGiven needs none
  // but checks what comes; Request takes anything.
  for (const Case& c : {Case{"RequireAnyClientCert", false, true}, Case{"VerifyClientCertIfGiven", true, false},
                        Case{"RequestClientCert", true, true}}) {
    const auto config = pki.dir.write("web-" + c.type + ".yml",
                                      "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                                      "  client_ca_file: ca.pem\n  client_auth_type: " + c.type + "\n");
    Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history", "--web.config.file", config},
                frozen_env(600));
    ASSERT_GT(agent.port, 0) << agent.process->output();
    const std::string url = "https://127.0.0.1:" + std::to_string(agent.port) + "/healthz";
    const std::string ca = pki.path("ca.pem");
    EXPECT_EQ(web_security_curl(url, {"--cacert", ca}).status, c.no_cert_ok ? "200" : "000") << c.type;
    EXPECT_EQ(web_security_curl(url, {"--cacert", ca, "--cert", pki.path("stranger.pem"), "--key", pki.path("stranger.key")}).status,
              c.stranger_ok ? "200" : "000") << c.type;
    EXPECT_EQ(web_security_curl(url, {"--cacert", ca, "--cert", pki.path("client.pem"), "--key", pki.path("client.key")}).status,
              "200") << c.type;
  }
}

TEST(WebSecurityE2e, MinVersionAndCipherSuitesBindWhatAClientMayNegotiate) {
  if (!web_security_tools_present()) GTEST_SKIP() << "curl, openssl or htpasswd missing (scripts/setup installs them)";
  TestPki pki;
  pki.make_ca("ca");
  pki.make_cert("server", "ca");
  const std::string ca = pki.path("ca.pem");
  {
    const auto config = pki.dir.write("tls13.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                                                   "  min_version: TLS13\n");
    Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history", "--web.config.file", config},
                frozen_env(600));
    ASSERT_GT(agent.port, 0) << agent.process->output();
    const std::string url = "https://127.0.0.1:" + std::to_string(agent.port) + "/healthz";
    EXPECT_EQ(web_security_curl(url, {"--cacert", ca}).status, "200");
    EXPECT_EQ(web_security_curl(url, {"--cacert", ca, "--tls-max", "1.2"}).status, "000");
  }
  {
    // TLS 1.2 only, one suite (the RSA and ECDSA forms of it, as GnuTLS needs): another suite is refused.
    const auto config = pki.dir.write(
        "suites.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  max_version: TLS12\n"
                      "  cipher_suites:\n    - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"
                      "    - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\n");
    Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history", "--web.config.file", config},
                frozen_env(600));
    ASSERT_GT(agent.port, 0) << agent.process->output();
    const std::string url = "https://127.0.0.1:" + std::to_string(agent.port) + "/healthz";
    EXPECT_EQ(web_security_curl(url, {"--cacert", ca, "--ciphers", "ECDHE-RSA-AES128-GCM-SHA256"}).status, "200");
    EXPECT_EQ(web_security_curl(url, {"--cacert", ca, "--ciphers", "ECDHE-RSA-AES256-GCM-SHA384"}).status, "000");
    EXPECT_EQ(web_security_curl(url, {"--cacert", ca, "--ciphers", "ECDHE-RSA-CHACHA20-POLY1305"}).status, "000");
  }
}

TEST(WebSecurityE2e, RealPrometheusScrapesOverTlsWithBasicAuthAndAClientCertificate) {
  if (!web_security_tools_present()) GTEST_SKIP() << "curl, openssl or htpasswd missing (scripts/setup installs them)";
  if (!fs::exists("/usr/bin/prometheus")) GTEST_SKIP() << "prometheus not installed (scripts/setup installs it)";
  TestPki pki;
  pki.make_ca("ca");
  pki.make_cert("server", "ca");
  pki.make_cert("prometheus", "ca");
  const auto config = pki.dir.write(
      "web.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  client_ca_file: ca.pem\n"
                 "  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS12\nbasic_auth_users:\n  prom: " +
                     web_security_bcrypt("prom", "scrape-pw") + "\n");
  Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history", "--web.config.file", config}, frozen_env(600));
  ASSERT_GT(agent.port, 0) << agent.process->output();

  const int prom_port = free_port();
  const auto prom_config = pki.dir.write(
      "prometheus.yml", "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: gpuscope\n"
                        "    scheme: https\n    tls_config:\n      ca_file: " + pki.path("ca.pem") +
                            "\n      cert_file: " + pki.path("prometheus.pem") + "\n      key_file: " +
                            pki.path("prometheus.key") + "\n    basic_auth:\n      username: prom\n      password: scrape-pw\n"
                            "    static_configs:\n      - targets: ['127.0.0.1:" + std::to_string(agent.port) + "']\n");
  BackgroundProcess prometheus({"/usr/bin/prometheus", "--config.file=" + prom_config,
                                "--storage.tsdb.path=" + pki.path("prom-data"),
                                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)});
  nlohmann::json target;
  for (int i = 0; i < 300; ++i) {
    auto r = http_get(prom_port, "/api/v1/targets");
    if (r.status == 200) {
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (j.is_object() && !j["data"]["activeTargets"].empty()) {
        target = j["data"]["activeTargets"][0];
        if (target["health"] == "up") break;
      }
    }
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(target["health"], "up") << target.dump() << "\n" << prometheus.output();
  EXPECT_EQ(target["scrapeUrl"], "https://127.0.0.1:" + std::to_string(agent.port) + "/metrics");
  // And what it stored is the GPUs' series.
  bool stored = false;
  for (int i = 0; i < 100 && !stored; ++i) {
    auto r = http_get(prom_port, "/api/v1/query?query=" + url_encode("count(DCGM_FI_DEV_GPU_TEMP)"));
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    stored = j.is_object() && !j["data"]["result"].empty() && j["data"]["result"][0]["value"][1] == "8";
    if (!stored) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(stored);
  EXPECT_TRUE(prometheus.signal_and_wait(SIGTERM, 10s).has_value());
}

TEST(WebSecurityE2e, ARotatedCertificateIsServedToNewConnectionsAndABadOneKeepsTheOld) {
  if (!web_security_tools_present()) GTEST_SKIP() << "curl, openssl or htpasswd missing (scripts/setup installs them)";
  TestPki pki;
  pki.make_ca("ca");
  pki.make_ca("next_ca");
  pki.make_cert("server", "ca");
  pki.make_cert("next", "next_ca");
  const auto config = pki.dir.write("web.yml", "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n");
  Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history", "--web.config.file", config}, frozen_env(600));
  ASSERT_GT(agent.port, 0) << agent.process->output();
  const std::string url = "https://127.0.0.1:" + std::to_string(agent.port) + "/metrics";
  ASSERT_EQ(web_security_curl(url, {"--cacert", pki.path("ca.pem")}).status, "200");
  // A scraper's kept-alive connection, opened on the old certificate.
  BackgroundProcess keep_alive({"/usr/bin/python3", "-c", kWebSecurityKeepAliveClient, std::to_string(agent.port),
                                pki.path("ca.pem"), pki.path("rotated.flag")});
  ASSERT_TRUE(keep_alive.wait_for_line("first 200 server", 20s)) << keep_alive.output();

  // As cert-manager does: the new files renamed over the old ones, key first.
  fs::copy_file(pki.path("next.key"), pki.path("server.key.new"));
  fs::copy_file(pki.path("next.pem"), pki.path("server.pem.new"));
  fs::rename(pki.path("server.key.new"), pki.path("server.key"));
  fs::rename(pki.path("server.pem.new"), pki.path("server.pem"));
  bool rotated = false;
  for (int i = 0; i < 200 && !rotated; ++i) {
    rotated = web_security_curl(url, {"--cacert", pki.path("next_ca.pem")}).status == "200";
    if (!rotated) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(rotated) << agent.process->output();
  EXPECT_EQ(web_security_curl(url, {"--cacert", pki.path("ca.pem")}).status, "000");  // the old chain is gone
  // The connection opened before the rotation is still served (by the replaced daemon, until it closes).
  pki.dir.write("rotated.flag", "");
  EXPECT_TRUE(keep_alive.wait_for_line("second 200 server", 20s)) << keep_alive.output();

  // A broken certificate: logged once, the rotated one stays.
  { std::ofstream(pki.path("server.pem")) << "not a certificate\n"; }
  ASSERT_TRUE(agent.process->wait_for_line("web config reload failed; keeping the previous settings", 20s))
      << agent.process->output();
  EXPECT_EQ(web_security_curl(url, {"--cacert", pki.path("next_ca.pem")}).status, "200");
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    metrics = web_security_curl(url, {"--cacert", pki.path("next_ca.pem")}).body;
    if (metrics.find("gpuscope_web_config_last_reload_successful 0") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(metrics.find("gpuscope_web_config_last_reload_successful 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("gpuscope_web_config_reloads_total{result=\"success\"} 1"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace gpuscope::e2e
