// MetadataEndpoint: how each cloud tells a VM it is being preempted, one poll at a time. GCE answers
// TRUE/FALSE at instance/preempted (with the Metadata-Flavor header); AWS's IMDSv2 needs a session token
// (PUT, cached, renewed before it expires or on a 401) and answers 404 or a JSON action at
// spot/instance-action; any other endpoint (`--preemption-notice URL`) says "no" with 404, an empty body
// or FALSE, and anything else it answers with 200 is the notice.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "agent/metadata_request.h"
#include "agent/preemption_notice.h"
#include "model/clock.h"

namespace gpuscope::agent {

enum class PreemptionProvider { kGce, kAws, kUrl };
std::string_view preemption_provider_name(PreemptionProvider provider);  // "gce", "aws", "url"

struct PreemptionSource {
  PreemptionProvider provider = PreemptionProvider::kGce;
  std::string url;  // kUrl: the URL polled
  bool operator==(const PreemptionSource&) const = default;
};

// The metadata services' own addresses; --preemption-metadata-url replaces them (tests: a loopback server).
inline constexpr std::string_view kGceMetadataBaseUrl = "http://metadata.google.internal";
inline constexpr std::string_view kAwsMetadataBaseUrl = "http://169.254.169.254";
inline constexpr std::string_view kGcePreemptedPath = "/computeMetadata/v1/instance/preempted";
inline constexpr std::string_view kAwsTokenPath = "/latest/api/token";
inline constexpr std::string_view kAwsInstanceActionPath = "/latest/meta-data/spot/instance-action";
// IMDSv2 tokens live up to 6 h; one is asked for with that life and renewed this long before it ends.
inline constexpr std::chrono::seconds kAwsTokenTtl{21600};
inline constexpr std::chrono::seconds kAwsTokenRenewMargin{300};
// A notice's detail (a URL's body) as it goes into logs, metrics and notifications.
inline constexpr std::size_t kMaxNoticeDetailBytes = 256;

// --preemption-notice: "gce", "aws" or an http(s) URL; otherwise "invalid value 'X' for --preemption-notice (...)".
std::expected<PreemptionSource, std::string> parse_preemption_notice(std::string_view text);
// --preemption-metadata-url: http(s)://HOST[:PORT][/PREFIX], returned without a trailing '/'; it takes the
// place of the provider's scheme, host and port, its paths and headers kept.
std::expected<std::string, std::string> parse_metadata_base_url(std::string_view text);

struct MetadataEndpointOptions {
  PreemptionSource source;
  std::string base_url;  // empty: the provider's own (a URL source: its own scheme, host and port)
  std::chrono::milliseconds timeout = kDefaultMetadataTimeout;  // each request
  const model::Clock* clock = &model::system_clock();  // the AWS token's life
};

class MetadataEndpoint final : public PreemptionNoticeSource {
 public:
  explicit MetadataEndpoint(MetadataEndpointOptions options);

  // Called from one thread at a time (the watcher's).
  std::expected<std::optional<PreemptionNotice>, std::string> poll() override;
  void cancel() override { cancel_.cancel(); }

  // The URL each poll asks (the AWS instance-action URL for aws), for the log.
  std::string polled_url() const;

 private:
  std::expected<std::optional<PreemptionNotice>, std::string> poll_gce();
  std::expected<std::optional<PreemptionNotice>, std::string> poll_aws();
  std::expected<std::optional<PreemptionNotice>, std::string> poll_custom_url();
  std::expected<void, std::string> renew_aws_token();
  std::expected<MetadataResponse, std::string> get(const std::string& url, std::vector<std::string> headers);

  MetadataEndpointOptions options_;
  std::string base_url_;
  RequestCancel cancel_;
  std::string aws_token_;
  model::Clock::SteadyTime aws_token_renew_at_{};
};

}  // namespace gpuscope::agent
