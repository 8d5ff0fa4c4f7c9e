#include "agent/metadata_request.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "notify/curl_library.h"

namespace gpuscope::agent {
namespace {

std::size_t metadata_collect(char* data, std::size_t size, std::size_t n, void* out) {
  auto* body = static_cast<std::string*>(out);
  const std::size_t len = size * n;
  if (body->size() < kMaxMetadataBodyBytes) body->append(data, std::min(len, kMaxMetadataBodyBytes - body->size()));
  return len;
}

int metadata_progress(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const RequestCancel*>(cancel)->cancelled() ? 1 : 0;
}

curl_socket_t metadata_open_socket(void* cancel, curlsocktype, curl_sockaddr* address) {
  const int fd = ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  if (fd < 0) return CURL_SOCKET_BAD;
  if (!static_cast<RequestCancel*>(cancel)->opened(fd)) {
    ::close(fd);
    return CURL_SOCKET_BAD;
  }
  return fd;
}

int metadata_close_socket(void* cancel, curl_socket_t fd) {
  static_cast<RequestCancel*>(cancel)->closing(fd);
  return ::close(fd);
}

// libcurl's message as one printable line: it goes into log lines.
std::string metadata_error_line(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 200)) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

class MetadataCurlHandle {
 public:
  explicit MetadataCurlHandle(const notify::CurlApi& api) : api_(api), curl_(api.easy_init()) {}
  ~MetadataCurlHandle() {
    if (headers_ != nullptr) api_.slist_free_all(headers_);
    if (curl_ != nullptr) api_.easy_cleanup(curl_);
  }
  MetadataCurlHandle(const MetadataCurlHandle&) = delete;
  MetadataCurlHandle& operator=(const MetadataCurlHandle&) = delete;

  CURL* get() const { return curl_; }
  curl_slist*& headers() { return headers_; }
  char* error() { return error_; }

 private:
  const notify::CurlApi& api_;
  CURL* curl_;
  curl_slist* headers_ = nullptr;
  char error_[CURL_ERROR_SIZE] = {};
};

}  // namespace

void RequestCancel::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  // Wakes a request waiting on the socket now; libcurl still closes it (through closing()).
  for (int fd : sockets_) ::shutdown(fd, SHUT_RDWR);
}

bool RequestCancel::opened(int fd) {
  std::lock_guard lock(mu_);
  if (cancelled_) return false;
  sockets_.push_back(fd);
  return true;
}

void RequestCancel::closing(int fd) {
  // Forgotten before it is closed: a cancel never shuts down a descriptor number reused by someone else.
  std::lock_guard lock(mu_);
  std::erase(sockets_, fd);
}

std::expected<MetadataResponse, std::string> perform_metadata_request(const MetadataRequest& request,
                                                                      RequestCancel* cancel) {
  if (cancel != nullptr && cancel->cancelled()) return std::unexpected("cancelled");
  auto loaded = notify::curl_api();
  if (!loaded) return std::unexpected(loaded.error());
  const notify::CurlApi& api = **loaded;
  MetadataCurlHandle h(api);
  if (h.get() == nullptr) return std::unexpected("curl_easy_init failed");
  CURL* curl = h.get();
  const long timeout_ms = static_cast<long>(std::max<std::int64_t>(request.timeout.count(), 1));
  api.easy_setopt(curl, CURLOPT_ERRORBUFFER, h.error());
  api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  api.easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  api.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  api.easy_setopt(curl, CURLOPT_NOPROXY, "*");
  api.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  api.easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
  api.easy_setopt(curl, CURLOPT_USERAGENT, "gpuscope");
  if (request.method == "PUT") {
    api.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
  } else {
    api.easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  for (const std::string& header : request.headers) h.headers() = api.slist_append(h.headers(), header.c_str());
  if (h.headers() != nullptr) api.easy_setopt(curl, CURLOPT_HTTPHEADER, h.headers());
  MetadataResponse response;
  api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, metadata_collect);
  api.easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  if (cancel != nullptr) {
    api.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    api.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, metadata_progress);
    api.easy_setopt(curl, CURLOPT_XFERINFODATA, static_cast<void*>(cancel));
    api.easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, metadata_open_socket);
    api.easy_setopt(curl, CURLOPT_OPENSOCKETDATA, static_cast<void*>(cancel));
    api.easy_setopt(curl, CURLOPT_CLOSESOCKETFUNCTION, metadata_close_socket);
    api.easy_setopt(curl, CURLOPT_CLOSESOCKETDATA, static_cast<void*>(cancel));
  }
  const CURLcode rc = api.easy_perform(curl);
  if (cancel != nullptr && cancel->cancelled()) return std::unexpected("cancelled");
  if (rc != CURLE_OK) return std::unexpected(metadata_error_line(h.error()[0] != '\0' ? h.error() : api.easy_strerror(rc)));
  api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace gpuscope::agent
