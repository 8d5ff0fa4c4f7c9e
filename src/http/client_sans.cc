#include "http/client_sans.h"

#include <fmt/format.h>

#include "http/gnutls_library.h"

namespace gpuscope::http {

std::string_view certificate_san_kind_name(CertificateSan::Kind kind) {
  switch (kind) {
    case CertificateSan::Kind::kDns: return "DNS";
    case CertificateSan::Kind::kEmail: return "email";
    case CertificateSan::Kind::kIp: return "IP";
    case CertificateSan::Kind::kUri: return "URI";
  }
  return "?";
}

std::string go_ip_string(std::span<const unsigned char> b) {
  if (b.size() == 4) return fmt::format("{}.{}.{}.{}", b[0], b[1], b[2], b[3]);
  if (b.size() != 16) {
    std::string hex = "?";
    for (unsigned char c : b) hex += fmt::format("{:02x}", c);
    return hex;
  }
  bool mapped = b[10] == 0xff && b[11] == 0xff;
  for (int i = 0; i < 10; ++i) mapped = mapped && b[i] == 0;
  if (mapped) return fmt::format("{}.{}.{}.{}", b[12], b[13], b[14], b[15]);
  unsigned groups[8];
  for (int i = 0; i < 8; ++i) groups[i] = static_cast<unsigned>(b[2 * i]) << 8 | b[2 * i + 1];
  // Go's netip: the first longest run of two or more zero groups becomes "::".
  int zero_start = -1, zero_end = -1;
  for (int i = 0; i < 8; ++i) {
    int j = i;
    while (j < 8 && groups[j] == 0) ++j;
    if (j - i >= 2 && j - i > zero_end - zero_start) {
      zero_start = i;
      zero_end = j;
    }
  }
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if (i == zero_start) {
      out += "::";
      i = zero_end;
      if (i >= 8) break;
    } else if (i > 0) {
      out += ':';
    }
    out += fmt::format("{:x}", groups[i]);
  }
  return out;
}

std::expected<std::vector<CertificateSan>, std::string> certificate_sans(std::span<const unsigned char> der) {
  auto api = gnutls_api();
  if (!api) return std::unexpected(api.error());
  const GnutlsApi& g = **api;
  gnutls_x509_crt_t cert = nullptr;
  if (const int rc = g.x509_crt_init(&cert); rc < 0) return std::unexpected(fmt::format("GnuTLS: {}", g.strerror(rc)));
  const gnutls_datum_t datum{const_cast<unsigned char*>(der.data()), static_cast<unsigned>(der.size())};
  std::vector<CertificateSan> out;
  std::string error;
  if (const int rc = g.x509_crt_import(cert, &datum, GNUTLS_X509_FMT_DER); rc < 0) {
    error = fmt::format("the client certificate does not parse: {}", g.strerror(rc));
  }
  std::vector<unsigned char> buffer(256);
  for (unsigned seq = 0; error.empty(); ++seq) {
    size_t size = buffer.size();
    unsigned critical = 0;
    int type = g.x509_crt_get_subject_alt_name(cert, seq, buffer.data(), &size, &critical);
    if (type == GNUTLS_E_SHORT_MEMORY_BUFFER) {
      buffer.resize(size + 1);
      --seq;
      continue;
    }
    if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
    if (type < 0) {
      error = fmt::format("the client certificate's subject alternative names do not parse: {}", g.strerror(type));
      break;
    }
    const std::span<const unsigned char> bytes(buffer.data(), size);
    const std::string text(reinterpret_cast<const char*>(buffer.data()), size);
    switch (type) {
      case GNUTLS_SAN_DNSNAME: out.push_back({CertificateSan::Kind::kDns, text}); break;
      case GNUTLS_SAN_RFC822NAME: out.push_back({CertificateSan::Kind::kEmail, text}); break;
      case GNUTLS_SAN_URI: out.push_back({CertificateSan::Kind::kUri, text}); break;
      case GNUTLS_SAN_IPADDRESS: out.push_back({CertificateSan::Kind::kIp, go_ip_string(bytes)}); break;
      default: break;  // otherName, directoryName, registeredID: Go's x509 does not compare them either
    }
  }
  g.x509_crt_deinit(cert);
  if (!error.empty()) return std::unexpected(error);
  return out;
}

const CertificateSan* first_allowed_san(const std::vector<CertificateSan>& sans, const std::vector<std::string>& allowed) {
  for (const auto& san : sans) {
    for (const auto& a : allowed) {
      if (san.value == a) return &san;
    }
  }
  return nullptr;
}

std::string describe_refused_sans(const std::vector<CertificateSan>& sans) {
  if (sans.empty()) return "client certificate refused: it has no subject alternative name (client_allowed_sans is set)";
  constexpr std::size_t kShown = 4, kLongest = 80;
  std::string list;
  for (std::size_t i = 0; i < sans.size() && i < kShown; ++i) {
    std::string value = sans[i].value.size() > kLongest ? sans[i].value.substr(0, kLongest) + "..." : sans[i].value;
    list += fmt::format("{}{}:{}", list.empty() ? "" : ", ", certificate_san_kind_name(sans[i].kind), value);
  }
  if (sans.size() > kShown) list += fmt::format(" and {} more", sans.size() - kShown);
  return fmt::format("client certificate refused: none of its subject alternative names is in client_allowed_sans ({})",
                     list);
}

}  // namespace gpuscope::http
