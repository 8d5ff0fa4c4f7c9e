#include "sim/sysfs_tree.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "sim/noise.h"

namespace gpuscope::sim {
namespace {

namespace fs = std::filesystem;

// The widths at which the InfiniBand PMA's PortCounters saturate (IB spec §16.1.3.5; the kernel's
// sysfs-class-infiniband): they stop at all ones rather than wrap, until cleared (perfquery -R).
constexpr std::uint64_t kSymbolErrorMax = 0xFFFF;
constexpr std::uint64_t kLinkErrorRecoveryMax = 0xFF;
constexpr std::uint64_t kLinkDownedMax = 0xFF;
constexpr std::uint64_t kPortRcvErrorsMax = 0xFFFF;
constexpr std::uint64_t kXmitDiscardsMax = 0xFFFF;
// Bytes per packet of the simulated traffic: RDMA writes of NCCL's chunks at a 4 KiB MTU.
constexpr double kSimPacketBytes = 4096;
// PortXmitData/PortRcvData count 4-octet words.
constexpr double kIbWordBytes = 4;

// ∫ rate over [0, t] of a piecewise-constant rate (each phase's from its at_s to the next one's).
template <class Rate>
double integral(const FabricPortSpec& port, double t, Rate rate) {
  double total = 0;
  for (std::size_t i = 0; i < port.phases.size(); ++i) {
    const double from = port.phases[i].at_s;
    const double to = i + 1 < port.phases.size() ? port.phases[i + 1].at_s : t;
    if (t <= from) break;
    total += rate(port.phases[i]) * (std::min(to, t) - from);
  }
  return total;
}

std::uint64_t count(double v, std::uint64_t max = UINT64_MAX) {
  const double floored = std::floor(std::max(0.0, v));
  return floored >= static_cast<double>(max) ? max : static_cast<std::uint64_t>(floored);
}

std::string pci_name(unsigned domain, unsigned bus, unsigned device) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", domain & 0xFFFFU, bus & 0xFFU, device & 0x1FU);
  return buf;
}

// "pci0000:00": a PCI domain's host bridge.
std::string fmt_host_bridge(unsigned domain) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "pci%04x:00", domain & 0xFFFFU);
  return buf;
}

std::string fmt_hex4(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04x", v & 0xFFFFU);
  return buf;
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// Rewrites `path` in place. Only the tree's reader itself asks for a rewrite, right before it reads (the
// fabric collector's refresh), so nothing reads a file while it is half written; a temporary file and a
// rename per counter made a 6-hour backtest 40 times slower on ext4.
bool rewrite_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const std::string line = text + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  return ::close(fd) == 0 && written;
}

// A GUID as sysfs writes it: "0c42:a103:00f3:1a2b".
std::string guid_text(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%04x:%04x:%04x:%04x", static_cast<unsigned>((v >> 48U) & 0xFFFFU),
                static_cast<unsigned>((v >> 32U) & 0xFFFFU), static_cast<unsigned>((v >> 16U) & 0xFFFFU),
                static_cast<unsigned>(v & 0xFFFFU));
  return buf;
}

}  // namespace

SimPortCounters port_counters_at(const FabricPortSpec& port, double t) {
  SimPortCounters c;
  t = std::max(0.0, t);
  const double sent = integral(port, t, [](const FabricPhase& p) { return p.transmit_bytes; });
  const double received = integral(port, t, [](const FabricPhase& p) { return p.receive_bytes; });
  c.xmit_data = count(sent / kIbWordBytes);
  c.rcv_data = count(received / kIbWordBytes);
  c.xmit_packets = count(sent / kSimPacketBytes);
  c.rcv_packets = count(received / kSimPacketBytes);
  c.symbol_error = count(integral(port, t, [](const FabricPhase& p) { return p.symbol_errors; }), kSymbolErrorMax);
  c.link_error_recovery =
      count(integral(port, t, [](const FabricPhase& p) { return p.link_error_recovery; }), kLinkErrorRecoveryMax);
  c.rcv_errors = count(integral(port, t, [](const FabricPhase& p) { return p.receive_errors; }), kPortRcvErrorsMax);
  c.xmit_discards =
      count(integral(port, t, [](const FabricPhase& p) { return p.transmit_discards; }), kXmitDiscardsMax);
  c.out_of_buffer = count(integral(port, t, [](const FabricPhase& p) { return p.receive_drops; }));
  std::uint64_t downs = 0;
  for (double at : port.link_downs_s) {
    if (at > t) break;
    ++downs;
    if (t < at + kSimLinkDownSeconds) c.up = false;
  }
  c.link_downed = std::min(downs, kLinkDownedMax);
  return c;
}

std::expected<std::unique_ptr<SysfsTree>, std::string> SysfsTree::create(const Scenario& scenario,
                                                                        const std::vector<GpuIdentity>& gpus) {
  const FabricSpec& fabric = *scenario.fabric;
  // $TMPDIR, else /dev/shm where it is writable: the tree's files are rewritten at every reading, and
  // on a disk's file system (ext4 on this VM) a 6-hour backtest took 9-17 s instead of 4 s in memory.
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string base = tmpdir != nullptr && *tmpdir != '\0'      ? tmpdir
                           : ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm"
                                                                     : "/tmp";
  std::string pattern = base + "/gpuscope-sim-sysfs-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return std::unexpected("cannot make the simulated sysfs tree in " + pattern);
  std::unique_ptr<SysfsTree> tree(new SysfsTree(pattern, fabric));
  try {
    const fs::path root(tree->root_);
    // Bus numbers in use (the GPUs'); bridges and NICs take free ones, per PCI domain.
    std::map<unsigned, std::vector<bool>> used;
    for (const auto& g : gpus) {
      auto& u = used[g.domain];
      u.resize(256);
      u[g.bus] = true;
    }
    const auto take_bus = [&](unsigned domain) {
      auto& u = used[domain];
      u.resize(256);
      for (unsigned b = 1; b < 256; ++b) {
        if (!u[b]) {
          u[b] = true;
          return b;
        }
      }
      throw std::runtime_error("no free PCI bus number");
    };
    std::map<unsigned, unsigned> root_ports;  // per domain, the root ports made
    const auto new_root_port = [&](unsigned domain) {
      const unsigned n = ++root_ports[domain];
      return fs::path("devices") / fmt_host_bridge(domain) / pci_name(domain, 0, n);
    };
    // One switch per distinct GPU set: an upstream bridge under a root port, a downstream bridge per
    // device below it (nvidia-smi topo -m reads PIX between them).
    std::map<std::vector<unsigned>, std::pair<fs::path, unsigned>> switches;  // gpus → (upstream, downstream buses)
    std::map<std::string, fs::path> nic_dirs;                                // device → its function's directory
    std::vector<bool> gpu_placed(gpus.size());
    const auto link_bus_device = [&](const fs::path& function_dir) {
      const fs::path link = root / "bus/pci/devices" / function_dir.filename();
      fs::create_directories(link.parent_path());
      fs::create_symlink(root / function_dir, link);
    };
    for (const FabricPortSpec& p : fabric.ports) {
      const unsigned domain = p.gpus.empty() ? 0 : gpus.at(p.gpus.front()).domain;
      auto sw = switches.find(p.gpus);
      if (sw == switches.end()) {
        const fs::path up = new_root_port(domain) / pci_name(domain, take_bus(domain), 0);
        sw = switches.emplace(p.gpus, std::pair{up, 0U}).first;
        for (unsigned g : p.gpus) {
          const fs::path down = sw->second.first / pci_name(domain, take_bus(domain), sw->second.second++);
          const fs::path fn = down / pci_name(gpus[g].domain, gpus[g].bus, gpus[g].device);
          fs::create_directories(root / fn);
          write_file(root / fn / "vendor", "0x10de");
          link_bus_device(fn);
          gpu_placed[g] = true;
        }
      }
      if (!nic_dirs.contains(p.device)) {
        const fs::path down = sw->second.first / pci_name(domain, take_bus(domain), sw->second.second++);
        const fs::path fn = down / pci_name(domain, take_bus(domain), 0);
        fs::create_directories(root / fn);
        write_file(root / fn / "vendor", "0x15b3");  // Mellanox
        link_bus_device(fn);
        nic_dirs[p.device] = fn;
        // DEV's own directory sits below its PCI function; class/infiniband/DEV links to it, and
        // DEV/device back to the function, as the kernel lays them out.
        const fs::path dev = fn / "infiniband" / p.device;
        fs::create_directories(root / dev);
        fs::create_directories(root / "class/infiniband");
        fs::create_symlink(root / dev, root / "class/infiniband" / p.device);
        fs::create_symlink(root / fn, root / dev / "device");
        const Noise noise(scenario.seed, static_cast<unsigned>(nic_dirs.size()));
        const std::uint64_t guid = 0x0c42a10300000000ULL | (noise.bits(Signal::kIdentity, 7) & 0xFFFFFFFFULL);
        write_file(root / dev / "node_guid", guid_text(guid));
        write_file(root / dev / "node_type", "1: CA");
      }
      const fs::path dev_dir = root / nic_dirs[p.device] / "infiniband" / p.device;
      const fs::path port_dir = dev_dir / "ports" / std::to_string(p.port);
      fs::create_directories(port_dir / "counters");
      fs::create_directories(port_dir / "hw_counters");
      fs::create_directories(port_dir / "gids");
      write_file(port_dir / "link_layer", fabric.link_layer);
      write_file(port_dir / "rate", fabric.rate);
      std::string node_guid;
      std::ifstream(dev_dir / "node_guid") >> node_guid;
      // InfiniBand: GID 0 is the link-local prefix and the port GUID (the node GUID plus the port number).
      write_file(port_dir / "gids/0", "fe80:0000:0000:0000:" + node_guid.substr(0, 15) +
                                          fmt_hex4(static_cast<unsigned>(std::stoul(node_guid.substr(15), nullptr, 16) + p.port)));
      tree->ports_.push_back({&p, port_dir.string(), {}});
    }
    // GPUs behind no NIC's switch hang off a root port of their own (nvidia-smi topo's PHB to the NICs).
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      if (gpu_placed[g]) continue;
      const fs::path fn = new_root_port(gpus[g].domain) / pci_name(gpus[g].domain, gpus[g].bus, gpus[g].device);
      fs::create_directories(root / fn);
      write_file(root / fn / "vendor", "0x10de");
      link_bus_device(fn);
    }
  } catch (const std::exception& e) {
    return std::unexpected(std::string("simulated sysfs tree in ") + tree->root_ + ": " + e.what());
  }
  if (auto written = tree->write_at(0); !written) return std::unexpected(written.error());
  return tree;
}

SysfsTree::~SysfsTree() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::expected<void, std::string> SysfsTree::write_at(double t) {
  for (Port& p : ports_) {
    const SimPortCounters c = port_counters_at(*p.spec, t);
    const std::pair<const char*, std::string> files[] = {
        {"state", c.up ? "4: ACTIVE" : "1: DOWN"},
        {"phys_state", c.up ? "5: LinkUp" : "2: Polling"},
        {"counters/port_xmit_data", std::to_string(c.xmit_data)},
        {"counters/port_rcv_data", std::to_string(c.rcv_data)},
        {"counters/port_xmit_packets", std::to_string(c.xmit_packets)},
        {"counters/port_rcv_packets", std::to_string(c.rcv_packets)},
        {"counters/symbol_error", std::to_string(c.symbol_error)},
        {"counters/link_error_recovery", std::to_string(c.link_error_recovery)},
        {"counters/port_rcv_errors", std::to_string(c.rcv_errors)},
        {"counters/port_xmit_discards", std::to_string(c.xmit_discards)},
        {"counters/link_downed", std::to_string(c.link_downed)},
        {"counters/port_rcv_remote_physical_errors", "0"},
        {"counters/local_link_integrity_errors", "0"},
        {"counters/excessive_buffer_overrun_errors", "0"},
        {"hw_counters/out_of_buffer", std::to_string(c.out_of_buffer)},
        {"hw_counters/out_of_sequence", "0"},
        {"hw_counters/local_ack_timeout_err", "0"},
    };
    p.written.resize(std::size(files));
    for (std::size_t i = 0; i < std::size(files); ++i) {
      const auto& [file, text] = files[i];
      if (p.written[i] == text) continue;  // most counters do not move between readings
      if (!rewrite_file(p.dir + "/" + file, text)) {
        return std::unexpected("cannot write " + p.dir + "/" + file + " of the simulated sysfs tree");
      }
      p.written[i] = text;
    }
  }
  return {};
}

}  // namespace gpuscope::sim
