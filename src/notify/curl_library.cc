#include "notify/curl_library.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace gpuscope::notify {
namespace {

// Debian's libcurl4 (OpenSSL) first, then the GnuTLS build that libcurl3-gnutls installs.
constexpr const char* kSonames[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};

template <typename F>
void bind(void* library, const char* name, F& function, std::string& missing) {
  function = reinterpret_cast<F>(::dlsym(library, name));
  if (function == nullptr && missing.empty()) missing = name;
}

std::expected<CurlApi, std::string> load() {
  void* library = nullptr;
  std::string why;
  for (const char* soname : kSonames) {
    library = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    if (why.empty()) why = ::dlerror();
  }
  if (library == nullptr) return std::unexpected(fmt::format("libcurl is not installed ({})", why));
  CurlApi api{};
  std::string missing;
  bind(library, "curl_global_init", api.global_init, missing);
  bind(library, "curl_easy_init", api.easy_init, missing);
  bind(library, "curl_easy_setopt", api.easy_setopt, missing);
  bind(library, "curl_easy_perform", api.easy_perform, missing);
  bind(library, "curl_easy_getinfo", api.easy_getinfo, missing);
  bind(library, "curl_easy_cleanup", api.easy_cleanup, missing);
  bind(library, "curl_easy_strerror", api.easy_strerror, missing);
  bind(library, "curl_slist_append", api.slist_append, missing);
  bind(library, "curl_slist_free_all", api.slist_free_all, missing);
  if (!missing.empty()) {
    ::dlclose(library);
    return std::unexpected(fmt::format("the installed libcurl lacks {}", missing));
  }
  // Not thread-safe in libcurl: done here, under call_once, before anything can send.
  if (const CURLcode rc = api.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
    return std::unexpected(fmt::format("libcurl could not be initialised ({})", api.easy_strerror(rc)));
  }
  return api;
}

}  // namespace

std::expected<const CurlApi*, std::string> curl_api() {
  static std::once_flag once;
  static std::expected<CurlApi, std::string> loaded = std::unexpected(std::string());
  std::call_once(once, [] { loaded = load(); });
  if (!loaded) return std::unexpected(loaded.error());
  return &*loaded;
}

}  // namespace gpuscope::notify
