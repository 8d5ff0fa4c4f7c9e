// tls_config, proxy_url, no_proxy and proxy_from_environment in a receiver: each key read, each mistake
// one line naming the file and line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "remote_write/receiver_config.h"

namespace gpuscope::remote_write {
namespace {

namespace fs = std::filesystem;

// A scratch directory with PEM-shaped files (the parser checks the PEM labels, libcurl the contents).
struct TlsCfgFiles {
  fs::path dir;
  TlsCfgFiles() {
    dir = fs::temp_directory_path() / ("rw_tls_config_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "ca.pem") << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    std::ofstream(dir / "client.pem") << "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n";
    std::ofstream(dir / "client.key") << "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
    std::ofstream(dir / "notes.txt") << "not a certificate\n";
  }
  ~TlsCfgFiles() { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

std::string tls_cfg_entry(const std::string& url, const std::string& more) {
  return "remote_write:\n  - url: " + url + "\n" + more;
}

TEST(RemoteWriteTlsConfig, EveryKeyIsRead) {
  TlsCfgFiles files;
  const std::string text = tls_cfg_entry("https://u:p@[::1]:9443/api/v1/write",
                                         "    tls_config:\n"
                                         "      ca_file: " + files.path("ca.pem") + "\n"
                                         "      cert_file: " + files.path("client.pem") + "\n"
                                         "      key_file: " + files.path("client.key") + "\n"
                                         "      server_name: mimir.internal\n"
                                         "      insecure_skip_verify: true\n"
                                         "      min_version: TLS13\n"
                                         "    proxy_url: http://proxy.corp:3128\n"
                                         "    no_proxy: 10.0.0.0/8,.corp\n");
  auto parsed = parse_receivers(text, "rw.yml");
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  const ReceiverConfig& r = parsed->at(0);
  EXPECT_EQ(r.tls.ca_file, files.path("ca.pem"));
  EXPECT_EQ(r.tls.cert_file, files.path("client.pem"));
  EXPECT_EQ(r.tls.key_file, files.path("client.key"));
  EXPECT_EQ(r.tls.server_name, "mimir.internal");
  EXPECT_TRUE(r.tls.insecure_skip_verify);
  EXPECT_EQ(r.tls.min_version, 13);
  EXPECT_EQ(r.proxy_url, "http://proxy.corp:3128");
  EXPECT_EQ(r.no_proxy, "10.0.0.0/8,.corp");
  EXPECT_FALSE(r.proxy_from_environment);
}

TEST(RemoteWriteTlsConfig, DefaultsAreVerifyWithTheSystemStoreAndNoProxy) {
  auto parsed = parse_receivers(tls_cfg_entry("https://a/w", "    tls_config: {min_version: TLS12}\n"
                                              "  - url: http://b/w\n    proxy_from_environment: true\n"),
                                "rw.yml");
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  const ReceiverConfig& a = parsed->at(0);
  EXPECT_TRUE(a.tls.ca_file.empty());
  EXPECT_TRUE(a.tls.cert_file.empty());
  EXPECT_FALSE(a.tls.insecure_skip_verify);
  EXPECT_EQ(a.tls.min_version, 12);
  EXPECT_TRUE(a.proxy_url.empty());
  EXPECT_FALSE(a.proxy_from_environment);
  EXPECT_TRUE(parsed->at(1).proxy_from_environment);
}

TEST(RemoteWriteTlsConfig, MistakesNameTheFileAndLine) {
  TlsCfgFiles files;
  const std::string ca = files.path("ca.pem"), cert = files.path("client.pem"), key = files.path("client.key");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {tls_cfg_entry("https://a/w", "    tls_config:\n      ca_fil: x\n"), "rw.yml:4: unknown key 'ca_fil' in tls_config"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      ca: inline\n"), "rw.yml:4: unknown key 'ca' in tls_config"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      ca_file: /nonexistent/ca.pem\n"),
       "rw.yml:4: ca_file /nonexistent/ca.pem: No such file or directory"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      ca_file: " + files.path("notes.txt") + "\n"),
       "rw.yml:4: ca_file " + files.path("notes.txt") + ": no PEM block ending in 'CERTIFICATE-----'"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      cert_file: " + cert + "\n      key_file: " + cert + "\n"),
       "rw.yml:5: key_file " + cert + ": no PEM block ending in 'PRIVATE KEY-----'"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      cert_file: " + cert + "\n"),
       "rw.yml:4: tls_config has cert_file but no key_file"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      key_file: " + key + "\n"),
       "rw.yml:4: tls_config has key_file but no cert_file"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      cert_file: /nonexistent/c.pem\n      key_file: " + key + "\n"),
       "rw.yml:4: cert_file /nonexistent/c.pem: No such file or directory"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      min_version: TLS14\n"),
       "rw.yml:4: unknown min_version 'TLS14' (TLS10, TLS11, TLS12 or TLS13)"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      insecure_skip_verify: yes please\n"),
       "rw.yml:4: insecure_skip_verify must be true or false, not 'yes please'"},
      {tls_cfg_entry("https://a/w", "    tls_config:\n      server_name: host:443\n"),
       "rw.yml:4: invalid server_name 'host:443' (a host name)"},
      {tls_cfg_entry("http://a/w", "    tls_config:\n      ca_file: " + ca + "\n"), "rw.yml:4: tls_config needs an https:// url"},
      {tls_cfg_entry("https://a/w", "    tls_config: [x]\n"), "rw.yml:3: tls_config must be a map"},
      {tls_cfg_entry("https://a/w", "    proxy_url: socks5://p:1080\n"),
       "rw.yml:3: invalid proxy_url 'socks5://p:1080' (http://host:port)"},
      {tls_cfg_entry("https://a/w", "    proxy_url: http://user:pw@/\n"), "rw.yml:3: invalid proxy_url 'http:///'"},
      {tls_cfg_entry("https://a/w", "    no_proxy: .corp\n"), "rw.yml:3: no_proxy needs a proxy_url"},
      {tls_cfg_entry("https://a/w", "    proxy_url: http://p:3128\n    proxy_from_environment: true\n"),
       "rw.yml:4: give proxy_url or proxy_from_environment, not both"},
      {tls_cfg_entry("https://a/w", "    proxy_from_environment: sure\n"),
       "rw.yml:3: proxy_from_environment must be true or false"},
  };
  for (const auto& [text, want] : cases) {
    auto parsed = parse_receivers(text, "rw.yml");
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().rfind(want, 0), 0u) << "got: " << parsed.error() << "\nwant prefix: " << want;
    EXPECT_EQ(parsed.error().find('\n'), std::string::npos);
  }
}

TEST(RemoteWriteTlsConfig, UrlAuthorityIsSplitAroundTheHost) {
  const UrlAuthority a = split_url_authority("https://u:p@[::1]:9443/api/v1/write?x=1");
  EXPECT_EQ(a.prefix, "https://u:p@");
  EXPECT_EQ(a.host, "[::1]");
  EXPECT_EQ(a.port, "9443");
  EXPECT_EQ(a.rest, "/api/v1/write?x=1");
  const UrlAuthority b = split_url_authority("https://mimir.example/push");
  EXPECT_EQ(b.prefix, "https://");
  EXPECT_EQ(b.host, "mimir.example");
  EXPECT_EQ(b.port, "443");
  EXPECT_EQ(b.rest, "/push");
  const UrlAuthority c = split_url_authority("http://[fe80::1]");
  EXPECT_EQ(c.host, "[fe80::1]");
  EXPECT_EQ(c.port, "80");
  EXPECT_EQ(c.rest, "");
}

}  // namespace
}  // namespace gpuscope::remote_write
