// The scenario's fabric as a sysfs tree: under a temporary directory, the PCIe tree of the simulated
// GPUs and NICs (devices/pciDDDD:00/<root port>/<switch up>/<switch down>/<function>, bus/pci/devices
// links) and each RDMA port's files (class/infiniband/DEV/ports/N: state, rate, link_layer, gids/0,
// counters/, hw_counters/) laid out as the mlx5 driver writes them. Its counter files are rewritten for
// a scenario time on request, so the agent's fabric collector reads the simulated node through the same
// code, from the same layout, as a real one (src/fabric/sysfs_ports.cc).
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "sim/identity.h"
#include "sim/scenario.h"

namespace gpuscope::sim {

// A link down keeps the port out of ACTIVE this long (the PHY retrains, the subnet manager brings the
// port back): long enough for a reading to see it now and then, as on a real flap.
inline constexpr double kSimLinkDownSeconds = 5;

// The counters of one port at scenario time t (raw, as its sysfs files read: data in 4-octet words,
// the PMA error counters saturated at their width).
struct SimPortCounters {
  bool up = true;
  std::uint64_t xmit_data = 0, rcv_data = 0, xmit_packets = 0, rcv_packets = 0;
  std::uint64_t symbol_error = 0, link_error_recovery = 0, rcv_errors = 0, xmit_discards = 0, link_downed = 0;
  std::uint64_t out_of_buffer = 0;
};
SimPortCounters port_counters_at(const FabricPortSpec& port, double t);

class SysfsTree {
 public:
  // Lays the tree out under a new directory in $TMPDIR (else /dev/shm, else /tmp); `gpus` are the simulated GPUs'
  // identities (their PCI bus ids). A one-line error when the directory cannot be made.
  static std::expected<std::unique_ptr<SysfsTree>, std::string> create(const Scenario& scenario,
                                                                      const std::vector<GpuIdentity>& gpus);
  ~SysfsTree();  // removes the directory
  SysfsTree(const SysfsTree&) = delete;
  SysfsTree& operator=(const SysfsTree&) = delete;

  const std::string& root() const { return root_; }
  // Rewrites every port's state and counters for scenario time `t` (the files whose value changed, in
  // place: call it from the thread that then reads the tree). A one-line error when a file cannot be
  // written.
  std::expected<void, std::string> write_at(double t);

 private:
  struct Port {
    const FabricPortSpec* spec;
    std::string dir;  // .../class/infiniband/DEV/ports/N, through the device's canonical directory
    std::vector<std::string> written;  // each file's text as last written
  };
  SysfsTree(std::string root, const FabricSpec& fabric) : root_(std::move(root)), fabric_(fabric) {}
  std::string root_;
  const FabricSpec& fabric_;
  std::vector<Port> ports_;
};

}  // namespace gpuscope::sim
