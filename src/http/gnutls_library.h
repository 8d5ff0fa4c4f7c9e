// GnuTLS, opened with dlopen by a `serve` whose web config asks for TLS (or caches basic-auth checks):
// the same copy libmicrohttpd links, so the agent configures the sessions libmicrohttpd creates. Other
// commands never load it. Types and constants come from <gnutls/gnutls.h>.
#pragma once

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <expected>
#include <string>

namespace gpuscope::http {

struct GnutlsApi {
  decltype(&::gnutls_hash_fast) hash_fast;
  decltype(&::gnutls_strerror) strerror;
  decltype(&::gnutls_certificate_allocate_credentials) certificate_allocate_credentials;
  decltype(&::gnutls_certificate_free_credentials) certificate_free_credentials;
  decltype(&::gnutls_certificate_set_x509_key_mem2) certificate_set_x509_key_mem2;
  decltype(&::gnutls_certificate_set_x509_trust_mem) certificate_set_x509_trust_mem;
  decltype(&::gnutls_priority_init) priority_init;
  decltype(&::gnutls_priority_deinit) priority_deinit;
  decltype(&::gnutls_certificate_server_set_request) certificate_server_set_request;
  decltype(&::gnutls_session_set_verify_function) session_set_verify_function;
  decltype(&::gnutls_certificate_verify_peers2) certificate_verify_peers2;
  decltype(&::gnutls_certificate_get_peers) certificate_get_peers;
  decltype(&::gnutls_session_get_ptr) session_get_ptr;
  decltype(&::gnutls_handshake_set_hook_function) handshake_set_hook_function;
  // The client certificate's subject alternative names (client_allowed_sans).
  decltype(&::gnutls_x509_crt_init) x509_crt_init;
  decltype(&::gnutls_x509_crt_deinit) x509_crt_deinit;
  decltype(&::gnutls_x509_crt_import) x509_crt_import;
  decltype(&::gnutls_x509_crt_get_subject_alt_name) x509_crt_get_subject_alt_name;
};

// GnuTLS loaded (once, thread-safely), or one line saying why not. Never unloaded.
std::expected<const GnutlsApi*, std::string> gnutls_api();

}  // namespace gpuscope::http
