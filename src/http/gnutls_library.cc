#include "http/gnutls_library.h"

#include "model/optional_library.h"

namespace gpuscope::http {
namespace {

std::expected<GnutlsApi, std::string> load_gnutls() {
  auto library = model::OptionalLibrary::open({"libgnutls.so.30"}, "GnuTLS");
  if (!library) return std::unexpected(library.error());
  GnutlsApi api{};
  library->bind("gnutls_hash_fast", api.hash_fast);
  library->bind("gnutls_strerror", api.strerror);
  library->bind("gnutls_certificate_allocate_credentials", api.certificate_allocate_credentials);
  library->bind("gnutls_certificate_free_credentials", api.certificate_free_credentials);
  library->bind("gnutls_certificate_set_x509_key_mem2", api.certificate_set_x509_key_mem2);
  library->bind("gnutls_certificate_set_x509_trust_mem", api.certificate_set_x509_trust_mem);
  library->bind("gnutls_priority_init", api.priority_init);
  library->bind("gnutls_priority_deinit", api.priority_deinit);
  library->bind("gnutls_certificate_server_set_request", api.certificate_server_set_request);
  library->bind("gnutls_session_set_verify_function", api.session_set_verify_function);
  library->bind("gnutls_certificate_verify_peers2", api.certificate_verify_peers2);
  library->bind("gnutls_certificate_get_peers", api.certificate_get_peers);
  library->bind("gnutls_session_get_ptr", api.session_get_ptr);
  library->bind("gnutls_handshake_set_hook_function", api.handshake_set_hook_function);
  library->bind("gnutls_x509_crt_init", api.x509_crt_init);
  library->bind("gnutls_x509_crt_deinit", api.x509_crt_deinit);
  library->bind("gnutls_x509_crt_import", api.x509_crt_import);
  library->bind("gnutls_x509_crt_get_subject_alt_name", api.x509_crt_get_subject_alt_name);
  return library->finish(api);
}

}  // namespace

std::expected<const GnutlsApi*, std::string> gnutls_api() { return model::OptionalLibrary::once(&load_gnutls); }

}  // namespace gpuscope::http
