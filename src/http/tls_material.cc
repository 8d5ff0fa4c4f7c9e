#include "http/tls_material.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "http/gnutls_library.h"
#include "http/tls_priorities.h"

namespace gpuscope::http {
namespace {

std::expected<std::string, std::string> read_tls_pem(const PemSource& s, const char* file_key, const std::string& config_path) {
  if (s.file.empty()) return s.inline_pem;
  std::ifstream in(s.file, std::ios::binary);
  if (!in) return std::unexpected(fmt::format("{}:{}: {} {}: cannot read: {}", config_path, s.line, file_key, s.file, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

gnutls_datum_t tls_datum(const std::string& s) {
  return {reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())), static_cast<unsigned>(s.size())};
}

}  // namespace

std::expected<TlsMaterial, std::string> load_tls_material(const TlsServerConfig& tls, const std::string& config_path) {
  auto api = gnutls_api();
  if (!api) return std::unexpected(fmt::format("{}:{}: tls_server_config: {}", config_path, tls.line, api.error()));
  const GnutlsApi& g = **api;
  TlsMaterial m;
  m.client_auth = tls.client_auth;
  m.client_allowed_sans = tls.client_allowed_sans;
  m.priorities = gnutls_priorities(tls);
  auto cert = read_tls_pem(tls.cert, "cert_file", config_path);
  if (!cert) return std::unexpected(cert.error());
  auto key = read_tls_pem(tls.key, "key_file", config_path);
  if (!key) return std::unexpected(key.error());
  m.cert_pem = std::move(*cert);
  m.key_pem = std::move(*key);
  if (!tls.client_ca.empty()) {
    auto ca = read_tls_pem(tls.client_ca, "client_ca_file", config_path);
    if (!ca) return std::unexpected(ca.error());
    m.client_ca_pem = std::move(*ca);
  }

  gnutls_certificate_credentials_t creds = nullptr;
  if (g.certificate_allocate_credentials(&creds) != GNUTLS_E_SUCCESS) {
    return std::unexpected(fmt::format("{}: GnuTLS could not allocate credentials", config_path));
  }
  const gnutls_datum_t c = tls_datum(m.cert_pem), k = tls_datum(m.key_pem);
  const int rc = g.certificate_set_x509_key_mem2(creds, &c, &k, GNUTLS_X509_FMT_PEM, nullptr, 0);
  std::string error;
  if (rc < 0) {
    error = fmt::format("{}:{}: the certificate and key ({}, {}) do not load: {}", config_path, tls.cert.line,
                        tls.cert.file.empty() ? "inline" : tls.cert.file, tls.key.file.empty() ? "inline" : tls.key.file,
                        g.strerror(rc));
  } else if (!m.client_ca_pem.empty()) {
    const gnutls_datum_t ca = tls_datum(m.client_ca_pem);
    const int n = g.certificate_set_x509_trust_mem(creds, &ca, GNUTLS_X509_FMT_PEM);
    if (n <= 0) {
      error = fmt::format("{}:{}: client CA {} holds no certificate GnuTLS can read{}", config_path, tls.client_ca.line,
                          tls.client_ca.file.empty() ? "(inline)" : tls.client_ca.file,
                          n < 0 ? fmt::format(" ({})", g.strerror(n)) : "");
    }
  }
  g.certificate_free_credentials(creds);
  if (!error.empty()) return std::unexpected(error);

  gnutls_priority_t priority = nullptr;
  const char* err_pos = nullptr;
  if (int p = g.priority_init(&priority, m.priorities.c_str(), &err_pos); p < 0) {
    return std::unexpected(fmt::format("{}:{}: GnuTLS rejects the TLS settings (priority '{}' at '{}'): {}", config_path,
                                       tls.line, m.priorities, err_pos != nullptr ? err_pos : "", g.strerror(p)));
  }
  g.priority_deinit(priority);
  return m;
}

}  // namespace gpuscope::http
