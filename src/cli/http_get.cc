#include "cli/http_get.h"

#include <fmt/format.h>

#include "notify/curl_library.h"

namespace gpuscope::cli {
namespace {

std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

constexpr std::size_t kExcerptBytes = 120;

}  // namespace

std::expected<HttpAnswer, std::string> http_get(const std::string& url, std::chrono::milliseconds timeout) {
  auto api = notify::curl_api();
  if (!api) return std::unexpected(api.error());
  const notify::CurlApi& curl_fns = **api;
  CURL* curl = curl_fns.easy_init();
  if (curl == nullptr) return std::unexpected("cannot initialize libcurl");
  HttpAnswer answer;
  char error[CURL_ERROR_SIZE] = {0};
  curl_fns.easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_fns.easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
  curl_fns.easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_fns.easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_fns.easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_fns.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_fns.easy_perform(curl);
  if (rc == CURLE_OK) {
    curl_fns.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
    const char* type = nullptr;
    if (curl_fns.easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type != nullptr) answer.content_type = type;
  }
  curl_fns.easy_cleanup(curl);
  if (rc != CURLE_OK) {
    std::string what = *error != '\0' ? error : curl_fns.easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) what += fmt::format(" (--timeout {}ms)", timeout.count());
    return std::unexpected(fmt::format("{}: {}", url, what));
  }
  return answer;
}

std::string body_excerpt(std::string_view body) {
  if (body.empty()) return "empty body";
  std::string out = "\"";
  for (const char ch : body.substr(0, kExcerptBytes)) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  if (body.size() > kExcerptBytes) out += fmt::format("... ({} bytes)", body.size());
  return out;
}

}  // namespace gpuscope::cli
