#include "http/microhttpd_library.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace gpuscope::http {
namespace {

template <typename F>
void bind(void* library, const char* name, F& function, std::string& missing) {
  function = reinterpret_cast<F>(::dlsym(library, name));
  if (function == nullptr && missing.empty()) missing = name;
}

std::expected<MicrohttpdApi, std::string> load() {
  void* library = ::dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return std::unexpected(fmt::format("libmicrohttpd is not installed ({})", ::dlerror()));
  MicrohttpdApi api{};
  std::string missing;
  bind(library, "MHD_start_daemon", api.start_daemon, missing);
  bind(library, "MHD_stop_daemon", api.stop_daemon, missing);
  bind(library, "MHD_get_daemon_info", api.get_daemon_info, missing);
  bind(library, "MHD_get_connection_info", api.get_connection_info, missing);
  bind(library, "MHD_lookup_connection_value", api.lookup_connection_value, missing);
  bind(library, "MHD_get_connection_values", api.get_connection_values, missing);
  bind(library, "MHD_create_response_from_buffer", api.create_response_from_buffer, missing);
  bind(library, "MHD_create_response_from_buffer_with_free_callback_cls",
       api.create_response_from_buffer_with_free_callback_cls, missing);
  bind(library, "MHD_add_response_header", api.add_response_header, missing);
  bind(library, "MHD_queue_response", api.queue_response, missing);
  bind(library, "MHD_destroy_response", api.destroy_response, missing);
  if (!missing.empty()) {
    ::dlclose(library);
    return std::unexpected(fmt::format("the installed libmicrohttpd lacks {}", missing));
  }
  return api;
}

}  // namespace

std::expected<const MicrohttpdApi*, std::string> microhttpd_api() {
  static std::once_flag once;
  static std::expected<MicrohttpdApi, std::string> loaded = std::unexpected(std::string());
  std::call_once(once, [] { loaded = load(); });
  if (!loaded) return std::unexpected(loaded.error());
  return &*loaded;
}

}  // namespace gpuscope::http
