#include "fabric/sysfs_ports.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>

#include "fabric/counter_catalog.h"
#include "fabric/pci_locality.h"

namespace gpuscope::fabric {
namespace {

namespace fs = std::filesystem;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

enum class ReadStatus { kOk, kMissing, kFailed };

// A sysfs attribute is one short line: one open and one read, no stream. A file that is not there is
// kMissing (an older kernel, another driver); one that fails to read (mlx5 answers EINVAL for some
// hw_counters while the port is down) is kFailed.
ReadStatus read_attribute(const std::string& path, std::string& out, int& err) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err = errno;
    return (errno == ENOENT || errno == ENOTDIR) ? ReadStatus::kMissing : ReadStatus::kFailed;
  }
  std::array<char, 256> buf;
  const ssize_t n = ::read(fd, buf.data(), buf.size());
  err = errno;
  ::close(fd);
  if (n < 0) return ReadStatus::kFailed;
  out.assign(trim(std::string_view(buf.data(), static_cast<std::size_t>(n))));
  return ReadStatus::kOk;
}

std::string read_or_empty(const std::string& path) {
  std::string out;
  int err = 0;
  if (read_attribute(path, out, err) != ReadStatus::kOk) out.clear();
  return out;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Reads the catalogued counters of `dir` (a directory of one value per file) into `port`.
void read_counters(const std::string& base, std::string_view dir, PortReading& port, SysfsScan& scan) {
  const std::string path = dir.empty() ? base : base + "/" + std::string(dir);
  std::vector<std::string> names;
  if (dir.empty()) {
    // The interface's own directory holds far more than counters: only the catalogued files are tried.
    for (const auto& s : counter_sources()) {
      if (s.file.find('/') == std::string_view::npos) names.emplace_back(s.file);
    }
  } else {
    names = list_dir(path);
  }
  std::string text;
  for (const auto& name : names) {
    if (!is_catalogued(dir, name)) continue;
    int err = 0;
    const auto status = read_attribute(path + "/" + name, text, err);
    if (status == ReadStatus::kMissing) continue;
    const std::string file = dir.empty() ? name : std::string(dir) + "/" + name;
    if (status == ReadStatus::kFailed) {
      scan.problems.push_back(port.key() + " " + file + ": " + std::strerror(err));
      continue;
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
      scan.problems.push_back(port.key() + " " + file + ": not a counter: '" + text + "'");
      continue;
    }
    port.counters.emplace_back(file, value);
  }
}

// The PCI function behind `link` (an RDMA device's or an interface's `device`), relative to the root.
void resolve_pci(const fs::path& root_canonical, const fs::path& link, PortReading& port) {
  std::error_code ec;
  const fs::path resolved = fs::canonical(link, ec);
  if (ec) return;
  const auto pci = parse_pci_path(resolved.string());
  if (!pci) return;
  // Cut below the function (an interface of virtio-net sits at …/0000:00:03.0/virtio2).
  const std::string full = resolved.lexically_relative(root_canonical).generic_string();
  const std::size_t at = full.find(pci->function());
  port.pci_path = at == std::string::npos ? full : full.substr(0, at + pci->function().size());
  port.pci_bus_id = pci->function();
}

}  // namespace

std::string_view source_name(PortSource source) { return source == PortSource::kRdma ? "rdma" : "net"; }

std::string PortReading::key() const {
  return std::string(source_name(source)) + ":" + device + (port.empty() ? "" : "/" + port);
}

bool is_skipped_interface_name(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kVirtualPrefixes{
      "lo", "veth", "docker", "br-", "virbr", "cni", "flannel", "cali", "vxlan", "tun", "tap", "kube-"};
  if (name == "lo") return true;
  return std::any_of(kVirtualPrefixes.begin() + 1, kVirtualPrefixes.end(),
                     [&](std::string_view p) { return name.starts_with(p); });
}

std::optional<double> parse_ib_rate(std::string_view text) {
  // "%s Gb/sec (%dX %s)", as ib_core's rate_show writes it (older kernels: "... Gb/sec").
  text = trim(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return std::nullopt;
  std::string_view unit = trim(std::string_view(end, static_cast<std::size_t>(text.data() + text.size() - end)));
  double bits_per_unit = 0;
  if (unit.starts_with("Gb/s")) bits_per_unit = 1e9;
  else if (unit.starts_with("Mb/s")) bits_per_unit = 1e6;
  else return std::nullopt;
  return value * bits_per_unit / 8;
}

std::optional<std::pair<int, std::string>> parse_numbered_state(std::string_view text) {
  text = trim(text);
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + colon, n);
  if (ec != std::errc() || end != text.data() + colon) return std::nullopt;
  return std::pair{n, std::string(trim(text.substr(colon + 1)))};
}

SysfsScan SysfsPortReader::read() const {
  SysfsScan scan;
  read_rdma(scan);
  read_net(scan);
  std::sort(scan.ports.begin(), scan.ports.end(), [](const PortReading& a, const PortReading& b) { return a.key() < b.key(); });
  return scan;
}

void SysfsPortReader::read_rdma(SysfsScan& scan) const {
  // Documentation/ABI/stable/sysfs-class-infiniband: DEV/node_guid, DEV/device (the PCI function),
  // DEV/ports/N/{state,phys_state,rate,link_layer,gids/0,counters/,hw_counters/}.
  const std::string class_dir = (root_ / "class/infiniband").string();
  std::error_code ec;
  const fs::path root_canonical = fs::canonical(root_, ec);
  for (const auto& dev : list_dir(class_dir)) {
    const std::string dev_dir = class_dir + "/" + dev;
    const std::string node_guid = read_or_empty(dev_dir + "/node_guid");
    for (const auto& port_name : list_dir(dev_dir + "/ports")) {
      const std::string dir = dev_dir + "/ports/" + port_name;
      PortReading p;
      p.source = PortSource::kRdma;
      p.device = dev;
      p.port = port_name;
      p.link_layer = read_or_empty(dir + "/link_layer");
      // The port GUID is GID 0's interface id (its last 64 bits) on InfiniBand; RoCE's GIDs are made from
      // IP addresses and EFA's from its own, so there the node GUID names the adapter.
      const std::string gid0 = read_or_empty(dir + "/gids/0");
      p.guid = (p.link_layer == "InfiniBand" && gid0.size() == 39) ? gid0.substr(20) : node_guid;
      if (auto s = parse_numbered_state(read_or_empty(dir + "/state"))) {
        p.up = s->first == 4;  // IB_PORT_ACTIVE
        p.state = s->second;
      }
      if (auto s = parse_numbered_state(read_or_empty(dir + "/phys_state"))) p.phys_state = s->second;
      p.rate = read_or_empty(dir + "/rate");
      p.rate_bytes_per_second = parse_ib_rate(p.rate);
      resolve_pci(root_canonical, dev_dir + "/device", p);
      read_counters(dir, "counters", p, scan);
      read_counters(dir, "hw_counters", p, scan);
      std::sort(p.counters.begin(), p.counters.end());
      scan.ports.push_back(std::move(p));
    }
  }
}

void SysfsPortReader::read_net(SysfsScan& scan) const {
  // Documentation/ABI/testing/sysfs-class-net: IFACE/{device,operstate,speed,type,carrier_down_count},
  // IFACE/statistics/*.
  const std::string class_dir = (root_ / "class/net").string();
  std::error_code ec;
  const fs::path root_canonical = fs::canonical(root_, ec);
  for (const auto& name : list_dir(class_dir)) {
    if (is_skipped_interface_name(name)) continue;
    const std::string dir = class_dir + "/" + name;
    if (::access((dir + "/device").c_str(), F_OK) != 0) continue;           // virtual: no device behind it
    if (::access((dir + "/device/physfn").c_str(), F_OK) == 0) continue;    // an SR-IOV virtual function
    if (read_or_empty(dir + "/type") == "32") continue;                     // IPoIB: the RDMA port counts it
    PortReading p;
    p.source = PortSource::kNet;
    p.device = name;
    p.link_layer = "Ethernet";
    p.state = read_or_empty(dir + "/operstate");
    p.up = p.state == "up";
    // Mb/s; -1 (or EINVAL) while the link is down or the driver does not know (virtio).
    const std::string speed = read_or_empty(dir + "/speed");
    long mbps = 0;
    if (auto [end, e] = std::from_chars(speed.data(), speed.data() + speed.size(), mbps); e == std::errc() && mbps > 0) {
      p.rate = speed + " Mb/s";
      p.rate_bytes_per_second = static_cast<double>(mbps) * 1e6 / 8;
    }
    resolve_pci(root_canonical, dir + "/device", p);
    read_counters(dir, "statistics", p, scan);
    read_counters(dir, "", p, scan);
    std::sort(p.counters.begin(), p.counters.end());
    scan.ports.push_back(std::move(p));
  }
}

}  // namespace gpuscope::fabric
