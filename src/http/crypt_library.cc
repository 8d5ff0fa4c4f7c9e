#include "http/crypt_library.h"

#include "model/optional_library.h"

namespace gpuscope::http {
namespace {

std::expected<CryptApi, std::string> load_crypt() {
  auto library = model::OptionalLibrary::open({"libcrypt.so.1"}, "libcrypt");
  if (!library) return std::unexpected(library.error());
  CryptApi api{};
  library->bind("crypt_r", api.crypt_r);
  return library->finish(api);
}

}  // namespace

std::expected<const CryptApi*, std::string> crypt_api() { return model::OptionalLibrary::once(&load_crypt); }

}  // namespace gpuscope::http
