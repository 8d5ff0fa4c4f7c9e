// libcurl, opened with dlopen the first time something sends rather than linked: libcurl and what it
// pulls in (OpenSSL, GnuTLS, Kerberos, LDAP, SSH, ...) cost a program that links it about 7 ms of
// start-up and 6 MiB resident, and only notifications and `gpuscope eval --url` use it. The agent
// without --config and `gpuscope trace` never load it. Types and constants come from <curl/curl.h>.
#pragma once

#include <curl/curl.h>

#include <expected>
#include <string>

namespace gpuscope::notify {

// The functions gpuscope calls, by their libcurl names less "curl_", with the header's own types
// (decltype names no symbol, so nothing is linked). easy_setopt and easy_getinfo are variadic, as in
// libcurl: pass long, curl_off_t, pointers and function pointers exactly as its manual says for each
// option (the <curl/curl.h> type-checking macros do not apply through these pointers).
struct CurlApi {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_perform) easy_perform;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
};

// libcurl loaded and globally initialised (once, thread-safely), or one line saying why it cannot be:
// "libcurl is not installed (libcurl.so.4: cannot open shared object file ...)". Never unloaded.
std::expected<const CurlApi*, std::string> curl_api();

}  // namespace gpuscope::notify
