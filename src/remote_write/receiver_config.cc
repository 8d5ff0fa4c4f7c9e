#include "remote_write/receiver_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <string_view>

#include "model/file_text.h"
#include "model/yaml_error_text.h"
#include "promql/parser.h"

namespace gpuscope::remote_write {

namespace {

// An error at a node: "file:line: what".
struct ConfigError {
  std::string text;
};

[[noreturn]] void fail_at(const YAML::Node& node, const std::string& source, const std::string& what) {
  throw ConfigError{fmt::format("{}:{}: {}", source, node.Mark().line + 1, what)};
}

void check_keys(const YAML::Node& map, const std::string& source, std::string_view where,
                std::initializer_list<std::string_view> allowed) {
  if (!map.IsMap()) fail_at(map, source, fmt::format("{} must be a map", where));
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      fail_at(kv.first, source, fmt::format("unknown key '{}' in {} (known: {})", key, where, fmt::join(allowed, ", ")));
    }
  }
}

std::string yaml_scalar(const YAML::Node& node, const std::string& source, std::string_view what) {
  if (!node.IsScalar()) fail_at(node, source, fmt::format("{} must be a string", what));
  return node.as<std::string>();
}

std::string file_secret(const YAML::Node& node, const std::string& source, std::string_view what) {
  const std::string path = yaml_scalar(node, source, what);
  auto text = model::read_file_text(path);
  if (!text) fail_at(node, source, fmt::format("{} {}: {}", what, path, text.error()));
  std::string value = std::move(*text);
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
  return value;
}

std::chrono::milliseconds yaml_duration(const YAML::Node& node, const std::string& source, std::string_view what) {
  const std::string text = yaml_scalar(node, source, what);
  auto ms = promql::parse_duration(text);
  if (!ms || *ms <= 0) fail_at(node, source, fmt::format("invalid duration '{}' for {}", text, what));
  return std::chrono::milliseconds(*ms);
}

std::size_t yaml_count(const YAML::Node& node, const std::string& source, std::string_view what, std::size_t max) {
  const std::string text = yaml_scalar(node, source, what);
  std::size_t n = 0;
  const bool digits = !text.empty() && text.size() < 10 &&
                      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  if (digits) n = std::stoul(text);
  if (!digits || n == 0 || n > max) fail_at(node, source, fmt::format("invalid value '{}' for {} (1 to {})", text, what, max));
  return n;
}

bool yaml_bool(const YAML::Node& node, const std::string& source, std::string_view what) {
  const std::string text = yaml_scalar(node, source, what);
  if (text == "true") return true;
  if (text == "false") return false;
  fail_at(node, source, fmt::format("{} must be true or false, not '{}'", what, text));
}

// A PEM file the transport will hand to libcurl: checked now, so a wrong path stops the start instead
// of failing every request later. `marker` is the PEM label's tail that must be there.
std::string tls_pem_file(const YAML::Node& node, const std::string& source, std::string_view what,
                         std::string_view marker) {
  const std::string path = yaml_scalar(node, source, what);
  auto text = model::read_file_text(path);
  if (!text) fail_at(node, source, fmt::format("{} {}: {}", what, path, text.error()));
  if (text->find(marker) == std::string::npos) {
    fail_at(node, source, fmt::format("{} {}: no PEM block ending in '{}' in it", what, path, marker));
  }
  return path;
}

TlsSettings tls_settings(const YAML::Node& node, const std::string& source) {
  check_keys(node, source, "tls_config",
             {"ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify", "min_version"});
  TlsSettings t;
  constexpr std::string_view kCertificate = "CERTIFICATE-----";
  if (node["ca_file"]) t.ca_file = tls_pem_file(node["ca_file"], source, "ca_file", kCertificate);
  if (node["cert_file"]) t.cert_file = tls_pem_file(node["cert_file"], source, "cert_file", kCertificate);
  if (node["key_file"]) t.key_file = tls_pem_file(node["key_file"], source, "key_file", "PRIVATE KEY-----");
  if (!t.cert_file.empty() && t.key_file.empty()) fail_at(node, source, "tls_config has cert_file but no key_file");
  if (t.cert_file.empty() && !t.key_file.empty()) fail_at(node, source, "tls_config has key_file but no cert_file");
  if (node["server_name"]) {
    t.server_name = yaml_scalar(node["server_name"], source, "server_name");
    if (t.server_name.empty() || t.server_name.find_first_of(":/@[] \t\r\n") != std::string::npos) {
      fail_at(node["server_name"], source, fmt::format("invalid server_name '{}' (a host name)", t.server_name));
    }
  }
  if (node["insecure_skip_verify"]) t.insecure_skip_verify = yaml_bool(node["insecure_skip_verify"], source, "insecure_skip_verify");
  if (const YAML::Node v = node["min_version"]) {
    const std::string text = yaml_scalar(v, source, "min_version");
    constexpr std::array<std::pair<std::string_view, int>, 4> kVersions = {
        {{"TLS10", 10}, {"TLS11", 11}, {"TLS12", 12}, {"TLS13", 13}}};
    const auto* it = std::find_if(kVersions.begin(), kVersions.end(), [&](const auto& p) { return p.first == text; });
    if (it == kVersions.end()) fail_at(v, source, fmt::format("unknown min_version '{}' (TLS10, TLS11, TLS12 or TLS13)", text));
    t.min_version = it->second;
  }
  return t;
}

// Headers the request's own meaning rests on: a config may not replace them (as Prometheus refuses).
constexpr std::array<std::string_view, 6> kReservedHeaders = {
    "authorization", "content-encoding", "content-type", "user-agent", "x-prometheus-remote-write-version",
    "content-length"};

WriteRelabelRule relabel_rule(const YAML::Node& node, const std::string& source) {
  check_keys(node, source, "a write_relabel_configs entry", {"source_labels", "separator", "regex", "action"});
  WriteRelabelRule::Action action = WriteRelabelRule::Action::kKeep;
  if (!node["action"]) fail_at(node, source, "a write_relabel_configs entry needs an action (keep or drop)");
  const std::string a = yaml_scalar(node["action"], source, "action");
  if (a == "keep") {
    action = WriteRelabelRule::Action::kKeep;
  } else if (a == "drop") {
    action = WriteRelabelRule::Action::kDrop;
  } else {
    fail_at(node["action"], source, fmt::format("action '{}' is not supported (keep or drop)", a));
  }
  std::vector<std::string> labels{"__name__"};
  if (const YAML::Node sl = node["source_labels"]) {
    if (!sl.IsSequence() || sl.size() == 0) fail_at(sl, source, "source_labels must be a list of label names");
    labels.clear();
    for (const auto& l : sl) labels.push_back(yaml_scalar(l, source, "a source label"));
  }
  const std::string separator = node["separator"] ? yaml_scalar(node["separator"], source, "separator") : ";";
  const std::string regex = node["regex"] ? yaml_scalar(node["regex"], source, "regex") : "(.*)";
  auto rule = make_relabel_rule(action, std::move(labels), separator, regex);
  if (!rule) fail_at(node["regex"] ? node["regex"] : node, source, fmt::format("invalid regex '{}': {}", regex, rule.error()));
  return std::move(*rule);
}

ReceiverConfig receiver(const YAML::Node& node, const std::string& source) {
  check_keys(node, source, "a remote_write entry",
             {"url", "name", "remote_timeout", "headers", "basic_auth", "authorization", "bearer_token",
              "bearer_token_file", "tls_config", "proxy_url", "no_proxy", "proxy_from_environment",
              "write_relabel_configs", "queue_config"});
  if (!node["url"]) fail_at(node, source, "a remote_write entry needs a url");
  auto made = receiver_from_url(yaml_scalar(node["url"], source, "url"));
  if (!made) fail_at(node["url"], source, made.error());
  ReceiverConfig r = std::move(*made);
  if (node["name"]) r.name = yaml_scalar(node["name"], source, "name");
  if (node["remote_timeout"]) r.remote_timeout = yaml_duration(node["remote_timeout"], source, "remote_timeout");
  if (const YAML::Node h = node["headers"]) {
    if (!h.IsMap()) fail_at(h, source, "headers must be a map of names to values");
    for (const auto& kv : h) {
      const std::string name = yaml_scalar(kv.first, source, "a header name");
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (std::find(kReservedHeaders.begin(), kReservedHeaders.end(), lower) != kReservedHeaders.end()) {
        fail_at(kv.first, source, fmt::format("header '{}' is set by gpuscope and cannot be configured", name));
      }
      const std::string value = yaml_scalar(kv.second, source, "a header value");
      if (name.find_first_of(":\r\n ") != std::string::npos || value.find_first_of("\r\n") != std::string::npos) {
        fail_at(kv.first, source, fmt::format("header '{}' has a character a header cannot hold", name));
      }
      r.headers.emplace_back(name, value);
    }
  }
  int auth_kinds = 0;
  if (const YAML::Node b = node["basic_auth"]) {
    ++auth_kinds;
    check_keys(b, source, "basic_auth", {"username", "password", "password_file"});
    if (!b["username"]) fail_at(b, source, "basic_auth needs a username");
    r.basic_auth_username = yaml_scalar(b["username"], source, "username");
    if (b["password"] && b["password_file"]) fail_at(b, source, "basic_auth takes password or password_file, not both");
    if (b["password"]) r.basic_auth_password = yaml_scalar(b["password"], source, "password");
    if (b["password_file"]) r.basic_auth_password = file_secret(b["password_file"], source, "password_file");
  }
  if (const YAML::Node a = node["authorization"]) {
    ++auth_kinds;
    check_keys(a, source, "authorization", {"type", "credentials", "credentials_file"});
    if (a["type"] && yaml_scalar(a["type"], source, "type") != "Bearer") fail_at(a["type"], source, "authorization type must be Bearer");
    if (a["credentials"]) r.bearer_token = yaml_scalar(a["credentials"], source, "credentials");
    if (a["credentials_file"]) r.bearer_token = file_secret(a["credentials_file"], source, "credentials_file");
    if (r.bearer_token.empty()) fail_at(a, source, "authorization needs credentials or credentials_file");
  }
  if (node["bearer_token"] || node["bearer_token_file"]) {
    ++auth_kinds;
    if (node["bearer_token"]) r.bearer_token = yaml_scalar(node["bearer_token"], source, "bearer_token");
    if (node["bearer_token_file"]) r.bearer_token = file_secret(node["bearer_token_file"], source, "bearer_token_file");
  }
  if (auth_kinds > 1) fail_at(node, source, "give one of basic_auth, authorization, bearer_token(_file)");
  if (const YAML::Node t = node["tls_config"]) {
    // Prometheus ignores it on an http URL; here that is a mistake worth saying, as an unknown key is.
    if (!r.url.starts_with("https://")) fail_at(t, source, "tls_config needs an https:// url");
    r.tls = tls_settings(t, source);
  }
  if (const YAML::Node p = node["proxy_url"]) {
    r.proxy_url = yaml_scalar(p, source, "proxy_url");
    if (!r.proxy_url.starts_with("http://") || split_url_authority(r.proxy_url).host.empty() ||
        r.proxy_url.find_first_of(" \t\r\n") != std::string::npos) {
      fail_at(p, source, fmt::format("invalid proxy_url '{}' (http://host:port)", display_url(r.proxy_url)));
    }
  }
  if (const YAML::Node n = node["no_proxy"]) {
    if (r.proxy_url.empty()) fail_at(n, source, "no_proxy needs a proxy_url");
    r.no_proxy = yaml_scalar(n, source, "no_proxy");
  }
  if (const YAML::Node e = node["proxy_from_environment"]) {
    r.proxy_from_environment = yaml_bool(e, source, "proxy_from_environment");
    if (r.proxy_from_environment && !r.proxy_url.empty()) {
      fail_at(e, source, "give proxy_url or proxy_from_environment, not both");
    }
  }
  if (const YAML::Node w = node["write_relabel_configs"]) {
    if (!w.IsSequence()) fail_at(w, source, "write_relabel_configs must be a list");
    for (const auto& rule : w) r.write_relabel.push_back(relabel_rule(rule, source));
  }
  if (const YAML::Node q = node["queue_config"]) {
    check_keys(q, source, "queue_config", {"max_samples_per_send", "min_backoff", "max_backoff", "max_samples_per_read"});
    if (q["max_samples_per_send"]) r.queue.max_samples_per_send = yaml_count(q["max_samples_per_send"], source, "max_samples_per_send", 100'000);
    if (q["min_backoff"]) r.queue.min_backoff = yaml_duration(q["min_backoff"], source, "min_backoff");
    if (q["max_backoff"]) r.queue.max_backoff = yaml_duration(q["max_backoff"], source, "max_backoff");
    if (q["max_samples_per_read"]) r.queue.max_samples_per_read = yaml_count(q["max_samples_per_read"], source, "max_samples_per_read", 10'000'000);
    if (r.queue.max_backoff < r.queue.min_backoff) fail_at(q, source, "max_backoff is less than min_backoff");
    if (r.queue.max_samples_per_read < r.queue.max_samples_per_send) {
      fail_at(q, source, "max_samples_per_read is less than max_samples_per_send");
    }
  }
  return r;
}

}  // namespace

std::string display_url(const std::string& url) {
  std::string out = url;
  const auto scheme_end = out.find("://");
  const std::size_t host_begin = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const std::size_t path_begin = std::min(out.find_first_of("/?#", host_begin), out.size());
  const std::size_t at = out.rfind('@', path_begin);
  if (at != std::string::npos && at >= host_begin) out.erase(host_begin, at + 1 - host_begin);
  if (const auto cut = out.find_first_of("?#", host_begin); cut != std::string::npos) out.resize(cut);
  return out;
}

UrlAuthority split_url_authority(const std::string& url) {
  UrlAuthority out;
  const auto scheme_end = url.find("://");
  const std::size_t host_begin = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const std::size_t path_begin = std::min(url.find_first_of("/?#", host_begin), url.size());
  const std::size_t at = url.rfind('@', path_begin);
  const std::size_t authority = at != std::string::npos && at >= host_begin ? at + 1 : host_begin;
  out.prefix = url.substr(0, authority);
  std::string hostport = url.substr(authority, path_begin - authority);
  out.rest = url.substr(path_begin);
  // The port follows the last ':' outside an IPv6 literal's brackets.
  const std::size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && (hostport.find(']') == std::string::npos || colon > hostport.find(']'))) {
    out.port = hostport.substr(colon + 1);
    hostport.resize(colon);
  }
  out.host = std::move(hostport);
  if (out.port.empty()) out.port = url.starts_with("https://") ? "443" : "80";
  return out;
}

std::expected<ReceiverConfig, std::string> receiver_from_url(const std::string& url) {
  const bool http = url.starts_with("http://"), https = url.starts_with("https://");
  const std::size_t host = http ? 7 : 8;
  if ((!http && !https) || url.size() <= host || url[host] == '/' ||
      url.find_first_of(" \t\r\n") != std::string::npos) {
    return std::unexpected(fmt::format("invalid remote-write URL '{}' (http:// or https://, e.g. "
                                       "http://prometheus:9090/api/v1/write)", display_url(url)));
  }
  ReceiverConfig r;
  r.url = url;
  r.display_url = display_url(url);
  return r;
}

std::expected<std::vector<ReceiverConfig>, std::string> parse_receivers(const std::string& text,
                                                                        const std::string& source) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root || root.IsNull()) return std::unexpected(fmt::format("{}:1: empty file (expected a remote_write: list)", source));
    check_keys(root, source, "the file", {"remote_write"});
    const YAML::Node list = root["remote_write"];
    if (!list || !list.IsSequence() || list.size() == 0) {
      fail_at(list ? list : root, source, "remote_write must be a non-empty list of receivers");
    }
    std::vector<ReceiverConfig> out;
    std::set<std::string> urls;
    for (const auto& node : list) {
      out.push_back(receiver(node, source));
      if (!urls.insert(out.back().url).second) fail_at(node, source, fmt::format("receiver {} is listed twice", out.back().display_url));
    }
    return out;
  } catch (const ConfigError& e) {
    return std::unexpected(e.text);
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("{}:{}: {}", source, e.mark.line + 1, model::yaml_error_text(e)));
  }
}

std::expected<std::vector<ReceiverConfig>, std::string> load_receivers_file(const std::string& path) {
  auto text = model::read_file_text(path);
  if (!text) return std::unexpected(fmt::format("{}: {}", path, text.error()));
  return parse_receivers(*text, path);
}

}  // namespace gpuscope::remote_write
