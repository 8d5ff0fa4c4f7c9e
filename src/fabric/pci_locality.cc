#include "fabric/pci_locality.h"

#include <algorithm>
#include <cctype>
#include <system_error>

namespace gpuscope::fabric {
namespace {

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// The components of a '/'-separated path.
std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

bool is_pci_function_name(std::string_view t) {
  // DDDD:BB:DD.F
  if (t.size() != 12 || t[4] != ':' || t[7] != ':' || t[10] != '.') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!is_lower_hex(t[i])) return false;
  }
  return t[11] >= '0' && t[11] <= '7';
}

std::optional<PciPath> parse_pci_path(std::string_view canonical_path) {
  PciPath out;
  for (std::string_view c : components(canonical_path)) {
    if (out.host_bridge.empty()) {
      // "pci0000:00": a host bridge (PCI domain and root bus).
      if (c.size() == 10 && c.starts_with("pci") && c[7] == ':') out.host_bridge = std::string(c);
      continue;
    }
    if (!is_pci_function_name(c)) break;  // below the last function: virtio2/, net/, infiniband/
    out.chain.emplace_back(c);
  }
  if (out.host_bridge.empty() || out.chain.empty()) return std::nullopt;
  return out;
}

std::string sysfs_bus_id(std::string_view nvml_bus_id) {
  // NVML pads the domain to 8 digits; sysfs writes 4 (domains above 0xffff do not occur on x86 or Arm).
  if (nvml_bus_id.size() < 12) return {};
  std::string id(nvml_bus_id.substr(nvml_bus_id.size() - 12));
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return is_pci_function_name(id) ? id : std::string{};
}

bool share_pcie_switch(const PciPath& a, const PciPath& b) {
  if (a.host_bridge != b.host_bridge || a.chain.empty() || b.chain.empty()) return false;
  // Functions of one device (0000:05:00.0 and 0000:05:00.1) share everything above them.
  const auto& fa = a.function();
  const auto& fb = b.function();
  if (a.chain.size() == b.chain.size() && std::equal(a.chain.begin(), a.chain.end() - 1, b.chain.begin()) &&
      fa.substr(0, 10) == fb.substr(0, 10)) {
    return true;
  }
  // The bridges above each (the chain without the function itself) in common, from the root port down.
  std::size_t common = 0;
  while (common + 1 < a.chain.size() && common + 1 < b.chain.size() && a.chain[common] == b.chain[common]) ++common;
  // The root port alone is not a switch: two devices under one root port but no common bridge below it
  // cannot happen (a root port has one link); sharing only the host bridge is nvidia-smi's PHB.
  return common >= 2;
}

PciLocality::PciLocality(const std::filesystem::path& sysfs_root, std::span<const model::GpuInfo> gpus) {
  for (const auto& g : gpus) {
    const std::string id = sysfs_bus_id(g.pci_bus_id);
    if (id.empty()) continue;
    std::error_code ec;
    const auto resolved = std::filesystem::canonical(sysfs_root / "bus/pci/devices" / id, ec);
    if (ec) continue;
    if (auto path = parse_pci_path(resolved.string())) gpus_.push_back({g.index, std::move(*path)});
  }
}

std::vector<unsigned> PciLocality::near_gpus(std::string_view canonical_path) const {
  std::vector<unsigned> out;
  const auto nic = parse_pci_path(canonical_path);
  if (!nic) return out;
  for (const auto& g : gpus_) {
    if (share_pcie_switch(*nic, g.path)) out.push_back(g.index);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpuscope::fabric
