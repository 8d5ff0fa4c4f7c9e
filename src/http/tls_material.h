// TlsMaterial: what the HTTP server needs to speak TLS, read from a web config's tls_server_config
// (the PEM files' contents, the GnuTLS priority string, the client-certificate policy) and checked with
// GnuTLS before it is used: a certificate that does not match its key, a CA file with no certificate,
// a priority GnuTLS rejects are one line naming the config file and line, at start or on a reload.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "http/web_config.h"

namespace gpuscope::http {

struct TlsMaterial {
  std::string cert_pem, key_pem, client_ca_pem;
  std::string priorities;
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  std::vector<std::string> client_allowed_sans;  // empty: any SAN (see client_sans.h)
  bool operator==(const TlsMaterial&) const = default;
};

std::expected<TlsMaterial, std::string> load_tls_material(const TlsServerConfig& tls, const std::string& config_path);

}  // namespace gpuscope::http
