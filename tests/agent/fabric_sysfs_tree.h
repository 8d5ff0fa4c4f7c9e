// A fake sysfs tree for the fabric tests, written into a scratch directory with the layout of a real
// host's /sys (Documentation/ABI/stable/sysfs-class-infiniband, Documentation/ABI/testing/sysfs-class-net,
// and what an mlx5 / EFA host shows): devices/pci*/… with the PCIe bridges as directories,
// class/infiniband/DEV and class/net/IFACE as relative symlinks into them, DEV/device and IFACE/device
// as symlinks to the PCI function, bus/pci/devices/<bus id> as symlinks to the GPUs' functions.
//
// The standard tree (standard_host) has, on the demo scenario's GPU bus ids (00000000:18:00.0, 2a, 3a,
// 5d, 9a for GPUs 0-4):
//   pci0000:00 ─ 00:01.0 ─ 01:00.0 (switch) ┬ 02:00.0 ─ 03:00.0  mlx5_0, InfiniBand NDR, port 1
//                                           ├ 02:01.0 ─ 18:00.0  GPU 0
//                                           └ 02:02.0 ─ 2a:00.0  GPU 1
//              ─ 00:02.0 ─ 30:00.0 (switch) ┬ 31:00.0 ─ 32:00.0  mlx5_1, RoCE (Ethernet) 200G, port 1
//                                           └ 31:01.0 ─ 3a:00.0  GPU 2
//              ─ 00:03.0 ─ 5d:00.0                               GPU 3 (no NIC near)
//   pci0000:80 ─ 80:01.0 ─ 81:00.0 (switch) ┬ 82:00.0 ─ 83:00.0  rdmap131s0, AWS EFA (hw_counters only)
//                                           └ 82:01.0 ─ 9a:00.0  GPU 4
//              ─ 80:02.0 ─ 90:00.0                               eth2, a physical Ethernet NIC
//   virtual: lo, veth1a2b, docker0 (no device link), ib0 (IPoIB, type 32, skipped)
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <random>
#include <system_error>

namespace gpuscope::fabric_test {

// A scratch directory under the system's temporary one, removed with everything in it.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("gpuscope-fabric-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

class FakeSysfs {
 public:
  explicit FakeSysfs(std::filesystem::path root) : root_(std::move(root)) { std::filesystem::create_directories(root_); }
  const std::filesystem::path& root() const { return root_; }

  void write(const std::filesystem::path& rel, const std::string& text) const {
    const auto p = root_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text << '\n';
  }
  // A relative symlink at `rel` pointing at `target_rel` (both below the root), as sysfs makes them.
  void link(const std::filesystem::path& rel, const std::filesystem::path& target_rel) const {
    const auto at = root_ / rel;
    std::filesystem::create_directories(at.parent_path());
    std::error_code ec;
    std::filesystem::remove(at, ec);
    std::filesystem::create_directory_symlink((root_ / target_rel).lexically_relative(at.parent_path()), at);
  }

  void add_gpu(const std::string& pci_path) const {
    std::filesystem::create_directories(root_ / "devices" / pci_path);
    const std::string bus = std::filesystem::path(pci_path).filename().string();
    link("bus/pci/devices/" + bus, "devices/" + pci_path);
  }

  // An RDMA device with one port: class/infiniband/DEV → devices/PCI/infiniband/DEV.
  void add_rdma(const std::string& dev, const std::string& pci_path, const std::string& link_layer,
                const std::string& rate, const std::string& node_guid) const {
    const std::string dir = "devices/" + pci_path + "/infiniband/" + dev;
    write(dir + "/node_guid", node_guid);
    link(dir + "/device", "devices/" + pci_path);
    write(dir + "/ports/1/state", "4: ACTIVE");
    write(dir + "/ports/1/phys_state", "5: LinkUp");
    write(dir + "/ports/1/rate", rate);
    write(dir + "/ports/1/link_layer", link_layer);
    write(dir + "/ports/1/lid", "0x12");
    link("class/infiniband/" + dev, dir);
  }
  void set_rdma(const std::string& dev, const std::string& file, const std::string& value) const {
    write("class/infiniband/" + dev + "/ports/1/" + file, value);
  }
  void set_rdma(const std::string& dev, const std::string& file, std::uint64_t value) const {
    set_rdma(dev, file, std::to_string(value));
  }
  void remove_rdma(const std::string& dev) const {
    std::error_code ec;
    std::filesystem::remove(root_ / "class/infiniband" / dev, ec);
  }

  // A network interface: class/net/IFACE → devices/PCI/net/IFACE (or devices/virtual/net/IFACE).
  void add_net(const std::string& iface, const std::string& pci_path, int speed_mbps, const std::string& type = "1") const {
    const std::string dir = pci_path.empty() ? "devices/virtual/net/" + iface : "devices/" + pci_path + "/net/" + iface;
    write(dir + "/operstate", "up");
    write(dir + "/speed", std::to_string(speed_mbps));
    write(dir + "/type", type);
    write(dir + "/address", "0c:42:a1:00:00:01");
    write(dir + "/statistics/rx_bytes", "1000");
    write(dir + "/statistics/tx_bytes", "2000");
    if (!pci_path.empty()) link(dir + "/device", "devices/" + pci_path);
    link("class/net/" + iface, dir);
  }
  void set_net(const std::string& iface, const std::string& file, std::uint64_t value) const {
    write("class/net/" + iface + "/" + file, std::to_string(value));
  }

  // The standard host above, with moving counters at their first values.
  void standard_host() const {
    add_gpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:18:00.0");
    add_gpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:2a:00.0");
    add_gpu("pci0000:00/0000:00:02.0/0000:30:00.0/0000:31:01.0/0000:3a:00.0");
    add_gpu("pci0000:00/0000:00:03.0/0000:5d:00.0");
    add_gpu("pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0/0000:9a:00.0");

    add_rdma("mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", "InfiniBand",
             "400 Gb/sec (4X NDR)", "0c42:a103:0075:2f4e");
    set_rdma("mlx5_0", "gids/0", "fe80:0000:0000:0000:0c42:a103:0075:2f4f");
    const std::map<std::string, std::uint64_t> ib{
        {"counters/port_xmit_data", 1000},   {"counters/port_rcv_data", 2000},
        {"counters/port_xmit_packets", 10},  {"counters/port_rcv_packets", 20},
        {"counters/symbol_error", 0},        {"counters/link_error_recovery", 0},
        {"counters/link_downed", 1},         {"counters/port_rcv_errors", 0},
        {"counters/port_rcv_remote_physical_errors", 0}, {"counters/port_xmit_discards", 0},
        {"counters/local_link_integrity_errors", 0},      {"counters/excessive_buffer_overrun_errors", 0},
        {"counters/port_xmit_wait", 5},      {"counters/VL15_dropped", 0},
        {"hw_counters/out_of_buffer", 0},    {"hw_counters/out_of_sequence", 0},
        {"hw_counters/local_ack_timeout_err", 0}, {"hw_counters/lifespan", 10}};
    for (const auto& [f, v] : ib) set_rdma("mlx5_0", f, v);

    add_rdma("mlx5_1", "pci0000:00/0000:00:02.0/0000:30:00.0/0000:31:00.0/0000:32:00.0", "Ethernet",
             "200 Gb/sec (4X HDR)", "0c42:a103:0075:3000");
    set_rdma("mlx5_1", "gids/0", "fe80:0000:0000:0000:0e42:a1ff:fe75:3000");
    const std::map<std::string, std::uint64_t> roce{
        {"counters/port_xmit_data", 500},   {"counters/port_rcv_data", 600},
        {"counters/port_xmit_packets", 5},  {"counters/port_rcv_packets", 6},
        {"counters/link_downed", 0},        {"counters/port_xmit_discards", 0},
        {"hw_counters/np_cnp_sent", 3},     {"hw_counters/rp_cnp_handled", 4},
        {"hw_counters/np_ecn_marked_roce_packets", 7}, {"hw_counters/out_of_buffer", 0}};
    for (const auto& [f, v] : roce) set_rdma("mlx5_1", f, v);

    // EFA: no counters/ (no PMA), bytes and drops in hw_counters (efa_verbs.c's port stats), rate as ib_core
    // writes it, link layer unspecified.
    add_rdma("rdmap131s0", "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0", "Unspecified",
             "100 Gb/sec (4X EDR)", "0000:0000:0000:0000");
    const std::map<std::string, std::uint64_t> efa{
        {"hw_counters/tx_bytes", 3000}, {"hw_counters/rx_bytes", 4000}, {"hw_counters/tx_pkts", 30},
        {"hw_counters/rx_pkts", 40},    {"hw_counters/rx_drops", 0},    {"hw_counters/send_bytes", 3000},
        {"hw_counters/rdma_read_bytes", 100}, {"hw_counters/rdma_read_wr_err", 0},
        {"hw_counters/retrans_pkts", 0}, {"hw_counters/lifespan", 12}};
    for (const auto& [f, v] : efa) set_rdma("rdmap131s0", f, v);

    add_net("eth2", "pci0000:80/0000:80:02.0/0000:90:00.0", 100000);
    set_net("eth2", "statistics/rx_dropped", 0);
    set_net("eth2", "statistics/rx_errors", 0);
    set_net("eth2", "carrier_down_count", 2);
    add_net("lo", "", -1);
    add_net("veth1a2b", "", 10000);
    add_net("docker0", "", -1);
    add_net("ib0", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", 400000, "32");
  }

 private:
  std::filesystem::path root_;
};

}  // namespace gpuscope::fabric_test
