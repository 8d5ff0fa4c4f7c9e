#include "analysis/kernel_xid_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <system_error>

namespace gpuscope::analysis {
namespace {

// The driver's marker; NVSwitch's `SXid (` lines and other NVRM lines do not carry it.
constexpr std::string_view kXidMarker = "NVRM: Xid (";
// One /dev/kmsg record is at most this long (the kernel's limit is 1024 bytes of text plus its
// prefix and dictionary); a smaller buffer makes read() fail with EINVAL.
constexpr std::size_t kKmsgRecordBytes = 8192;

std::optional<std::uint32_t> hex_number(std::string_view part, std::size_t max_digits) {
  if (part.empty() || part.size() > max_digits) return std::nullopt;
  std::uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v, 16);
  if (ec != std::errc{} || ptr != part.data() + part.size()) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

std::optional<KernelXid> parse_xid_line(std::string_view line) {
  const auto marker = line.find(kXidMarker);
  if (marker == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(marker + kXidMarker.size());
  const auto close = rest.find(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view address = rest.substr(0, close);
  if (address.starts_with("PCI:")) address.remove_prefix(4);
  const auto pci = parse_pci_address(address);
  if (!pci) return std::nullopt;
  rest.remove_prefix(close + 1);
  if (!rest.starts_with(':')) return std::nullopt;
  rest = trim(rest.substr(1));
  unsigned xid = 0;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), xid);
  if (ec != std::errc{} || ptr == rest.data()) return std::nullopt;
  rest.remove_prefix(static_cast<std::size_t>(ptr - rest.data()));
  if (!rest.empty() && rest.front() != ',') return std::nullopt;  // "79x" is not an XID number
  if (!rest.empty()) rest.remove_prefix(1);
  return KernelXid{*pci, std::string(address), xid, std::string(trim(rest))};
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

std::optional<PciAddress> parse_pci_address(std::string_view s) {
  // The function is optional: the kernel log leaves it out.
  std::optional<std::uint32_t> function;
  if (const auto dot = s.rfind('.'); dot != std::string_view::npos) {
    function = hex_number(s.substr(dot + 1), 1);
    if (!function) return std::nullopt;
    s = s.substr(0, dot);
  }
  const auto last_colon = s.rfind(':');
  if (last_colon == std::string_view::npos) return std::nullopt;
  const auto device = hex_number(s.substr(last_colon + 1), 2);
  s = s.substr(0, last_colon);
  std::optional<std::uint32_t> domain = 0;
  std::optional<std::uint32_t> bus;
  if (const auto colon = s.rfind(':'); colon != std::string_view::npos) {
    domain = hex_number(s.substr(0, colon), 8);
    bus = hex_number(s.substr(colon + 1), 2);
  } else {
    bus = hex_number(s, 2);
  }
  if (!device || !domain || !bus) return std::nullopt;
  return PciAddress{*domain, *bus, *device, function};
}

std::vector<KernelXid> parse_kernel_xid_lines(std::string_view text) {
  std::vector<KernelXid> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (auto xid = parse_xid_line(text.substr(start, end - start))) out.push_back(std::move(*xid));
    start = end + 1;
  }
  return out;
}

KernelXidLog read_kernel_xid_log(const std::string& path) {
  KernelXidLog log;
  log.source = path;
  // Non-blocking: /dev/kmsg would otherwise wait for the next kernel message after the newest one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    log.error = errno_text(errno);
    return log;
  }
  struct stat st {};
  const bool record_device = ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode);
  // Anything else is read to its end: a pipe (`--kernel-log <(journalctl -k)`) must be waited for.
  if (!record_device) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string text;
  std::string buffer(kKmsgRecordBytes, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n > 0) {
      text.append(buffer.data(), static_cast<std::size_t>(n));
      // Each read of the record device is one record; make sure it ends its line.
      if (record_device && text.back() != '\n') text.push_back('\n');
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;  // the newest record was read
    // The ring buffer overwrote records while we read: the next read goes on from the oldest left.
    if (errno == EPIPE && record_device) continue;
    log.error = errno_text(errno);
    ::close(fd);
    return log;
  }
  ::close(fd);
  log.readable = true;
  log.xids = parse_kernel_xid_lines(text);
  return log;
}

}  // namespace gpuscope::analysis
