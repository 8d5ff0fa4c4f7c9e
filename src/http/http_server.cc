#include "http/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <strings.h>
#include <mutex>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "http/client_sans.h"
#include "http/gnutls_library.h"
#include "http/microhttpd_library.h"

namespace gpuscope::http {

// Per connection: when it started waiting for a request's headers, and whether a request is being
// handled, so the watchdog can cut connections whose headers do not arrive in time.
struct ConnectionState {
  int fd = -1;
  std::chrono::steady_clock::time_point waiting_since;
  bool in_request = false;
  bool had_request = false;
  bool handshake_done = false;  // TLS: the client's Finished was read
  // TLS: the session, the client-certificate policy of the daemon that accepted it, and why the
  // certificate check refused it (empty: it did not).
  void* tls_session = nullptr;
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  // The accepting daemon's settings (client_allowed_sans), kept alive with the connection.
  std::shared_ptr<const TlsMaterial> tls;
  std::string refused_because;
};

// A daemon serving (or, retired, finishing) on the listening socket, and the TLS settings it started with.
struct DaemonRecord {
  MHD_Daemon* daemon = nullptr;
  std::shared_ptr<const TlsMaterial> tls;
  std::chrono::steady_clock::time_point retired_at;
};

// Per request: its request target's length (libmicrohttpd hands the handler the path alone), whether
// the handler has seen its headers yet, and the body read so far.
struct RequestState {
  std::size_t target_bytes = 0;
  bool headers_seen = false;
  std::string body;
  bool too_large = false;
};

// libmicrohttpd answers a request line or headers that do not fit its per-connection memory with its
// own HTML page ("Request too big"), which no option replaces. Its memory is this many times the
// agent's header limit, so a request over the limit by up to that much still fits, reaches
// on_request and gets the agent's own one-line answer; only one larger than that gets libmicrohttpd's.
// The memory is reserved per connection but only touched as a client fills it.
constexpr std::size_t kMhdMemoryPerHeaderLimit = 4;

struct HttpServer::Impl {
  HttpServerOptions options;
  HttpHandler handler;
  log::Logger* log = nullptr;
  MHD_Daemon* daemon = nullptr;            // the one accepting
  std::shared_ptr<const TlsMaterial> tls;  // its TLS settings
  int listen_fd = -1;                      // once a daemon has been replaced: the socket they share
  std::mutex replace_mu;                   // one replace_tls() at a time
  sockaddr_storage addr{};
  unsigned flags = 0;

  std::mutex mu;
  std::vector<DaemonRecord> retired;  // replaced daemons, stopped once idle or after kRetiredDaemonGrace
  std::set<ConnectionState*> connections;
  std::condition_variable cv;
  bool stopping = false;
  std::thread watchdog;
  std::atomic<std::uint64_t> header_timeouts{0};

  // Retired daemons with no connection left, or past their grace; taken out of `retired`. Under mu.
  std::vector<MHD_Daemon*> take_finished_retired();

  void watch() {
    std::unique_lock lock(mu);
    while (!stopping) {
      if (!retired.empty()) {
        auto finished = take_finished_retired();
        if (!finished.empty()) {
          // Stopping a daemon calls on_connection, which takes mu.
          lock.unlock();
          for (auto* d : finished) stop_daemon_now(d);
          lock.lock();
          continue;
        }
      }
      // Asleep while no connection is open and no daemon is retiring (an idle agent wakes for nothing).
      if (connections.empty() && retired.empty()) {
        cv.wait(lock, [this] { return stopping || !connections.empty() || !retired.empty(); });
        continue;
      }
      cv.wait_for(lock, std::chrono::milliseconds(250));
      const auto now = std::chrono::steady_clock::now();
      for (auto* c : connections) {
        if (!c->in_request && c->fd >= 0 && now - c->waiting_since > options.header_timeout) {
          // Not close(): the fd stays MHD's; shutdown makes its next read fail, and MHD closes it.
          ::shutdown(c->fd, SHUT_RDWR);
          c->fd = -1;
          header_timeouts.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
  }

  static void stop_daemon_now(MHD_Daemon* d);
};

namespace {

// libmicrohttpd's functions. Only valid once HttpServer::start has loaded it, which is before any
// daemon exists to call back into this file.
const MicrohttpdApi& mhd() { return **microhttpd_api(); }

const GnutlsApi& gnutls() { return **gnutls_api(); }

// GnuTLS calls the certificate check with the session alone: the sessions this process's servers
// configured, and their connections' state.
std::mutex g_tls_sessions_mu;
std::map<void*, ConnectionState*>& tls_sessions() {
  static std::map<void*, ConnectionState*> sessions;
  return sessions;
}

std::string certificate_status_text(unsigned status) {
  std::string out;
  auto add = [&](unsigned flag, std::string_view text) {
    if ((status & flag) != 0) out += fmt::format("{}{}", out.empty() ? "" : ", ", text);
  };
  add(GNUTLS_CERT_EXPIRED, "expired");
  add(GNUTLS_CERT_NOT_ACTIVATED, "not yet valid");
  add(GNUTLS_CERT_SIGNER_NOT_FOUND, "not signed by the client CA");
  add(GNUTLS_CERT_SIGNER_NOT_CA, "its signer is not a CA");
  add(GNUTLS_CERT_REVOKED, "revoked");
  add(GNUTLS_CERT_INSECURE_ALGORITHM, "insecure algorithm");
  add(GNUTLS_CERT_SIGNATURE_FAILURE, "bad signature");
  if (out.empty()) out = fmt::format("verification status {:#x}", status);
  return out;
}

// The client-certificate check of client_auth_type, during the handshake: non-zero ends it.
int verify_client_certificate(gnutls_session_t session) {
  std::lock_guard lock(g_tls_sessions_mu);
  auto it = tls_sessions().find(session);
  // Every session this file configures is registered first: an unknown one is refused, never waved through.
  if (it == tls_sessions().end()) return GNUTLS_E_CERTIFICATE_ERROR;
  ConnectionState& c = *it->second;
  const bool required = c.client_auth == ClientAuth::kRequireAnyClientCert ||
                        c.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  const bool verified = c.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                        c.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  unsigned count = 0;
  const gnutls_datum_t* certs = gnutls().certificate_get_peers(session, &count);
  if (certs == nullptr || count == 0) {
    if (!required) return 0;
    c.refused_because = "no client certificate";
    return GNUTLS_E_CERTIFICATE_REQUIRED;
  }
  if (verified) {
    unsigned status = 0;
    if (const int rc = gnutls().certificate_verify_peers2(session, &status); rc < 0) {
      c.refused_because = fmt::format("client certificate not verified: {}", gnutls().strerror(rc));
      return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
    }
    if (status != 0) {
      c.refused_because = fmt::format("client certificate refused: {}", certificate_status_text(status));
      return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
    }
  }
  // client_allowed_sans: checked here, once per connection in its handshake (as exporter-toolkit's
  // VerifyPeerCertificate), on the client's own certificate, the first it sent.
  if (c.tls && !c.tls->client_allowed_sans.empty()) {
    auto sans = certificate_sans({certs[0].data, certs[0].size});
    if (!sans) {
      c.refused_because = fmt::format("client certificate refused: {}", sans.error());
      return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
    }
    if (first_allowed_san(*sans, c.tls->client_allowed_sans) == nullptr) {
      c.refused_because = describe_refused_sans(*sans);
      return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
    }
  }
  return 0;
}

// The client's Finished, read and checked: the handshake is done. (libmicrohttpd frees the session
// before it reports the connection closed, so this is noted while the session lives.)
int note_handshake_finished(gnutls_session_t session, unsigned /*htype*/, unsigned /*when*/, unsigned incoming,
                            const gnutls_datum_t* /*msg*/) {
  if (incoming == 0) return 0;
  std::lock_guard lock(g_tls_sessions_mu);
  if (auto it = tls_sessions().find(session); it != tls_sessions().end()) it->second->handshake_done = true;
  return 0;
}

std::string client_address(MHD_Connection* connection) {
  const auto* info = mhd().get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return {};
  char text[INET6_ADDRSTRLEN] = {};
  const sockaddr* a = info->client_addr;
  if (a->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, text, sizeof text);
  } else if (a->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, text, sizeof text);
  }
  return text;
}

// Keeps a shared body alive until libmicrohttpd has sent it.
void release_shared_body(void* holder) { delete static_cast<std::shared_ptr<const std::string>*>(holder); }

// A HEAD request gets the GET response whole: libmicrohttpd sends its headers, Content-Length
// included, and leaves the body out.
MHD_Response* make_response(const HttpResponse& r) {
  if (r.shared_body) {
    auto* holder = new std::shared_ptr<const std::string>(r.shared_body);
    MHD_Response* response = mhd().create_response_from_buffer_with_free_callback_cls(
        r.shared_body->size(), const_cast<char*>(r.shared_body->data()), &release_shared_body, holder);
    if (response == nullptr) delete holder;
    return response;
  }
  return mhd().create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
}

MHD_Result queue(MHD_Connection* connection, const HttpResponse& r) {
  MHD_Response* response = make_response(r);
  if (response == nullptr) return MHD_NO;
  if (!r.content_type.empty()) mhd().add_response_header(response, "Content-Type", r.content_type.c_str());
  for (const auto& [k, v] : r.headers) mhd().add_response_header(response, k.c_str(), v.c_str());
  const MHD_Result rc = mhd().queue_response(connection, static_cast<unsigned>(r.status), response);
  mhd().destroy_response(response);
  return rc;
}

HttpResponse plain(int status, std::string text) { return {status, "text/plain; charset=utf-8", std::move(text), {}, nullptr}; }

// The request target as the client sent it (path and query, undecoded); its return value is the
// request's first *req_cls.
void* on_uri(void* /*cls*/, const char* uri, MHD_Connection* /*connection*/) {
  auto* state = new RequestState();
  state->target_bytes = uri != nullptr ? std::strlen(uri) : 0;
  return state;
}

// The request line and headers as sent (each header "Name: value\r\n"), near enough for a limit.
std::size_t head_bytes(MHD_Connection* connection, std::string_view method, std::size_t target_bytes) {
  std::size_t total = method.size() + 1 + target_bytes + std::string_view(" HTTP/1.1\r\n").size();
  mhd().get_connection_values(
      connection, MHD_HEADER_KIND,
      [](void* cls, MHD_ValueKind, const char* key, const char* value) -> MHD_Result {
        *static_cast<std::size_t*>(cls) += std::strlen(key != nullptr ? key : "") + 2 +
                                           std::strlen(value != nullptr ? value : "") + 2;
        return MHD_YES;
      },
      &total);
  return total;
}

MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url, const char* method,
                      const char* /*version*/, const char* upload_data, size_t* upload_data_size, void** req_cls) {
  auto& impl = *static_cast<HttpServer::Impl*>(cls);
  if (*req_cls == nullptr) *req_cls = new RequestState();  // on_uri was not called (it always is, but be safe)
  auto& state = *static_cast<RequestState*>(*req_cls);
  const std::string_view m = method;
  if (!state.headers_seen) {
    state.headers_seen = true;
    if (const auto* info = mhd().get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        info != nullptr && info->socket_context != nullptr) {
      std::lock_guard lock(impl.mu);
      auto* c = static_cast<ConnectionState*>(info->socket_context);
      c->in_request = true;
      c->had_request = true;
    }
    // The agent's limit, in its own words (libmicrohttpd's memory is larger; see kMhdMemoryPerHeaderLimit).
    const std::size_t limit = impl.options.max_header_bytes;
    if (state.target_bytes > limit) {
      return queue(connection, plain(414, fmt::format("414 URI too long: the URL is {} bytes, over the limit of {}\n",
                                                      state.target_bytes, limit)));
    }
    if (const std::size_t bytes = head_bytes(connection, m, state.target_bytes); bytes > limit) {
      return queue(connection, plain(431, fmt::format("431 request headers too large: {} bytes, over the limit of {}\n",
                                                      bytes, limit)));
    }
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    if (state.body.size() + *upload_data_size > impl.options.max_body_bytes) {
      state.too_large = true;
    } else {
      state.body.append(upload_data, *upload_data_size);
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (state.too_large) {
    return queue(connection, plain(413, fmt::format("request body over {} bytes\n", impl.options.max_body_bytes)));
  }
  const HttpRequest request(connection, m, url, state.body);
  HttpResponse response;
  try {
    response = impl.handler(request);
  } catch (const std::exception& e) {
    impl.log->error("request handler failed", {{"path", std::string(url)}, {"err", e.what()}});
    response = plain(500, "internal error\n");
  }
  return queue(connection, response);
}

void on_completed(void* cls, MHD_Connection* connection, void** req_cls, MHD_RequestTerminationCode) {
  delete static_cast<RequestState*>(*req_cls);
  *req_cls = nullptr;
  auto& impl = *static_cast<HttpServer::Impl*>(cls);
  if (const auto* info = mhd().get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
      info != nullptr && info->socket_context != nullptr) {
    std::lock_guard lock(impl.mu);
    auto* c = static_cast<ConnectionState*>(info->socket_context);
    c->in_request = false;
    c->waiting_since = std::chrono::steady_clock::now();
  }
}

void on_connection(void* cls, MHD_Connection* connection, void** socket_context, MHD_ConnectionNotificationCode toe) {
  auto& impl = *static_cast<HttpServer::Impl*>(cls);
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    auto* c = new ConnectionState();
    if (const auto* info = mhd().get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD); info != nullptr) {
      c->fd = info->connect_fd;
    }
    c->waiting_since = std::chrono::steady_clock::now();
    if (impl.options.tls) {
      // The session exists and its handshake has not begun: the client-certificate policy of the daemon
      // that accepted the connection goes on it now.
      const auto* daemon_info = mhd().get_connection_info(connection, MHD_CONNECTION_INFO_DAEMON);
      const auto* session_info = mhd().get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
      std::shared_ptr<const TlsMaterial> tls;
      {
        std::lock_guard lock(impl.mu);
        tls = impl.tls;
        for (const auto& r : impl.retired) {
          if (daemon_info != nullptr && r.daemon == daemon_info->daemon) tls = r.tls;
        }
      }
      if (session_info != nullptr && session_info->tls_session != nullptr && tls) {
        auto session = static_cast<gnutls_session_t>(session_info->tls_session);
        c->tls_session = session;
        c->client_auth = tls->client_auth;
        c->tls = tls;
        switch (tls->client_auth) {
          case ClientAuth::kNoClientCert:
            gnutls().certificate_server_set_request(session, GNUTLS_CERT_IGNORE);
            break;
          case ClientAuth::kRequestClientCert:
          case ClientAuth::kVerifyClientCertIfGiven:
            gnutls().certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
            break;
          case ClientAuth::kRequireAnyClientCert:
          case ClientAuth::kRequireAndVerifyClientCert:
            gnutls().certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
            break;
        }
        {
          std::lock_guard lock(g_tls_sessions_mu);
          tls_sessions()[session] = c;
        }
        gnutls().session_set_verify_function(session, &verify_client_certificate);
        gnutls().handshake_set_hook_function(session, GNUTLS_HANDSHAKE_FINISHED, GNUTLS_HOOK_POST, &note_handshake_finished);
      }
    }
    std::lock_guard lock(impl.mu);
    if (impl.connections.empty()) impl.cv.notify_one();  // the watchdog sleeps while there are none
    impl.connections.insert(c);
    *socket_context = c;
    return;
  }
  auto* c = static_cast<ConnectionState*>(*socket_context);
  if (c == nullptr) return;
  if (c->tls_session != nullptr) {
    bool handshake_done = false;
    {
      // The session is already freed here; only the registry entry (if still this connection's) goes.
      std::lock_guard lock(g_tls_sessions_mu);
      auto it = tls_sessions().find(c->tls_session);
      if (it != tls_sessions().end() && it->second == c) tls_sessions().erase(it);
      handshake_done = c->handshake_done;
    }
    if ((!handshake_done && !c->had_request) || !c->refused_because.empty()) {
      // GnuTLS ends a handshake that lacks a required certificate before the check above runs, and tells
      // it apart from plain HTTP no better than this.
      const std::string detail = !c->refused_because.empty()
                                     ? c->refused_because
                                     : "TLS handshake not completed (plain HTTP to the TLS port, no client certificate "
                                       "where one is required, no common version or cipher, or a client that left)";
      if (impl.options.on_tls_refused) impl.options.on_tls_refused(client_address(connection), detail);
    }
  }
  std::lock_guard lock(impl.mu);
  impl.connections.erase(c);
  delete c;
  *socket_context = nullptr;
}

void on_mhd_log(void* cls, const char* fm, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fm, ap);
  std::string text(buf);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  static_cast<HttpServer::Impl*>(cls)->log->debug("http", {{"detail", text}});
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(const char* name) const {
  if (connection_ == nullptr) {
    for (const auto& [k, v] : headers_) {
      if (strcasecmp(k.c_str(), name) == 0) return std::string_view(v);
    }
    return std::nullopt;
  }
  const char* v = mhd().lookup_connection_value(static_cast<MHD_Connection*>(connection_), MHD_HEADER_KIND, name);
  if (v == nullptr) return std::nullopt;
  return std::string_view(v);
}

std::optional<std::string_view> HttpRequest::query(const char* name) const {
  if (connection_ == nullptr) {
    for (const auto& [k, v] : query_) {
      if (k == name) return std::string_view(v);
    }
    return std::nullopt;
  }
  const char* v = mhd().lookup_connection_value(static_cast<MHD_Connection*>(connection_), MHD_GET_ARGUMENT_KIND, name);
  if (v == nullptr) return std::nullopt;
  return std::string_view(v);
}

std::vector<std::pair<std::string, std::string>> HttpRequest::query_arguments() const {
  if (connection_ == nullptr) return query_;
  std::vector<std::pair<std::string, std::string>> out;
  mhd().get_connection_values(
      static_cast<MHD_Connection*>(connection_), MHD_GET_ARGUMENT_KIND,
      [](void* cls, MHD_ValueKind, const char* key, const char* value) -> MHD_Result {
        static_cast<std::vector<std::pair<std::string, std::string>>*>(cls)->emplace_back(key != nullptr ? key : "",
                                                                                           value != nullptr ? value : "");
        return MHD_YES;
      },
      &out);
  return out;
}

std::string HttpRequest::remote_address() const {
  if (connection_ == nullptr) return {};
  return client_address(static_cast<MHD_Connection*>(connection_));
}

std::expected<std::pair<std::string, std::uint16_t>, std::string> parse_listen_address(std::string_view text) {
  std::string host;
  std::string_view port_text;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return std::unexpected(fmt::format("invalid listen address '{}' (expected [IPv6]:PORT)", text));
    }
    host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return std::unexpected(fmt::format("invalid listen address '{}' (expected HOST:PORT or :PORT)", text));
    }
    host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return std::unexpected(fmt::format("invalid port in listen address '{}' (0 to 65535)", text));
  }
  return std::pair{host, static_cast<std::uint16_t>(port)};
}

namespace {

// A daemon on the options' address (listen_fd < 0) or on a socket another daemon had, speaking TLS with
// `tls` when given. Null when libmicrohttpd refuses (it logs why through on_mhd_log).
MHD_Daemon* start_mhd_daemon(HttpServer::Impl& impl, const TlsMaterial* tls, int listen_fd) {
  const HttpServerOptions& options = impl.options;
  std::vector<MHD_OptionItem> items;
  if (listen_fd >= 0) {
    items.push_back({MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr});
  } else {
    items.push_back({MHD_OPTION_SOCK_ADDR, 0, reinterpret_cast<sockaddr*>(&impl.addr)});
  }
  unsigned flags = impl.flags;
  if (tls != nullptr) {
    flags |= MHD_USE_TLS;
    // libmicrohttpd reads these while it starts (it keeps no copy needed later).
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(tls->key_pem.c_str())});
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(tls->cert_pem.c_str())});
    items.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(tls->priorities.c_str())});
    if (!tls->client_ca_pem.empty()) {
      items.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(tls->client_ca_pem.c_str())});
    }
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
  return mhd().start_daemon(
      flags, options.port, nullptr, nullptr, &on_request, &impl,
      // First, so that what the other options report is logged through it too.
      MHD_OPTION_EXTERNAL_LOGGER, &on_mhd_log, &impl,
      MHD_OPTION_ARRAY, items.data(),
      MHD_OPTION_THREAD_POOL_SIZE, static_cast<unsigned>(std::max(1u, options.threads)),
      MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned>(options.max_connections),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(options.max_header_bytes * kMhdMemoryPerHeaderLimit),
      MHD_OPTION_URI_LOG_CALLBACK, &on_uri, &impl,
      MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(options.header_timeout.count() * 3),
      MHD_OPTION_NOTIFY_COMPLETED, &on_completed, &impl,
      MHD_OPTION_NOTIFY_CONNECTION, &on_connection, &impl,
      MHD_OPTION_END);
}

}  // namespace

void HttpServer::Impl::stop_daemon_now(MHD_Daemon* d) { mhd().stop_daemon(d); }

std::vector<MHD_Daemon*> HttpServer::Impl::take_finished_retired() {
  std::vector<MHD_Daemon*> out;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = retired.begin(); it != retired.end();) {
    const auto* info = mhd().get_daemon_info(it->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    const bool idle = info != nullptr && info->num_connections == 0;
    if (idle || stopping || now - it->retired_at > kRetiredDaemonGrace) {
      out.push_back(it->daemon);
      it = retired.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::expected<std::unique_ptr<HttpServer>, std::string> HttpServer::start(const HttpServerOptions& options,
                                                                          HttpHandler handler, log::Logger& log) {
  if (auto loaded = microhttpd_api(); !loaded) return std::unexpected(loaded.error());
  if (options.tls) {
    if (auto loaded = gnutls_api(); !loaded) return std::unexpected(loaded.error());
  }
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->impl_ = std::make_unique<Impl>();
  auto& impl = *server->impl_;
  impl.options = options;
  impl.handler = std::move(handler);
  impl.log = &log;
  if (options.tls) impl.tls = std::make_shared<const TlsMaterial>(*options.tls);

  sockaddr_storage& addr = impl.addr;
  // ITC: a daemon can hand its listening socket to its successor (replace_tls).
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_USE_ITC;
  if (options.host.empty()) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_addr = in6addr_any;
    a6->sin6_port = htons(options.port);
    flags |= MHD_USE_DUAL_STACK;
  } else {
    addrinfo hints{};
    hints.ai_flags = AI_NUMERICSERV;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(options.port);
    if (int rc = getaddrinfo(options.host.c_str(), port.c_str(), &hints, &found); rc != 0 || found == nullptr) {
      return std::unexpected(fmt::format("cannot resolve listen host '{}': {}", options.host, gai_strerror(rc)));
    }
    std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
    if (found->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    freeaddrinfo(found);
  }
  impl.flags = flags;

  impl.daemon = start_mhd_daemon(impl, impl.tls.get(), -1);
  if (impl.daemon == nullptr) {
    return std::unexpected(fmt::format("cannot listen on {}:{} (in use, or not an address of this host{})",
                                       options.host.empty() ? "*" : options.host, options.port,
                                       options.tls ? ", or libmicrohttpd refused the TLS settings" : ""));
  }
  const MHD_DaemonInfo* info = mhd().get_daemon_info(impl.daemon, MHD_DAEMON_INFO_BIND_PORT);
  server->port_ = info != nullptr ? info->port : options.port;
  impl.watchdog = std::thread([&impl] { impl.watch(); });
  return server;
}

std::expected<void, std::string> HttpServer::replace_tls(const TlsMaterial& tls) {
  if (!impl_ || !impl_->options.tls) return std::unexpected("the server was started without TLS");
  auto& impl = *impl_;
  std::lock_guard replace_lock(impl.replace_mu);
  if (impl.daemon == nullptr) return std::unexpected("the server is stopped");
  if (impl.listen_fd < 0) {
    const MHD_DaemonInfo* info = mhd().get_daemon_info(impl.daemon, MHD_DAEMON_INFO_LISTEN_FD);
    if (info == nullptr) return std::unexpected("libmicrohttpd does not tell its listening socket");
    impl.listen_fd = info->listen_fd;
  }
  auto material = std::make_shared<const TlsMaterial>(tls);
  // The successor listens on the same socket before the predecessor stops accepting: no connection
  // finds the port closed in between.
  MHD_Daemon* next = start_mhd_daemon(impl, material.get(), impl.listen_fd);
  if (next == nullptr) return std::unexpected("libmicrohttpd refused the new TLS settings");
  MHD_Daemon* previous = impl.daemon;
  mhd().quiesce_daemon(previous);
  {
    std::lock_guard lock(impl.mu);
    impl.retired.push_back({previous, impl.tls, std::chrono::steady_clock::now()});
    impl.daemon = next;
    impl.tls = std::move(material);
  }
  impl.cv.notify_all();
  return {};
}

void HttpServer::stop() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->watchdog.joinable()) impl_->watchdog.join();
  std::lock_guard replace_lock(impl_->replace_mu);
  std::vector<MHD_Daemon*> retired;
  {
    std::lock_guard lock(impl_->mu);
    retired = impl_->take_finished_retired();
  }
  for (auto* d : retired) mhd().stop_daemon(d);
  if (impl_->daemon != nullptr) mhd().stop_daemon(impl_->daemon);
  impl_->daemon = nullptr;
}

HttpServer::~HttpServer() { stop(); }

}  // namespace gpuscope::http
