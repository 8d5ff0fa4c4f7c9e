// A C library opened with dlopen the first time it is needed instead of linked, for what only some
// commands use (libmicrohttpd for `serve`, libcurl for notifications): a linked library costs every
// process its loading and symbol relocation at start-up and its pages in RSS. The caller lists the
// functions it binds; the result is loaded once, thread-safely, and never unloaded.
#pragma once

#include <dlfcn.h>

#include <expected>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>

namespace gpuscope::model {

class OptionalLibrary {
 public:
  // The first of `sonames` that opens, or one line: "<what> is not installed (<dlerror>)".
  static std::expected<OptionalLibrary, std::string> open(std::initializer_list<const char*> sonames,
                                                          const std::string& what) {
    std::string why;
    for (const char* soname : sonames) {
      if (void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL)) return OptionalLibrary(handle, what);
      if (const char* error = ::dlerror(); why.empty() && error != nullptr) why = error;
    }
    return std::unexpected(what + " is not installed (" + why + ")");
  }

  // Sets `function` to the symbol `name`; a missing one is remembered for finish().
  template <typename F>
  void bind(const char* name, F& function) {
    function = reinterpret_cast<F>(::dlsym(handle_, name));
    if (function == nullptr && missing_.empty()) missing_ = name;
  }

  // `api` when every bind() found its symbol; otherwise the library is closed again and the first
  // missing symbol named.
  template <typename Api>
  std::expected<Api, std::string> finish(const Api& api) {
    if (missing_.empty()) return api;
    ::dlclose(handle_);
    return std::unexpected("the installed " + what_ + " lacks " + missing_);
  }

  // `load()`'s result, computed on the first call only (per Api type).
  template <typename Api>
  static std::expected<const Api*, std::string> once(std::expected<Api, std::string> (*load)()) {
    static std::once_flag flag;
    static std::expected<Api, std::string> loaded = std::unexpected(std::string());
    std::call_once(flag, [load] { loaded = load(); });
    if (!loaded) return std::unexpected(loaded.error());
    return &*loaded;
  }

 private:
  OptionalLibrary(void* handle, std::string what) : handle_(handle), what_(std::move(what)) {}
  void* handle_;
  std::string what_;
  std::string missing_;
};

}  // namespace gpuscope::model
