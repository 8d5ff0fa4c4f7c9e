#include "notify/curl_library.h"

#include <fmt/format.h>

#include "model/optional_library.h"

namespace gpuscope::notify {
namespace {

std::expected<CurlApi, std::string> load() {
  // Debian's libcurl4 (OpenSSL) first, then the GnuTLS build that libcurl3-gnutls installs.
  auto library = model::OptionalLibrary::open({"libcurl.so.4", "libcurl-gnutls.so.4"}, "libcurl");
  if (!library) return std::unexpected(library.error());
  CurlApi api{};
  library->bind("curl_global_init", api.global_init);
  library->bind("curl_easy_init", api.easy_init);
  library->bind("curl_easy_setopt", api.easy_setopt);
  library->bind("curl_easy_perform", api.easy_perform);
  library->bind("curl_easy_getinfo", api.easy_getinfo);
  library->bind("curl_easy_cleanup", api.easy_cleanup);
  library->bind("curl_easy_strerror", api.easy_strerror);
  library->bind("curl_slist_append", api.slist_append);
  library->bind("curl_slist_free_all", api.slist_free_all);
  auto bound = library->finish(api);
  if (!bound) return bound;
  // Not thread-safe in libcurl: done here, once, before anything can send.
  if (const CURLcode rc = bound->global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
    return std::unexpected(fmt::format("libcurl could not be initialised ({})", bound->easy_strerror(rc)));
  }
  return bound;
}

}  // namespace

std::expected<const CurlApi*, std::string> curl_api() { return model::OptionalLibrary::once(&load); }

}  // namespace gpuscope::notify
