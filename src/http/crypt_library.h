// libcrypt (libxcrypt), opened with dlopen by the first basic-auth check rather than linked: only a
// `serve` with basic_auth_users hashes passwords. Debian's libxcrypt verifies bcrypt ($2a$, $2b$, $2y$).
#pragma once

#include <crypt.h>

#include <expected>
#include <string>

namespace gpuscope::http {

struct CryptApi {
  decltype(&::crypt_r) crypt_r;
};

// libcrypt loaded (once, thread-safely), or one line saying why not. Never unloaded.
std::expected<const CryptApi*, std::string> crypt_api();

}  // namespace gpuscope::http
