// libcurl's side of WriteTransport: one easy handle per receiver, reused so requests share a connection.
#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "notify/curl_library.h"
#include "remote_write/write_transport.h"

namespace gpuscope::remote_write {

namespace {

constexpr std::size_t kMaxErrorBodyBytes = 512;  // a receiver's error text for the log line

struct Response {
  std::string body;
  std::optional<std::chrono::milliseconds> retry_after;
};

std::size_t rw_collect_body(char* data, std::size_t size, std::size_t n, void* out) {
  auto* response = static_cast<Response*>(out);
  const std::size_t len = size * n;
  if (response->body.size() < kMaxErrorBodyBytes) {
    response->body.append(data, std::min(len, kMaxErrorBodyBytes - response->body.size()));
  }
  return len;
}

std::size_t rw_collect_header(char* data, std::size_t size, std::size_t n, void* out) {
  auto* response = static_cast<Response*>(out);
  const std::size_t len = size * n;
  std::string_view line(data, len);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    std::string lower(line.substr(0, kName.size()));
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == kName) {
      std::string_view value = line.substr(kName.size());
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      long seconds = 0;
      // The seconds form only; an HTTP date falls back to the backoff.
      if (auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
          ec == std::errc() && seconds >= 0) {
        response->retry_after = std::chrono::seconds(seconds);
      }
    }
  }
  return len;
}

int rw_progress(void* abort, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* flag = static_cast<const std::atomic<bool>*>(abort);
  return flag != nullptr && flag->load() ? 1 : 0;
}

std::string rw_one_line(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 200)) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

class CurlWriteTransport final : public WriteTransport {
 public:
  CurlWriteTransport(const ReceiverConfig& receiver, std::string user_agent, const std::atomic<bool>* abort)
      : receiver_(receiver), user_agent_(std::move(user_agent)), abort_(abort) {}
  ~CurlWriteTransport() override {
    if (api_ == nullptr) return;
    if (headers_ != nullptr) api_->slist_free_all(headers_);
    if (curl_ != nullptr) api_->easy_cleanup(curl_);
  }

  PostResult post(const std::string& body) override {
    if (auto ready = prepare(); !ready) return PostResult{0, ready.error(), std::nullopt};
    Response response;
    char error[CURL_ERROR_SIZE] = {};
    api_->easy_setopt(curl_, CURLOPT_ERRORBUFFER, error);
    api_->easy_setopt(curl_, CURLOPT_POSTFIELDS, body.data());
    api_->easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    api_->easy_setopt(curl_, CURLOPT_WRITEDATA, &response);
    api_->easy_setopt(curl_, CURLOPT_HEADERDATA, &response);
    const CURLcode rc = api_->easy_perform(curl_);
    if (rc != CURLE_OK) return PostResult{0, rw_one_line(error[0] != '\0' ? error : api_->easy_strerror(rc)), std::nullopt};
    long status = 0;
    api_->easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    return PostResult{static_cast<int>(status), rw_one_line(response.body), response.retry_after};
  }

 private:
  // The handle and its fixed options, once.
  std::expected<void, std::string> prepare() {
    if (curl_ != nullptr) return {};
    auto api = notify::curl_api();
    if (!api) return std::unexpected(api.error());
    api_ = *api;
    curl_ = api_->easy_init();
    if (curl_ == nullptr) return std::unexpected("curl_easy_init failed");
    for (const std::string& h : {std::string("Content-Encoding: snappy"), std::string("Content-Type: application/x-protobuf"),
                                 std::string("X-Prometheus-Remote-Write-Version: 0.1.0"), std::string("Expect:")}) {
      headers_ = api_->slist_append(headers_, h.c_str());
    }
    if (!receiver_.bearer_token.empty()) {
      headers_ = api_->slist_append(headers_, fmt::format("Authorization: Bearer {}", receiver_.bearer_token).c_str());
    }
    for (const auto& [name, value] : receiver_.headers) {
      headers_ = api_->slist_append(headers_, fmt::format("{}: {}", name, value).c_str());
    }
    const long timeout_ms = static_cast<long>(receiver_.remote_timeout.count());
    api_->easy_setopt(curl_, CURLOPT_URL, receiver_.url.c_str());
    api_->easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https");
    api_->easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    api_->easy_setopt(curl_, CURLOPT_TIMEOUT_MS, timeout_ms);
    api_->easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    api_->easy_setopt(curl_, CURLOPT_NOPROGRESS, 0L);
    api_->easy_setopt(curl_, CURLOPT_XFERINFOFUNCTION, rw_progress);
    api_->easy_setopt(curl_, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(abort_));
    api_->easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
    api_->easy_setopt(curl_, CURLOPT_USERAGENT, user_agent_.c_str());
    api_->easy_setopt(curl_, CURLOPT_POST, 1L);
    api_->easy_setopt(curl_, CURLOPT_WRITEFUNCTION, rw_collect_body);
    api_->easy_setopt(curl_, CURLOPT_HEADERFUNCTION, rw_collect_header);
    if (!receiver_.basic_auth_username.empty()) {
      api_->easy_setopt(curl_, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
      api_->easy_setopt(curl_, CURLOPT_USERNAME, receiver_.basic_auth_username.c_str());
      api_->easy_setopt(curl_, CURLOPT_PASSWORD, receiver_.basic_auth_password.c_str());
    }
    return {};
  }

  const ReceiverConfig receiver_;
  const std::string user_agent_;
  const std::atomic<bool>* abort_;
  const notify::CurlApi* api_ = nullptr;
  CURL* curl_ = nullptr;
  curl_slist* headers_ = nullptr;
};

}  // namespace

std::unique_ptr<WriteTransport> make_curl_transport(const ReceiverConfig& receiver, std::string user_agent,
                                                    const std::atomic<bool>* abort) {
  return std::make_unique<CurlWriteTransport>(receiver, std::move(user_agent), abort);
}

}  // namespace gpuscope::remote_write
