// ReceiverConfig: one remote-write receiver as `serve --remote-write URL` or a --remote-write.config file
// names it (Prometheus's remote_write block: url, basic_auth, authorization, headers, tls_config,
// proxy_url, write_relabel_configs, queue_config), with its credentials read at load.
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <string>
#include <utility>
#include <vector>

#include "remote_write/write_relabel.h"

namespace gpuscope::remote_write {

struct QueueSettings {
  // Prometheus's defaults: samples per request, and the retry backoff's first and largest waits.
  std::size_t max_samples_per_send = 2000;
  std::chrono::milliseconds min_backoff{30};
  std::chrono::milliseconds max_backoff{5000};
  // The most samples one read of the store brings into memory; the read window shrinks to fit.
  std::size_t max_samples_per_read = 100'000;
};

// Prometheus's tls_config for an https receiver. The files are checked (readable, PEM) at load; libcurl
// reads them again for every new connection, and the transport opens a new one when one of them changed.
struct TlsSettings {
  std::string ca_file;    // the CAs that may sign the receiver's certificate; empty: the system's store
  std::string cert_file;  // the client certificate (mTLS), with key_file
  std::string key_file;
  std::string server_name;  // the name sent as SNI and checked against the certificate; empty: the URL's host
  bool insecure_skip_verify = false;
  int min_version = 0;  // 10, 11, 12, 13 (TLS 1.x); 0: libcurl's default (TLS 1.2 on Debian 12)
};

struct ReceiverConfig {
  std::string url;          // as given, credentials included: only ever handed to libcurl
  std::string display_url;  // scheme://host[:port]/path: the `url` label and log lines
  std::string name;         // the config's `name` (empty: none)
  std::string basic_auth_username;
  std::string basic_auth_password;
  std::string bearer_token;  // authorization: {type: Bearer, credentials}, or bearer_token(_file)
  std::vector<std::pair<std::string, std::string>> headers;
  TlsSettings tls;
  // The proxy every request goes through (http://host:port); empty: none, whatever http(s)_proxy say,
  // as in Prometheus, unless proxy_from_environment.
  std::string proxy_url;
  std::string no_proxy;  // hosts that bypass proxy_url (libcurl's NOPROXY list)
  bool proxy_from_environment = false;
  std::vector<WriteRelabelRule> write_relabel;
  QueueSettings queue;
  std::chrono::milliseconds remote_timeout{30'000};
};

// A receiver from a bare URL (http or https).
std::expected<ReceiverConfig, std::string> receiver_from_url(const std::string& url);

// The URL without user info, query or fragment: what may be shown.
std::string display_url(const std::string& url);

// The URL's parts around its host, for connecting to one host while naming another (tls server_name):
// "https://u:p@[::1]:9443/w" is {"https://u:p@", "[::1]", "9443", "/w"}; the port defaults to the scheme's.
struct UrlAuthority {
  std::string prefix;  // scheme:// and user info
  std::string host;    // as written, IPv6 in brackets
  std::string port;
  std::string rest;    // path, query, fragment
};
UrlAuthority split_url_authority(const std::string& url);

// The receivers of a --remote-write.config file (a `remote_write:` list). An error is one line naming
// the file and line: "rw.yml:7: basic_auth needs a username".
std::expected<std::vector<ReceiverConfig>, std::string> load_receivers_file(const std::string& path);
// The same from text; `source` names it in errors.
std::expected<std::vector<ReceiverConfig>, std::string> parse_receivers(const std::string& text,
                                                                        const std::string& source);

}  // namespace gpuscope::remote_write
