// What tls_server_config's versions, cipher suites and curves (Go's names) are in GnuTLS's terms: a
// priority string. GnuTLS enables every combination of the key exchanges, ciphers and MACs a priority
// string lists, so a list of suites that is not such a product cannot be expressed exactly; it is
// refused with the suites that would come along, rather than silently widened.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::http {

struct TlsServerConfig;

struct CipherSuite {
  std::string_view go_name;
  std::string_view kx;      // GnuTLS priority names: ECDHE-RSA, ECDHE-ECDSA, RSA; empty: a TLS 1.3 suite
  std::string_view cipher;  // AES-128-GCM, ...
  std::string_view mac;     // AEAD, SHA1, SHA256
};

// A suite by Go's name (TLS 1.3 suites included: Go accepts and ignores them), or nullopt when unknown or
// not available in GnuTLS (RC4, 3DES).
std::optional<CipherSuite> find_cipher_suite(std::string_view go_name);
// Fails (one line, naming a suite to add) when GnuTLS would also enable suites the list leaves out.
std::expected<void, std::string> check_cipher_suites_expressible(const std::vector<std::string>& go_names);
// CurveP256 → GROUP-SECP256R1, ...; nullopt when unknown.
std::optional<std::string_view> gnutls_group_name(std::string_view go_curve);
// The priority string for gnutls_priority_init (and MHD_OPTION_HTTPS_PRIORITIES).
std::string gnutls_priorities(const TlsServerConfig& tls);

}  // namespace gpuscope::http
