#include "notify/curl_sender.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "notify/curl_library.h"

namespace gpuscope::notify {
namespace {

constexpr std::size_t kMaxResponseBytes = 4096;  // enough for an error text; the rest is discarded

std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
  auto* body = static_cast<std::string*>(out);
  const std::size_t len = size * n;
  if (body->size() < kMaxResponseBytes) body->append(data, std::min(len, kMaxResponseBytes - body->size()));
  return len;
}

int progress(void* abort, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* flag = static_cast<const std::atomic<bool>*>(abort);
  return flag != nullptr && flag->load() ? 1 : 0;
}

struct UploadSource {
  const std::string* data;
  std::size_t offset = 0;
};

std::size_t upload(char* buffer, std::size_t size, std::size_t n, void* source) {
  auto* src = static_cast<UploadSource*>(source);
  const std::size_t len = std::min(size * n, src->data->size() - src->offset);
  std::memcpy(buffer, src->data->data() + src->offset, len);
  src->offset += len;
  return len;
}

// One line of printable text: response bodies go into log lines.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 200)) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

class CurlHandle {
 public:
  explicit CurlHandle(const CurlApi& api) : api_(api), curl_(api.easy_init()) {}
  ~CurlHandle() {
    if (headers_ != nullptr) api_.slist_free_all(headers_);
    if (recipients_ != nullptr) api_.slist_free_all(recipients_);
    if (curl_ != nullptr) api_.easy_cleanup(curl_);
  }
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;

  CURL* get() const { return curl_; }
  curl_slist*& headers() { return headers_; }
  curl_slist*& recipients() { return recipients_; }
  char* error() { return error_; }

  void common(std::int64_t timeout_ms, const std::atomic<bool>* abort) {
    api_.easy_setopt(curl_, CURLOPT_ERRORBUFFER, error_);
    api_.easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    api_.easy_setopt(curl_, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
    api_.easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_ms));
    api_.easy_setopt(curl_, CURLOPT_NOPROGRESS, 0L);
    api_.easy_setopt(curl_, CURLOPT_XFERINFOFUNCTION, progress);
    api_.easy_setopt(curl_, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(abort));
  }

  // libcurl's own message, without anything the URL could have put into it beyond the host.
  SendError failure(CURLcode rc) const {
    const bool retryable = rc != CURLE_UNSUPPORTED_PROTOCOL && rc != CURLE_URL_MALFORMAT &&
                           rc != CURLE_LOGIN_DENIED && rc != CURLE_ABORTED_BY_CALLBACK;
    std::string what = error_[0] != '\0' ? error_ : api_.easy_strerror(rc);
    return SendError{one_line(what), retryable};
  }

 private:
  const CurlApi& api_;
  CURL* curl_;
  curl_slist* headers_ = nullptr;
  curl_slist* recipients_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
};

std::expected<void, SendError> send_post(const CurlApi& api, const HttpPost& post, const std::atomic<bool>* abort) {
  CurlHandle h(api);
  if (h.get() == nullptr) return std::unexpected(SendError{"curl_easy_init failed", true});
  CURL* curl = h.get();
  h.common(post.timeout_ms, abort);
  std::string response;
  const std::string content_type = "Content-Type: " + post.content_type;
  h.headers() = api.slist_append(h.headers(), content_type.c_str());
  h.headers() = api.slist_append(h.headers(), "Expect:");  // no 100-continue round trip
  api.easy_setopt(curl, CURLOPT_URL, post.url.reveal().c_str());
  api.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  api.easy_setopt(curl, CURLOPT_HTTPHEADER, h.headers());
  api.easy_setopt(curl, CURLOPT_USERAGENT, "gpuscope");
  api.easy_setopt(curl, CURLOPT_POST, 1L);
  api.easy_setopt(curl, CURLOPT_POSTFIELDS, post.body.data());
  api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post.body.size()));
  api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
  api.easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  const CURLcode rc = api.easy_perform(curl);
  if (rc != CURLE_OK) return std::unexpected(h.failure(rc));
  long status = 0;
  api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) return {};
  const bool retryable = status >= 500 || status == 408 || status == 429 || status < 200;
  std::string message = fmt::format("HTTP {}", status);
  if (const std::string text = one_line(response); !text.empty()) message += ": " + text;
  return std::unexpected(SendError{message, retryable});
}

std::expected<void, SendError> send_mail(const CurlApi& api, const SmtpMail& mail, const std::atomic<bool>* abort) {
  CurlHandle h(api);
  if (h.get() == nullptr) return std::unexpected(SendError{"curl_easy_init failed", true});
  CURL* curl = h.get();
  h.common(mail.timeout_ms, abort);
  api.easy_setopt(curl, CURLOPT_URL, mail.url.c_str());
  api.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
  const bool implicit_tls = mail.url.starts_with("smtps://");
  api.easy_setopt(curl, CURLOPT_USE_SSL, static_cast<long>(implicit_tls || mail.require_tls ? CURLUSESSL_ALL : CURLUSESSL_NONE));
  if (!mail.username.empty()) {
    api.easy_setopt(curl, CURLOPT_USERNAME, mail.username.c_str());
    api.easy_setopt(curl, CURLOPT_PASSWORD, mail.password.reveal().c_str());
  }
  const std::string from = fmt::format("<{}>", mail.from);
  api.easy_setopt(curl, CURLOPT_MAIL_FROM, from.c_str());
  for (const std::string& to : mail.to) {
    const std::string rcpt = fmt::format("<{}>", to);
    h.recipients() = api.slist_append(h.recipients(), rcpt.c_str());
  }
  api.easy_setopt(curl, CURLOPT_MAIL_RCPT, h.recipients());
  UploadSource source{&mail.message};
  api.easy_setopt(curl, CURLOPT_READFUNCTION, upload);
  api.easy_setopt(curl, CURLOPT_READDATA, &source);
  api.easy_setopt(curl, CURLOPT_UPLOAD, 1L);
  api.easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(mail.message.size()));
  const CURLcode rc = api.easy_perform(curl);
  if (rc == CURLE_OK) return {};
  SendError error = h.failure(rc);
  long code = 0;
  api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  if (code >= 500 && code < 600) error.retryable = false;  // SMTP 5xx is a permanent refusal
  return std::unexpected(std::move(error));
}

}  // namespace

std::expected<void, SendError> send_request(const OutgoingRequest& request, const std::atomic<bool>* abort) {
  auto api = curl_api();
  if (!api) return std::unexpected(SendError{api.error(), false});
  if (const auto* post = std::get_if<HttpPost>(&request)) return send_post(**api, *post, abort);
  return send_mail(**api, std::get<SmtpMail>(request), abort);
}

}  // namespace gpuscope::notify
