// Reads a node's fabric ports from sysfs: each RDMA port (/sys/class/infiniband/DEV/ports/N: InfiniBand,
// RoCE, AWS EFA) and each physical network interface (/sys/class/net/IFACE) as one PortReading of its
// link state, rate, identity, PCI device and raw counters. Everything is relative to a sysfs root the
// reader is given (/sys on a host; a fake tree in the tests), and nothing here keeps state between reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuscope::fabric {

// Where a port was found: an RDMA device's port, or a network interface.
enum class PortSource { kRdma, kNet };
std::string_view source_name(PortSource source);  // "rdma", "net"

struct PortReading {
  PortSource source = PortSource::kRdma;
  std::string device;      // mlx5_0, rdmap16s27 (EFA), eth2
  std::string port;        // "1"; empty for a network interface
  std::string link_layer;  // InfiniBand, Ethernet (RoCE and network interfaces), Unspecified (EFA)
  std::string guid;        // the port GUID (InfiniBand), else the node GUID; empty for a network interface
  std::string state;       // ACTIVE, DOWN, INIT, ... (RDMA) or the operstate (up, down, ...)
  std::string phys_state;  // LinkUp, Disabled, Polling, ... (RDMA); empty for a network interface
  bool up = false;         // RDMA: state 4 (ACTIVE); network interface: operstate up
  std::optional<double> rate_bytes_per_second;  // absent where sysfs does not say (speed -1)
  std::string rate;        // as sysfs says it: "400 Gb/sec (4X NDR)", "100000 Mb/s"
  // The PCI function the port belongs to, as its canonical path below the root
  // ("devices/pci0000:00/0000:00:01.0/.../0000:05:00.0"); empty when it has none.
  std::string pci_path;
  std::string pci_bus_id;  // the function's "0000:05:00.0"; empty when none
  // Filled by whoever knows the GPUs (fabric::PciLocality): indices of the GPUs behind the same PCIe switch.
  std::vector<unsigned> near_gpus;
  // Raw counter values by file (see counter_catalog.h), sorted by file.
  std::vector<std::pair<std::string, std::uint64_t>> counters;

  // "rdma:mlx5_0/1", "net:eth2": what identifies the port from one reading to the next.
  std::string key() const;
};

struct SysfsScan {
  std::vector<PortReading> ports;  // sorted by key
  // Files that exist but could not be read or parsed (one line each); a missing file is not a problem.
  std::vector<std::string> problems;
};

// Network interfaces that are not fabric: loopback and virtual interfaces have no `device` link
// (veth, bridges, bonds, tunnels, ifb); container and VM plumbing is also skipped by name; SR-IOV
// virtual functions (their PCI device has a `physfn` link) belong to the guests they are handed to; and
// IPoIB interfaces (type 32, ARPHRD_INFINIBAND) are the same port the RDMA side already counts.
bool is_skipped_interface_name(std::string_view name);

class SysfsPortReader {
 public:
  // `root`: the sysfs mount point (/sys).
  explicit SysfsPortReader(std::filesystem::path root) : root_(std::move(root)) {}
  SysfsScan read() const;
  const std::filesystem::path& root() const { return root_; }

 private:
  void read_rdma(SysfsScan& scan) const;
  void read_net(SysfsScan& scan) const;
  std::filesystem::path root_;
};

// "400 Gb/sec (4X NDR)" or "2.5 Gb/sec (1X SDR)" → bytes per second; nullopt when unreadable.
std::optional<double> parse_ib_rate(std::string_view text);
// "4: ACTIVE" → {4, "ACTIVE"}; nullopt when not in that form.
std::optional<std::pair<int, std::string>> parse_numbered_state(std::string_view text);

}  // namespace gpuscope::fabric
