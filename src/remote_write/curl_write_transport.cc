// libcurl's side of WriteTransport: one easy handle per receiver, reused so requests share a connection.
#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sys/stat.h>

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

// What identifies a TLS file's content cheaply: inode (a rename over it), size and mtime. Missing: zeros.
std::string rw_tls_file_stamp(const std::string& path) {
  struct stat st{};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return "-";
  return fmt::format("{}:{}:{}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

class CurlWriteTransport final : public WriteTransport {
 public:
  CurlWriteTransport(const ReceiverConfig& receiver, std::string user_agent, const std::atomic<bool>* abort)
      : receiver_(receiver), user_agent_(std::move(user_agent)), abort_(abort) {}
  ~CurlWriteTransport() override {
    if (api_ == nullptr) return;
    if (headers_ != nullptr) api_->slist_free_all(headers_);
    if (connect_to_ != nullptr) api_->slist_free_all(connect_to_);
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
    // A certificate, key or CA replaced on disk (rotation): this request opens a new connection, without
    // resuming the old TLS session, so libcurl reads the files again. Otherwise the kept-alive one serves.
    const bool rotated = tls_files_changed();
    if (rotated) {
      api_->easy_setopt(curl_, CURLOPT_FRESH_CONNECT, 1L);
      api_->easy_setopt(curl_, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    }
    const CURLcode rc = api_->easy_perform(curl_);
    if (rotated) {
      api_->easy_setopt(curl_, CURLOPT_FRESH_CONNECT, 0L);
      api_->easy_setopt(curl_, CURLOPT_SSL_SESSIONID_CACHE, 1L);
    }
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
    url_ = receiver_.url;
    const TlsSettings& tls = receiver_.tls;
    if (!tls.server_name.empty()) {
      // libcurl takes the name it sends as SNI and checks the certificate against from the URL's host,
      // and has no option for another name. So the URL names server_name, CONNECT_TO sends the connection
      // to the configured host (resolved as usual, which CURLOPT_RESOLVE, IP addresses only, would not
      // do), and the Host header keeps the configured host, as Prometheus's Go client does.
      const UrlAuthority at = split_url_authority(receiver_.url);
      url_ = at.prefix + tls.server_name + ":" + at.port + at.rest;
      connect_to_ = api_->slist_append(
          connect_to_, fmt::format("{}:{}:{}:{}", tls.server_name, at.port, at.host, at.port).c_str());
      api_->easy_setopt(curl_, CURLOPT_CONNECT_TO, connect_to_);
      headers_ = api_->slist_append(headers_, fmt::format("Host: {}:{}", at.host, at.port).c_str());
    }
    if (!tls.ca_file.empty()) {
      api_->easy_setopt(curl_, CURLOPT_CAINFO, tls.ca_file.c_str());
      // libcurl >= 7.87 caches a CA file's store for 24 h; 0 reads it at each new connection (a rotated
      // CA). An older libcurl does not know the option and reads it each time anyway.
      api_->easy_setopt(curl_, CURLOPT_CA_CACHE_TIMEOUT, 0L);
    }
    if (!tls.cert_file.empty()) {
      api_->easy_setopt(curl_, CURLOPT_SSLCERT, tls.cert_file.c_str());
      api_->easy_setopt(curl_, CURLOPT_SSLKEY, tls.key_file.c_str());
    }
    if (tls.insecure_skip_verify) {
      api_->easy_setopt(curl_, CURLOPT_SSL_VERIFYPEER, 0L);
      api_->easy_setopt(curl_, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (tls.min_version != 0) {
      const long version = tls.min_version == 10   ? CURL_SSLVERSION_TLSv1_0
                           : tls.min_version == 11 ? CURL_SSLVERSION_TLSv1_1
                           : tls.min_version == 12 ? CURL_SSLVERSION_TLSv1_2
                                                   : CURL_SSLVERSION_TLSv1_3;
      api_->easy_setopt(curl_, CURLOPT_SSLVERSION, version);
    }
    tls_stamp_ = tls_stamp();
    // Prometheus uses no proxy unless configured, whatever http_proxy/https_proxy/no_proxy say; libcurl
    // would read them: "" turns that off, and an empty NOPROXY sends every host through proxy_url.
    if (!receiver_.proxy_url.empty()) {
      api_->easy_setopt(curl_, CURLOPT_PROXY, receiver_.proxy_url.c_str());
      api_->easy_setopt(curl_, CURLOPT_NOPROXY, receiver_.no_proxy.c_str());
    } else if (!receiver_.proxy_from_environment) {
      api_->easy_setopt(curl_, CURLOPT_PROXY, "");
    }
    api_->easy_setopt(curl_, CURLOPT_URL, url_.c_str());
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

  std::string tls_stamp() const {
    const TlsSettings& t = receiver_.tls;
    if (t.ca_file.empty() && t.cert_file.empty()) return "";
    return rw_tls_file_stamp(t.ca_file) + "|" + rw_tls_file_stamp(t.cert_file) + "|" + rw_tls_file_stamp(t.key_file);
  }
  bool tls_files_changed() {
    std::string now = tls_stamp();
    if (now == tls_stamp_) return false;
    tls_stamp_ = std::move(now);
    return true;
  }

  const ReceiverConfig receiver_;
  std::string url_;        // the URL libcurl is given: the configured one, or with server_name as its host
  std::string tls_stamp_;  // the TLS files' stamps when the last connection may have read them
  curl_slist* connect_to_ = nullptr;
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
