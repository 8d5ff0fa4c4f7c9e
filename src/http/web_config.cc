#include "http/web_config.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "http/tls_priorities.h"

namespace gpuscope::http {
namespace {

namespace fs = std::filesystem;

// exporter-toolkit's list, kept as it is for consistency across the Prometheus ecosystem: only these
// headers, and for two of them only these values (an empty list: any value).
struct WebConfigAllowedHeader {
  std::string_view name;
  std::vector<std::string_view> values;
};
const std::vector<WebConfigAllowedHeader>& web_config_allowed_headers() {
  static const std::vector<WebConfigAllowedHeader> headers = {
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
      {"Content-Security-Policy", {}},
  };
  return headers;
}

// Thrown inside this file only, caught by parse_web_config: the first problem ends the read.
struct WebConfigError {
  std::string line;
};

class WebConfigReader {
 public:
  explicit WebConfigReader(const std::string& path) : path_(path), base_(fs::path(path).parent_path()) {}

  [[noreturn]] void fail(const YAML::Node& at, std::string_view message) const {
    const YAML::Mark mark = at.Mark();
    if (mark.line >= 0) throw WebConfigError{fmt::format("{}:{}: {}", path_, mark.line + 1, message)};
    throw WebConfigError{fmt::format("{}: {}", path_, message)};
  }

  static int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

  void only_keys(const YAML::Node& map, std::string_view where, std::initializer_list<std::string_view> keys) const {
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.Scalar();
      bool known = false;
      for (auto k : keys) known = known || k == key;
      if (!known) {
        std::string list;
        for (auto k : keys) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
        fail(it->first, fmt::format("unknown key '{}' in {} (known: {})", key, where, list));
      }
    }
  }

  std::string scalar(const YAML::Node& n, std::string_view what) const {
    if (!n.IsScalar()) fail(n, fmt::format("{} must be a string", what));
    return n.Scalar();
  }

  bool boolean(const YAML::Node& n, std::string_view what) const {
    const std::string s = scalar(n, what);
    if (s == "true") return true;
    if (s == "false") return false;
    fail(n, fmt::format("{} must be true or false, not '{}'", what, s));
  }

  std::vector<std::string> strings(const YAML::Node& n, std::string_view what) const {
    if (n.IsNull()) return {};
    if (!n.IsSequence()) fail(n, fmt::format("{} must be a list of strings", what));
    std::vector<std::string> out;
    for (const auto& item : n) out.push_back(scalar(item, fmt::format("each item of {}", what)));
    return out;
  }

  PemSource pem(const YAML::Node& map, const char* file_key, const char* inline_key) const {
    PemSource s;
    const YAML::Node file = map[file_key], text = map[inline_key];
    if (file && text) fail(text, fmt::format("give {} or {}, not both", file_key, inline_key));
    if (file) {
      const std::string name = scalar(file, file_key);
      if (name.empty()) fail(file, fmt::format("{} is empty", file_key));
      s.file = fs::path(name).is_absolute() || base_.empty() ? name : (base_ / name).string();
      s.line = line_of(file);
    } else if (text) {
      s.inline_pem = scalar(text, inline_key);
      if (s.inline_pem.empty()) fail(text, fmt::format("{} is empty", inline_key));
      s.line = line_of(text);
    }
    return s;
  }

  TlsVersion version(const YAML::Node& n, std::string_view what) const {
    const std::string v = scalar(n, what);
    if (v == "TLS10") return TlsVersion::kTls10;
    if (v == "TLS11") return TlsVersion::kTls11;
    if (v == "TLS12") return TlsVersion::kTls12;
    if (v == "TLS13") return TlsVersion::kTls13;
    fail(n, fmt::format("unknown {} '{}' (TLS10, TLS11, TLS12 or TLS13)", what, v));
  }

  TlsServerConfig tls(const YAML::Node& n) const {
    if (!n.IsMap()) fail(n, "tls_server_config must be a mapping (cert_file, key_file, ...)");
    only_keys(n, "tls_server_config",
              {"cert_file", "key_file", "cert", "key", "client_ca_file", "client_ca", "client_auth_type",
               "client_allowed_sans", "min_version", "max_version", "cipher_suites", "prefer_server_cipher_suites",
               "curve_preferences"});
    TlsServerConfig t;
    t.line = line_of(n);
    t.cert = pem(n, "cert_file", "cert");
    t.key = pem(n, "key_file", "key");
    t.client_ca = pem(n, "client_ca_file", "client_ca");
    if (t.cert.empty()) fail(n, "tls_server_config needs cert_file (or cert)");
    if (t.key.empty()) fail(n, "tls_server_config needs key_file (or key)");
    if (const YAML::Node a = n["client_auth_type"]) {
      const std::string v = scalar(a, "client_auth_type");
      if (v == "NoClientCert") {
        t.client_auth = ClientAuth::kNoClientCert;
      } else if (v == "RequestClientCert") {
        t.client_auth = ClientAuth::kRequestClientCert;
      } else if (v == "RequireAnyClientCert" || v == "RequireClientCert") {
        t.client_auth = ClientAuth::kRequireAnyClientCert;
      } else if (v == "VerifyClientCertIfGiven") {
        t.client_auth = ClientAuth::kVerifyClientCertIfGiven;
      } else if (v == "RequireAndVerifyClientCert") {
        t.client_auth = ClientAuth::kRequireAndVerifyClientCert;
      } else {
        fail(a, fmt::format("unknown client_auth_type '{}' (NoClientCert, RequestClientCert, RequireAnyClientCert, "
                            "VerifyClientCertIfGiven, RequireAndVerifyClientCert)", v));
      }
    }
    const bool verifies = t.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                          t.client_auth == ClientAuth::kRequireAndVerifyClientCert;
    if (!t.client_ca.empty() && t.client_auth == ClientAuth::kNoClientCert) {
      fail(n, "client_ca_file is set but client_auth_type is NoClientCert: set client_auth_type: "
              "RequireAndVerifyClientCert, or remove client_ca_file");
    }
    if (verifies && t.client_ca.empty()) {
      fail(n["client_auth_type"], fmt::format("client_auth_type {} needs client_ca_file: the CA that signs the "
                                              "clients' certificates", client_auth_name(t.client_auth)));
    }
    if (const YAML::Node s = n["client_allowed_sans"]) {
      t.client_allowed_sans = strings(s, "client_allowed_sans");
      for (std::size_t i = 0; i < t.client_allowed_sans.size(); ++i) {
        if (t.client_allowed_sans[i].empty()) fail(s[i], "client_allowed_sans: an empty name (it matches no certificate)");
      }
      // As exporter-toolkit: with the other types a client may send no certificate, leaving nothing to match.
      if (!t.client_allowed_sans.empty() && t.client_auth != ClientAuth::kRequireAnyClientCert &&
          t.client_auth != ClientAuth::kRequireAndVerifyClientCert) {
        fail(s, fmt::format("client_allowed_sans needs client_auth_type RequireAndVerifyClientCert (or "
                            "RequireAnyClientCert), not {}", client_auth_name(t.client_auth)));
      }
    }
    if (const YAML::Node v = n["min_version"]) t.min_version = version(v, "min_version");
    if (const YAML::Node v = n["max_version"]) t.max_version = version(v, "max_version");
    if (t.min_version > t.max_version) fail(n["min_version"] ? n["min_version"] : n, "min_version is above max_version");
    if (const YAML::Node c = n["cipher_suites"]) {
      t.cipher_suites = strings(c, "cipher_suites");
      for (std::size_t i = 0; i < t.cipher_suites.size(); ++i) {
        if (!find_cipher_suite(t.cipher_suites[i])) {
          fail(c[i], fmt::format("unknown or unsupported cipher suite '{}' (see docs/security.md for the list)",
                                 t.cipher_suites[i]));
        }
      }
      if (auto exact = check_cipher_suites_expressible(t.cipher_suites); !exact) fail(c, exact.error());
    }
    if (const YAML::Node p = n["prefer_server_cipher_suites"]) {
      t.prefer_server_cipher_suites = boolean(p, "prefer_server_cipher_suites");
    }
    if (const YAML::Node c = n["curve_preferences"]) {
      t.curve_preferences = strings(c, "curve_preferences");
      for (std::size_t i = 0; i < t.curve_preferences.size(); ++i) {
        if (!gnutls_group_name(t.curve_preferences[i])) {
          fail(c[i], fmt::format("unknown curve '{}' (CurveP256, CurveP384, CurveP521, X25519)", t.curve_preferences[i]));
        }
      }
    }
    return t;
  }

  void http_server(const YAML::Node& n, WebConfig& c) const {
    if (n.IsNull()) return;
    if (!n.IsMap()) fail(n, "http_server_config must be a mapping (http2, headers)");
    only_keys(n, "http_server_config", {"http2", "headers"});
    // HTTP/2 is not spoken (libmicrohttpd is HTTP/1.1); `http2: true` is exporter-toolkit's default, and
    // clients fall back to HTTP/1.1 through ALPN either way.
    if (const YAML::Node h = n["http2"]) boolean(h, "http2");
    const YAML::Node headers = n["headers"];
    if (!headers || headers.IsNull()) return;
    if (!headers.IsMap()) fail(headers, "http_server_config.headers must be a mapping of header: value");
    for (auto it = headers.begin(); it != headers.end(); ++it) {
      const std::string name = it->first.Scalar();
      const std::string value = scalar(it->second, name);
      const WebConfigAllowedHeader* allowed = nullptr;
      for (const auto& a : web_config_allowed_headers()) {
        if (a.name == name) allowed = &a;
      }
      if (allowed == nullptr) {
        fail(it->first, fmt::format("HTTP header '{}' can not be configured (only Strict-Transport-Security, "
                                    "X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, "
                                    "Content-Security-Policy)", name));
      }
      if (value.find_first_of("\r\n") != std::string::npos) fail(it->second, fmt::format("{}: a line break in the value", name));
      if (!allowed->values.empty()) {
        bool ok = false;
        for (auto v : allowed->values) ok = ok || v == value;
        if (!ok) {
          std::string list;
          for (auto v : allowed->values) list += fmt::format("{}{}", list.empty() ? "" : ", ", v);
          fail(it->second, fmt::format("invalid value '{}' for {} (one of: {})", value, name, list));
        }
      }
      if (value.empty()) continue;  // "unset if blank"
      c.headers.emplace_back(name, value);
    }
  }

  WebConfig read(const YAML::Node& root) const {
    WebConfig c;
    c.path = path_;
    if (!root || root.IsNull()) return c;
    if (!root.IsMap()) fail(root, "the web config is a mapping (tls_server_config, http_server_config, basic_auth_users)");
    only_keys(root, "the web config",
              {"tls_server_config", "http_server_config", "basic_auth_users", "auth_excluded_paths", "rate_limit"});
    if (const YAML::Node r = root["rate_limit"]) fail(r, "rate_limit is not supported by gpuscope (--max-connections bounds the load)");
    if (const YAML::Node t = root["tls_server_config"]; t && !t.IsNull()) c.tls = tls(t);
    if (const YAML::Node h = root["http_server_config"]) http_server(h, c);
    if (const YAML::Node u = root["basic_auth_users"]; u && !u.IsNull()) {
      if (!u.IsMap()) fail(u, "basic_auth_users must be a mapping of user: bcrypt hash");
      std::set<std::string> seen;
      for (auto it = u.begin(); it != u.end(); ++it) {
        const std::string user = it->first.Scalar();
        const std::string hash = scalar(it->second, fmt::format("the hash of user '{}'", user));
        if (user.empty() || user.find(':') != std::string::npos) {
          fail(it->first, fmt::format("invalid user name '{}' (not empty, no ':')", user));
        }
        if (!seen.insert(user).second) fail(it->first, fmt::format("user '{}' is listed twice", user));
        // The hash is checked, never printed: a mistaken plain password in its place stays out of the log.
        if (!is_bcrypt_hash(hash)) {
          fail(it->second, fmt::format("the password of user '{}' is not a bcrypt hash ($2y$, $2b$ or $2a$, cost 04 "
                                       "to 31, 60 characters; make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`)",
                                       user));
        }
        c.basic_auth_users.emplace_back(user, hash);
      }
    }
    if (const YAML::Node p = root["auth_excluded_paths"]) {
      c.auth_excluded_paths = strings(p, "auth_excluded_paths");
      for (std::size_t i = 0; i < c.auth_excluded_paths.size(); ++i) {
        if (!c.auth_excluded_paths[i].starts_with('/')) {
          fail(p[i], fmt::format("auth_excluded_paths: '{}' is not a path (starts with /)", c.auth_excluded_paths[i]));
        }
      }
    }
    return c;
  }

 private:
  std::string path_;
  fs::path base_;
};

}  // namespace

bool is_bcrypt_hash(std::string_view h) {
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9') return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (char ch : h.substr(7)) {
    const bool b64 = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '/';
    if (!b64) return false;
  }
  return true;
}

std::string_view client_auth_name(ClientAuth auth) {
  switch (auth) {
    case ClientAuth::kNoClientCert: return "NoClientCert";
    case ClientAuth::kRequestClientCert: return "RequestClientCert";
    case ClientAuth::kRequireAnyClientCert: return "RequireAnyClientCert";
    case ClientAuth::kVerifyClientCertIfGiven: return "VerifyClientCertIfGiven";
    case ClientAuth::kRequireAndVerifyClientCert: return "RequireAndVerifyClientCert";
  }
  return "?";
}

std::expected<WebConfig, std::string> parse_web_config(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
  try {
    return WebConfigReader(path).read(root);
  } catch (const WebConfigError& e) {
    return std::unexpected(e.line);
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
}

std::expected<WebConfig, std::string> load_web_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::unexpected(fmt::format("{}: cannot read", path));
  return parse_web_config(text.str(), path);
}

}  // namespace gpuscope::http
