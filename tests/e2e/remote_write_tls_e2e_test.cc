// serve --remote-write.config with tls_config against Debian's Prometheus as a receiver behind TLS
// (--web.config.file with tls_server_config): the right CA with server_name, a wrong CA, mTLS with and
// without the client certificate. One agent sends to all four; the refused ones count as code="error"
// requests and the agent carries on. Certificates are made here with the openssl CLI.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <sstream>
#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/test_pki.h"

namespace gpuscope::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::unique_ptr<BackgroundProcess> rw_tls_prometheus(const TempDir& dir, const std::string& name, int port,
                                                     const std::string& web_config) {
  const std::string config = dir.write(name + ".yml", "global:\n  scrape_interval: 15s\n");
  const std::string web = dir.write(name + "-web.yml", web_config);
  return std::make_unique<BackgroundProcess>(std::vector<std::string>{
      "/usr/bin/prometheus", "--config.file=" + config, "--storage.tsdb.path=" + (dir.path / name).string(),
      "--web.listen-address=127.0.0.1:" + std::to_string(port), "--web.enable-remote-write-receiver",
      "--web.config.file=" + web});
}

// GET over TLS with Debian's curl; the body, or "" on any failure. The name the server certificate
// carries is resolved to 127.0.0.1.
std::string rw_tls_get(int port, const std::string& path, const TestPki& pki, bool client_cert) {
  std::vector<std::string> argv = {"/usr/bin/curl", "-sf", "--max-time", "10", "--cacert", pki.path("ca.pem"),
                                   "--resolve", "receiver.gpuscope.test:" + std::to_string(port) + ":127.0.0.1",
                                   "https://receiver.gpuscope.test:" + std::to_string(port) + path};
  if (client_cert) {
    for (const auto& a : {std::string("--cert"), pki.path("client.pem"), std::string("--key"), pki.path("client.key")}) {
      argv.push_back(a);
    }
  }
  auto r = run_command(argv, {}, 20);
  return r.exit_code == 0 ? r.out : "";
}

// The value of the agent's series `name` whose line holds every one of `parts`, or -1.
double rw_tls_metric(const std::string& metrics, const std::string& name, const std::vector<std::string>& parts) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(name + "{")) continue;
    bool all = true;
    for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return std::atof(line.substr(line.rfind(' ') + 1).c_str());
  }
  return -1;
}

TEST(RemoteWriteTlsE2e, RightCaAndClientCertArriveWrongCaAndMissingCertAreCountedErrors) {
  if (!fs::exists("/usr/bin/prometheus") || !fs::exists("/usr/bin/openssl") || !fs::exists("/usr/bin/curl")) {
    GTEST_SKIP() << "prometheus, openssl or curl not installed (scripts/setup installs them)";
  }
  TestPki pki;
  pki.make_ca("ca");
  pki.make_ca("other_ca");
  // The server certificate names only receiver.gpuscope.test: sending to 127.0.0.1 needs server_name.
  pki.make_cert("server", "ca", false, "DNS:receiver.gpuscope.test");
  pki.make_cert("client", "ca", false, "DNS:gpu-agent");
  TempDir dir;
  const int tls_port = free_port(), mtls_port = free_port();
  const std::string server = "tls_server_config:\n  cert_file: " + pki.path("server.pem") + "\n  key_file: " +
                             pki.path("server.key") + "\n";
  auto tls = rw_tls_prometheus(dir, "tls", tls_port, server);
  auto mtls = rw_tls_prometheus(dir, "mtls", mtls_port,
                                server + "  client_ca_file: " + pki.path("ca.pem") +
                                    "\n  client_auth_type: RequireAndVerifyClientCert\n");
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    up = !rw_tls_get(tls_port, "/-/ready", pki, false).empty() && !rw_tls_get(mtls_port, "/-/ready", pki, true).empty();
    if (!up) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(up) << tls->output() << mtls->output();

  auto receiver = [&](const std::string& host, int port, const std::string& ca, bool cert) {
    std::string r = "  - url: https://" + host + ":" + std::to_string(port) + "/api/v1/write\n"
                    "    tls_config:\n      ca_file: " + pki.path(ca + ".pem") + "\n"
                    "      server_name: receiver.gpuscope.test\n      min_version: TLS12\n";
    if (cert) r += "      cert_file: " + pki.path("client.pem") + "\n      key_file: " + pki.path("client.key") + "\n";
    return r;
  };
  const std::string config =
      dir.write("rw.yml", "remote_write:\n" + receiver("127.0.0.1", tls_port, "ca", false) +
                              receiver("localhost", tls_port, "other_ca", false) +
                              receiver("127.0.0.1", mtls_port, "ca", true) + receiver("localhost", mtls_port, "ca", false));
  Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--data-dir", (dir.path / "agent").string(),
               "--interval", "500ms", "--remote-write.config", config},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  // Samples arrive at both receivers the agent can verify (and, for mTLS, show its certificate to).
  const std::string query = "/api/v1/query?query=count(DCGM_FI_DEV_GPU_TEMP)";
  bool tls_has = false, mtls_has = false;
  for (int i = 0; i < 150 && !(tls_has && mtls_has); ++i) {
    tls_has = rw_tls_get(tls_port, query, pki, false).find("\"result\":[{") != std::string::npos;
    mtls_has = rw_tls_get(mtls_port, query, pki, true).find("\"result\":[{") != std::string::npos;
    if (!(tls_has && mtls_has)) std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(tls_has) << agent.process->output();
  EXPECT_TRUE(mtls_has) << agent.process->output();

  // The two it cannot: every request a connection error, nothing acknowledged, retried.
  const std::string wrong_ca = "url=\"https://localhost:" + std::to_string(tls_port) + "/api/v1/write\"";
  const std::string no_cert = "url=\"https://localhost:" + std::to_string(mtls_port) + "/api/v1/write\"";
  std::string m;
  for (int i = 0; i < 100; ++i) {
    m = agent.metrics();
    if (rw_tls_metric(m, "gpuscope_remote_write_requests_total", {wrong_ca, "code=\"error\""}) >= 2 &&
        rw_tls_metric(m, "gpuscope_remote_write_requests_total", {no_cert, "code=\"error\""}) >= 2) {
      break;
    }
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_GE(rw_tls_metric(m, "gpuscope_remote_write_requests_total", {wrong_ca, "code=\"error\""}), 2) << m;
  EXPECT_GE(rw_tls_metric(m, "gpuscope_remote_write_requests_total", {no_cert, "code=\"error\""}), 2) << m;
  EXPECT_LE(rw_tls_metric(m, "gpuscope_remote_write_samples_sent_total", {wrong_ca}), 0) << m;
  EXPECT_LE(rw_tls_metric(m, "gpuscope_remote_write_samples_sent_total", {no_cert}), 0) << m;
  const std::string ok = "url=\"https://127.0.0.1:" + std::to_string(mtls_port) + "/api/v1/write\"";
  EXPECT_GT(rw_tls_metric(m, "gpuscope_remote_write_samples_sent_total", {ok}), 0) << m;
  EXPECT_TRUE(agent.ready()) << agent.process->output();
  EXPECT_NE(agent.process->output().find("certificate"), std::string::npos) << agent.process->output();
  tls->signal_and_wait(SIGTERM, 20s);
  mtls->signal_and_wait(SIGTERM, 20s);
}

TEST(RemoteWriteTlsE2e, AMissingCertificateFileStopsTheStartWithExitTwo) {
  TempDir dir;
  const std::string config = dir.write("rw.yml", "remote_write:\n  - url: https://127.0.0.1:1/w\n"
                                                 "    tls_config:\n      ca_file: /nonexistent/ca.pem\n");
  auto r = run_command({GPUSCOPE_EXE, "--simulate", "serve", "--listen", "127.0.0.1:0", "--remote-write.config", config},
                       frozen_env(600));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpuscope: --remote-write.config: " + config +
                       ":4: ca_file /nonexistent/ca.pem: No such file or directory\n");
}

}  // namespace
}  // namespace gpuscope::e2e
