// WebConfig: `serve --web.config.file`, the Prometheus exporter-toolkit's web configuration format (TLS,
// client certificates, basic auth with bcrypt hashes, response headers), read into plain values. Reading
// it checks everything that can be checked without the TLS library; a problem is one line naming the
// file and line.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuscope::http {

// Go's tls.ClientAuthType, by the names the format uses.
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,           // asked for, neither required nor verified
  kRequireAnyClientCert,        // required, not verified
  kVerifyClientCertIfGiven,     // verified when sent
  kRequireAndVerifyClientCert,  // required and verified against the client CA
};

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };

// A PEM source: a file (re-read when it changes) or the text inline in the config.
struct PemSource {
  std::string file;    // resolved against the config file's directory
  std::string inline_pem;
  int line = 0;        // where the config names it (for errors)
  bool empty() const { return file.empty() && inline_pem.empty(); }
};

struct TlsServerConfig {
  PemSource cert, key, client_ca;
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  TlsVersion min_version = TlsVersion::kTls12;
  TlsVersion max_version = TlsVersion::kTls13;
  // Go's names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...), in the order given; empty: the library's.
  std::vector<std::string> cipher_suites;
  std::vector<std::string> curve_preferences;  // Go's names: CurveP256, CurveP384, CurveP521, X25519
  bool prefer_server_cipher_suites = true;
  // client_allowed_sans: the client certificate must carry one of these SANs (DNS, e-mail, IP, URI;
  // exact, as exporter-toolkit compares them). Empty: any. Only with RequireAnyClientCert or
  // RequireAndVerifyClientCert, as in exporter-toolkit.
  std::vector<std::string> client_allowed_sans;
  int line = 0;
};

struct WebConfig {
  std::string path;
  std::optional<TlsServerConfig> tls;
  // http_server_config.headers, added to every response (only the headers exporter-toolkit allows).
  std::vector<std::pair<std::string, std::string>> headers;
  // basic_auth_users: user → bcrypt hash, in file order. Empty: no password asked.
  std::vector<std::pair<std::string, std::string>> basic_auth_users;
  // auth_excluded_paths: exact paths answered without a password (e.g. /healthz for probes).
  std::vector<std::string> auth_excluded_paths;
};

// Reads and checks `path`; the error is one line, "FILE:LINE: what".
std::expected<WebConfig, std::string> load_web_config(const std::string& path);
// The same over text already read (tests); `path` names it in errors and anchors relative file names.
std::expected<WebConfig, std::string> parse_web_config(const std::string& text, const std::string& path);

// "$2y$10$<53 characters>" (also $2a$, $2b$): a bcrypt hash as htpasswd -B and Go's bcrypt write it.
bool is_bcrypt_hash(std::string_view hash);

std::string_view client_auth_name(ClientAuth auth);

}  // namespace gpuscope::http
