// ClientSans: tls_server_config.client_allowed_sans, as exporter-toolkit checks it: the client's own
// certificate (the first the client sends) must carry a Subject Alternative Name equal to an entry of
// the list, compared as Go's crypto/x509 spells them: DNS names, e-mail addresses and URIs as written,
// IP addresses as Go's net.IP.String() (dotted IPv4, also for IPv4-mapped IPv6; RFC 5952 IPv6).
// Exact, case-sensitive string equality; other SAN types and the subject's CN do not count.
#pragma once

#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::http {

struct CertificateSan {
  enum class Kind { kDns, kEmail, kIp, kUri };
  Kind kind;
  std::string value;  // as compared (an IP address already formatted)
};

// "DNS", "email", "IP", "URI": for logs.
std::string_view certificate_san_kind_name(CertificateSan::Kind kind);

// An IP address SAN's raw bytes (4 or 16) as Go prints it; other lengths (which Go refuses to parse)
// as hex, so they can never equal an address someone lists.
std::string go_ip_string(std::span<const unsigned char> bytes);

// The SANs of a DER certificate, in its order, read with GnuTLS (which must be loadable); one line on
// a certificate GnuTLS cannot parse.
std::expected<std::vector<CertificateSan>, std::string> certificate_sans(std::span<const unsigned char> der);

// The first SAN of `sans` that `allowed` lists, or null.
const CertificateSan* first_allowed_san(const std::vector<CertificateSan>& sans, const std::vector<std::string>& allowed);

// Why a certificate with `sans` is refused, for the log: what it carries (at most a few, each cut
// short), never more than a line.
std::string describe_refused_sans(const std::vector<CertificateSan>& sans);

}  // namespace gpuscope::http
