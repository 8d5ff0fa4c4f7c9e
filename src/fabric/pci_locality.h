// Which GPUs sit near a NIC on the PCIe tree, found in sysfs alone (no NVML topology call): a device's
// canonical sysfs path is the chain of bridges above it (devices/pci0000:00/<root port>/<switch
// upstream>/<switch downstream>/<function>), so a GPU and a NIC whose chains share a bridge below the
// root port hang off the same PCIe switch: nvidia-smi topo -m's PIX or PXB, the pairs GPUDirect RDMA
// is fast between. Paths are relative to the sysfs root the reader was given, so a fake tree drives it.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpu_info.h"

namespace gpuscope::fabric {

// A PCI function's place in the tree: its host bridge ("pci0000:00") and the functions from the root
// port down to itself ("0000:00:01.0", ..., "0000:05:00.0").
struct PciPath {
  std::string host_bridge;
  std::vector<std::string> chain;
  const std::string& function() const { return chain.back(); }
};

// Whether `text` is a PCI address as sysfs names functions: "0000:05:00.0" (lowercase hex).
bool is_pci_function_name(std::string_view text);
// A canonical sysfs path ("…/devices/pci0000:00/0000:00:01.0/…/0000:05:00.0[/virtio2/…]") cut at its
// last PCI function; nullopt when it has no host bridge or function (a virtual device).
std::optional<PciPath> parse_pci_path(std::string_view canonical_path);
// NVML's bus id ("00000000:18:00.0", upper-case hex, 8-digit domain) as sysfs names the function
// ("0000:18:00.0"); empty when it is not a bus id.
std::string sysfs_bus_id(std::string_view nvml_bus_id);
// Whether two functions share a bridge below the root port (the same PCIe switch, at any depth), or are
// functions of one device. Functions under different root ports or host bridges are not near.
bool share_pcie_switch(const PciPath& a, const PciPath& b);

class PciLocality {
 public:
  // Resolves each GPU's /sys/bus/pci/devices/<bus id> below `sysfs_root` once; a GPU not found there
  // (a simulated one on a real host) is near nothing.
  PciLocality(const std::filesystem::path& sysfs_root, std::span<const model::GpuInfo> gpus);
  // The indices (ascending) of the GPUs near the function at `canonical_path`.
  std::vector<unsigned> near_gpus(std::string_view canonical_path) const;
  std::size_t gpus_found() const { return gpus_.size(); }

 private:
  struct Gpu {
    unsigned index;
    PciPath path;
  };
  std::vector<Gpu> gpus_;
};

}  // namespace gpuscope::fabric
