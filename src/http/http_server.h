// HttpServer: the agent's HTTP listener, on libmicrohttpd (epoll, a small thread pool), with the limits
// a node agent needs against slow or hostile clients: bounded connections, bounded request size, and a
// deadline for a request's headers (slowloris), besides an idle timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/tls_material.h"
#include "log/logger.h"

namespace gpuscope::http {

class HttpRequest {
 public:
  // A request read by the server from `connection` (libmicrohttpd's).
  HttpRequest(void* connection, std::string_view method, std::string_view path, std::string_view body)
      : connection_(connection), method_(method), path_(path), body_(body) {}
  // A request built by hand (tests, in-process callers), with its headers.
  HttpRequest(std::string_view method, std::string_view path,
              std::vector<std::pair<std::string, std::string>> headers = {},
              std::vector<std::pair<std::string, std::string>> query_arguments = {}, std::string_view body = {})
      : method_(method), path_(path), body_(body), headers_(std::move(headers)), query_(std::move(query_arguments)) {}

  std::string_view method() const { return method_; }
  std::string_view path() const { return path_; }
  std::string_view body() const { return body_; }
  // The same request (headers, query, body) at another path: a route prefix stripped. `path` must live
  // as long as the copy (a part of this request's path does).
  HttpRequest with_path(std::string_view path) const {
    HttpRequest r = *this;
    r.path_ = path;
    return r;
  }
  // A request header (case-insensitive name), or nullopt.
  std::optional<std::string_view> header(const char* name) const;
  // A URL query argument (decoded), or nullopt.
  std::optional<std::string_view> query(const char* name) const;
  // Every URL query argument (decoded) in order, repeated names included (match[]=a&match[]=b).
  std::vector<std::pair<std::string, std::string>> query_arguments() const;
  // The client's address ("127.0.0.1", "::1"), for logs; empty for a request built by hand.
  std::string remote_address() const;

 private:
  void* connection_ = nullptr;
  std::string_view method_, path_, body_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::vector<std::pair<std::string, std::string>> query_;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, sent instead of `body` without a copy: a cached body shared by many scrapes.
  std::shared_ptr<const std::string> shared_body;

  std::string_view content() const { return shared_body ? std::string_view(*shared_body) : std::string_view(body); }
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // empty: every interface, IPv4 and IPv6
  std::uint16_t port = 9400;       // 0: any free port (see HttpServer::port())
  unsigned threads = 2;
  unsigned max_connections = 256;               // more are refused at accept
  std::size_t max_header_bytes = 16 * 1024;     // request line + headers; over it: 431
  std::size_t max_body_bytes = 1024 * 1024;     // over it: 413
  std::chrono::seconds header_timeout{10};      // a request's headers must arrive within this (also the keep-alive idle limit)
  // TLS (libmicrohttpd over GnuTLS) with this certificate, key, client CA and policy; none: plain HTTP.
  std::optional<TlsMaterial> tls;
  // A TLS connection that closed before its handshake completed (plain HTTP to the port, a client
  // certificate missing or refused, no common version or cipher): the client's address and why.
  std::function<void(std::string_view remote, std::string_view detail)> on_tls_refused;
};

// "127.0.0.1:9400", ":9400" (all interfaces), "[::1]:9400", "localhost:9400" → host and port; a
// one-line error otherwise.
std::expected<std::pair<std::string, std::uint16_t>, std::string> parse_listen_address(std::string_view text);

class HttpServer {
 public:
  static std::expected<std::unique_ptr<HttpServer>, std::string> start(const HttpServerOptions& options,
                                                                       HttpHandler handler, log::Logger& log);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::uint16_t port() const { return port_; }
  // Stops accepting, closes connections and joins the threads.
  void stop();
  // New TLS connections use `tls` from now on (a rotated certificate, a new client CA): a new daemon takes
  // over the listening socket, and the previous one finishes its open connections (cut after
  // kRetiredDaemonGrace). An error (one line) leaves the current settings serving. Only for a server
  // started with TLS.
  std::expected<void, std::string> replace_tls(const TlsMaterial& tls);
  // How long a replaced daemon may keep serving the connections it had.
  static constexpr std::chrono::seconds kRetiredDaemonGrace{30};

  struct Impl;

 private:
  HttpServer() = default;
  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
};

}  // namespace gpuscope::http
