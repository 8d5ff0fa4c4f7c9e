// ReceiverConfig: one remote-write receiver as `serve --remote-write URL` or a --remote-write.config file
// names it (Prometheus's remote_write block: url, basic_auth, authorization, headers,
// write_relabel_configs, queue_config), with its credentials read at load.
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

struct ReceiverConfig {
  std::string url;          // as given, credentials included: only ever handed to libcurl
  std::string display_url;  // scheme://host[:port]/path: the `url` label and log lines
  std::string name;         // the config's `name` (empty: none)
  std::string basic_auth_username;
  std::string basic_auth_password;
  std::string bearer_token;  // authorization: {type: Bearer, credentials}, or bearer_token(_file)
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<WriteRelabelRule> write_relabel;
  QueueSettings queue;
  std::chrono::milliseconds remote_timeout{30'000};
};

// A receiver from a bare URL (http or https).
std::expected<ReceiverConfig, std::string> receiver_from_url(const std::string& url);

// The URL without user info, query or fragment: what may be shown.
std::string display_url(const std::string& url);

// The receivers of a --remote-write.config file (a `remote_write:` list). An error is one line naming
// the file and line: "rw.yml:7: basic_auth needs a username".
std::expected<std::vector<ReceiverConfig>, std::string> load_receivers_file(const std::string& path);
// The same from text; `source` names it in errors.
std::expected<std::vector<ReceiverConfig>, std::string> parse_receivers(const std::string& text,
                                                                        const std::string& source);

}  // namespace gpuscope::remote_write
