#include "http/tls_priorities.h"

#include <algorithm>
#include <array>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "http/web_config.h"

namespace gpuscope::http {
namespace {

// Go's crypto/tls names (CipherSuites and InsecureCipherSuites) that GnuTLS also implements.
constexpr std::array kTlsCipherSuites = {
    CipherSuite{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM", "AEAD"},
    CipherSuite{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM", "AEAD"},
    CipherSuite{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD"},
    CipherSuite{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD"},
    CipherSuite{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
    CipherSuite{"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
    CipherSuite{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    CipherSuite{"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    CipherSuite{"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1"},
    CipherSuite{"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1"},
    CipherSuite{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1"},
    CipherSuite{"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1"},
    CipherSuite{"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA", "AES-128-CBC", "SHA256"},
    CipherSuite{"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA", "AES-128-CBC", "SHA256"},
    CipherSuite{"TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD"},
    CipherSuite{"TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD"},
    CipherSuite{"TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1"},
    CipherSuite{"TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1"},
    CipherSuite{"TLS_RSA_WITH_AES_128_CBC_SHA256", "RSA", "AES-128-CBC", "SHA256"},
    CipherSuite{"TLS_AES_128_GCM_SHA256", "", "AES-128-GCM", "AEAD"},
    CipherSuite{"TLS_AES_256_GCM_SHA384", "", "AES-256-GCM", "AEAD"},
    CipherSuite{"TLS_CHACHA20_POLY1305_SHA256", "", "CHACHA20-POLY1305", "AEAD"},
};

// Suites GnuTLS has over the same key exchanges, ciphers and MACs that Go does not name: a product
// that reaches one of them is wider than any list of Go names can say.
constexpr std::array kGnutlsOnlySuites = {
    CipherSuite{"TLS_RSA_WITH_AES_256_CBC_SHA256", "RSA", "AES-256-CBC", "SHA256"},
};

constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kTlsCurves = {{
    {"CurveP256", "GROUP-SECP256R1"},
    {"CurveP384", "GROUP-SECP384R1"},
    {"CurveP521", "GROUP-SECP521R1"},
    {"X25519", "GROUP-X25519"},
}};

// Distinct values in first-seen order: the order is the server's preference.
void add_priority_once(std::vector<std::string_view>& v, std::string_view x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

std::optional<CipherSuite> find_cipher_suite(std::string_view go_name) {
  for (const auto& s : kTlsCipherSuites) {
    if (s.go_name == go_name) return s;
  }
  return std::nullopt;
}

std::expected<void, std::string> check_cipher_suites_expressible(const std::vector<std::string>& go_names) {
  std::set<std::tuple<std::string_view, std::string_view, std::string_view>> listed;
  std::set<std::string_view> kxs, ciphers, macs;
  for (const auto& name : go_names) {
    const auto s = find_cipher_suite(name);
    if (!s || s->kx.empty()) continue;
    listed.emplace(s->kx, s->cipher, s->mac);
    kxs.insert(s->kx);
    ciphers.insert(s->cipher);
    macs.insert(s->mac);
  }
  auto check = [&](const CipherSuite& s) -> std::expected<void, std::string> {
    if (s.kx.empty() || !kxs.contains(s.kx) || !ciphers.contains(s.cipher) || !macs.contains(s.mac)) return {};
    if (listed.contains({s.kx, s.cipher, s.mac})) return {};
    return std::unexpected(fmt::format(
        "cipher_suites: GnuTLS enables every combination of the listed key exchanges, ciphers and MACs, so this "
        "list would also enable {}: add it, or list fewer key exchanges, ciphers or MACs",
        s.go_name));
  };
  for (const auto& s : kTlsCipherSuites) {
    if (auto ok = check(s); !ok) return ok;
  }
  for (const auto& s : kGnutlsOnlySuites) {
    if (auto ok = check(s); !ok) return ok;
  }
  return {};
}

std::optional<std::string_view> gnutls_group_name(std::string_view go_curve) {
  for (const auto& [go, gnutls] : kTlsCurves) {
    if (go == go_curve) return gnutls;
  }
  return std::nullopt;
}

std::string gnutls_priorities(const TlsServerConfig& tls) {
  std::string p = "NORMAL:-VERS-ALL";
  constexpr std::array<std::pair<TlsVersion, std::string_view>, 4> versions = {{
      {TlsVersion::kTls13, "+VERS-TLS1.3"},
      {TlsVersion::kTls12, "+VERS-TLS1.2"},
      {TlsVersion::kTls11, "+VERS-TLS1.1"},
      {TlsVersion::kTls10, "+VERS-TLS1.0"},
  }};
  for (const auto& [v, name] : versions) {
    if (v >= tls.min_version && v <= tls.max_version) p += fmt::format(":{}", name);
  }
  if (!tls.cipher_suites.empty()) {
    std::vector<std::string_view> kxs, ciphers, macs;
    for (const auto& name : tls.cipher_suites) {
      const auto s = find_cipher_suite(name);
      if (!s) continue;
      if (!s->kx.empty()) add_priority_once(kxs, s->kx);
      add_priority_once(ciphers, s->cipher);
      add_priority_once(macs, s->mac);
    }
    if (!kxs.empty()) {
      p += ":-KX-ALL";
      for (auto k : kxs) p += fmt::format(":+{}", k);
    }
    p += ":-CIPHER-ALL";
    for (auto c : ciphers) p += fmt::format(":+{}", c);
    p += ":-MAC-ALL";
    for (auto m : macs) p += fmt::format(":+{}", m);
  }
  if (!tls.curve_preferences.empty()) {
    p += ":-GROUP-ALL";
    for (const auto& c : tls.curve_preferences) {
      if (auto g = gnutls_group_name(c)) p += fmt::format(":+{}", *g);
    }
  }
  if (tls.prefer_server_cipher_suites) p += ":%SERVER_PRECEDENCE";
  return p;
}

}  // namespace gpuscope::http
