#include "agent/metadata_endpoint.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "http/query_api.h"
#include "model/printable_text.h"

namespace gpuscope::agent {
namespace {

std::string_view metadata_trimmed(std::string_view text) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

bool metadata_equals_lower(std::string_view text, std::string_view lower) {
  return text.size() == lower.size() && std::equal(text.begin(), text.end(), lower.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

// An answer as it may go into a log line, a metric label or a notification: one printable line, bounded.
std::string metadata_notice_detail(std::string_view body) {
  std::string text = model::printable_text(metadata_trimmed(body));
  if (text.size() > kMaxNoticeDetailBytes) {
    text.resize(kMaxNoticeDetailBytes);
    // Never end inside an escape or a UTF-8 sequence cut in half.
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();
    if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
    if (const auto escape = text.rfind("\\x"); escape != std::string::npos && escape + 4 > text.size()) text.resize(escape);
    text += "...";
  }
  return text;
}

// "HTTP 500: <first bytes of the body>"
std::string metadata_unexpected_status(const MetadataResponse& r) {
  std::string out = fmt::format("HTTP {}", r.status);
  if (const std::string body = metadata_notice_detail(r.body.substr(0, 80)); !body.empty()) out += ": " + body;
  return out;
}

// "http://host:port" and "/path?query" of an http(s) URL with a host; nullopt for anything else.
struct MetadataUrlParts {
  std::string origin;
  std::string rest;
};
std::optional<MetadataUrlParts> split_metadata_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::nullopt;
  const std::string_view scheme = url.substr(0, scheme_end);
  if (!metadata_equals_lower(scheme, "http") && !metadata_equals_lower(scheme, "https")) return std::nullopt;
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return std::nullopt;  // no spaces or control bytes
  }
  const std::size_t authority = scheme_end + 3;
  const std::size_t end = std::min(url.find_first_of("/?#", authority), url.size());
  std::string_view host_port = url.substr(authority, end - authority);
  if (const std::size_t at = host_port.rfind('@'); at != std::string_view::npos) host_port.remove_prefix(at + 1);
  if (host_port.empty() || host_port.front() == ':') return std::nullopt;
  if (const std::size_t colon = host_port.rfind(':'); colon != std::string_view::npos && host_port.back() != ']') {
    const std::string_view port = host_port.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    if (std::stoi(std::string(port)) > 65535) return std::nullopt;
  }
  return MetadataUrlParts{std::string(url.substr(0, end)), std::string(url.substr(end))};
}

}  // namespace

std::string_view preemption_provider_name(PreemptionProvider provider) {
  switch (provider) {
    case PreemptionProvider::kGce: return "gce";
    case PreemptionProvider::kAws: return "aws";
    case PreemptionProvider::kUrl: return "url";
  }
  return "url";
}

std::expected<PreemptionSource, std::string> parse_preemption_notice(std::string_view text) {
  if (text == "gce") return PreemptionSource{PreemptionProvider::kGce, {}};
  if (text == "aws") return PreemptionSource{PreemptionProvider::kAws, {}};
  if (split_metadata_url(text)) return PreemptionSource{PreemptionProvider::kUrl, std::string(text)};
  return std::unexpected(fmt::format("invalid value '{}' for --preemption-notice (gce, aws, or an http:// or https:// URL)",
                                     model::printable_text(text)));
}

std::expected<std::string, std::string> parse_metadata_base_url(std::string_view text) {
  auto parts = split_metadata_url(text);
  if (!parts || parts->rest.find_first_of("?#") != std::string::npos) {
    return std::unexpected(fmt::format(
        "invalid value '{}' for --preemption-metadata-url (http://HOST[:PORT], e.g. http://127.0.0.1:8080)",
        model::printable_text(text)));
  }
  std::string base = parts->origin + parts->rest;
  while (base.ends_with('/')) base.pop_back();
  return base;
}

MetadataEndpoint::MetadataEndpoint(MetadataEndpointOptions options) : options_(std::move(options)) {
  base_url_ = options_.base_url;
  if (base_url_.empty()) {
    switch (options_.source.provider) {
      case PreemptionProvider::kGce: base_url_ = kGceMetadataBaseUrl; break;
      case PreemptionProvider::kAws: base_url_ = kAwsMetadataBaseUrl; break;
      case PreemptionProvider::kUrl: break;
    }
  }
}

std::string MetadataEndpoint::polled_url() const {
  switch (options_.source.provider) {
    case PreemptionProvider::kGce: return base_url_ + std::string(kGcePreemptedPath);
    case PreemptionProvider::kAws: return base_url_ + std::string(kAwsInstanceActionPath);
    case PreemptionProvider::kUrl: {
      if (base_url_.empty()) return options_.source.url;
      const auto parts = split_metadata_url(options_.source.url);
      return base_url_ + (parts ? parts->rest : std::string());
    }
  }
  return options_.source.url;
}

std::expected<MetadataResponse, std::string> MetadataEndpoint::get(const std::string& url,
                                                                   std::vector<std::string> headers) {
  MetadataRequest request;
  request.url = url;
  request.headers = std::move(headers);
  request.timeout = options_.timeout;
  return perform_metadata_request(request, &cancel_);
}

std::expected<std::optional<PreemptionNotice>, std::string> MetadataEndpoint::poll() {
  switch (options_.source.provider) {
    case PreemptionProvider::kGce: return poll_gce();
    case PreemptionProvider::kAws: return poll_aws();
    case PreemptionProvider::kUrl: return poll_custom_url();
  }
  return std::unexpected("unknown provider");
}

std::expected<std::optional<PreemptionNotice>, std::string> MetadataEndpoint::poll_gce() {
  // Without the header GCE's metadata server refuses (403): it keeps requests a redirected or forged URL
  // makes from reading it.
  auto r = get(polled_url(), {"Metadata-Flavor: Google"});
  if (!r) return std::unexpected(r.error());
  if (r->status != 200) return std::unexpected(metadata_unexpected_status(*r));
  const std::string_view answer = metadata_trimmed(r->body);
  if (answer == "FALSE") return std::nullopt;
  if (answer == "TRUE") return PreemptionNotice{"gce", "", std::nullopt, "TRUE"};
  return std::unexpected(fmt::format("unexpected answer '{}' (TRUE or FALSE)", metadata_notice_detail(answer.substr(0, 80))));
}

std::expected<void, std::string> MetadataEndpoint::renew_aws_token() {
  MetadataRequest request;
  request.method = "PUT";
  request.url = base_url_ + std::string(kAwsTokenPath);
  request.headers = {fmt::format("X-aws-ec2-metadata-token-ttl-seconds: {}", kAwsTokenTtl.count())};
  request.timeout = options_.timeout;
  auto r = perform_metadata_request(request, &cancel_);
  if (!r) return std::unexpected(fmt::format("token: {}", r.error()));
  if (r->status != 200) return std::unexpected(fmt::format("token: {}", metadata_unexpected_status(*r)));
  const std::string_view token = metadata_trimmed(r->body);
  if (token.empty() || std::any_of(token.begin(), token.end(), [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
    return std::unexpected("token: the answer is not a token");
  }
  aws_token_ = std::string(token);
  aws_token_renew_at_ = options_.clock->steady() + kAwsTokenTtl - kAwsTokenRenewMargin;
  return {};
}

std::expected<std::optional<PreemptionNotice>, std::string> MetadataEndpoint::poll_aws() {
  std::expected<MetadataResponse, std::string> r = std::unexpected("");
  // A token the service no longer takes (401: expired early, the instance restarted) is asked for again once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (aws_token_.empty() || options_.clock->steady() >= aws_token_renew_at_) {
      if (auto renewed = renew_aws_token(); !renewed) return std::unexpected(renewed.error());
    }
    r = get(polled_url(), {"X-aws-ec2-metadata-token: " + aws_token_});
    if (!r) return std::unexpected(r.error());
    if (r->status != 401) break;
    aws_token_.clear();
  }
  if (r->status == 404) return std::nullopt;
  if (r->status != 200) return std::unexpected(metadata_unexpected_status(*r));
  const nlohmann::json json = nlohmann::json::parse(r->body, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("action") || !json.at("action").is_string()) {
    return std::unexpected(fmt::format("unexpected answer '{}' (a JSON object with action and time)",
                                       metadata_notice_detail(std::string_view(r->body).substr(0, 80))));
  }
  PreemptionNotice notice{"aws", metadata_notice_detail(json.at("action").get<std::string>()), std::nullopt, metadata_notice_detail(r->body)};
  if (json.contains("time") && json.at("time").is_string()) {
    // An unreadable time is no reason to ignore the notice: it is then dated when it was seen.
    if (auto t = http::parse_api_time(json.at("time").get<std::string>()); t) {
      notice.action_time = std::chrono::system_clock::time_point(std::chrono::milliseconds(*t));
    }
  }
  return notice;
}

std::expected<std::optional<PreemptionNotice>, std::string> MetadataEndpoint::poll_custom_url() {
  auto r = get(polled_url(), {});
  if (!r) return std::unexpected(r.error());
  if (r->status == 404) return std::nullopt;
  if (r->status != 200) return std::unexpected(metadata_unexpected_status(*r));
  const std::string_view answer = metadata_trimmed(r->body);
  if (answer.empty() || answer == "FALSE" || answer == "false" || answer == "0") return std::nullopt;
  return PreemptionNotice{"url", "", std::nullopt, metadata_notice_detail(answer)};
}

}  // namespace gpuscope::agent
