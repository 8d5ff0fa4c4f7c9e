// The fabric collector's cost per reading on an 8-rail node (8 mlx5 InfiniBand ports, each with the
// PMA counters/ and mlx5 hw_counters/ a ConnectX-7 shows, 8 GPUs, 2 per PCIe switch, plus lo and a veth
// to skip), in a fake sysfs tree on the temp filesystem: the sysfs read alone, a whole reading (read,
// PCIe locality, counters over wraps, publish), and writing its families into a scrape. On a real host
// the reads of counters/ go to the adapter's firmware (a PMA query each), which this does not measure.
#include <benchmark/benchmark.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "../tests/agent/fabric_sysfs_tree.h"
#include "agent/fabric_collector.h"
#include "fabric/sysfs_ports.h"

namespace {

using namespace gpuscope;

struct EightRailNode {
  fabric_test::ScratchDir dir;
  fabric_test::FakeSysfs sysfs{dir.path / "sys"};
  std::vector<model::GpuInfo> gpus;

  EightRailNode() {
    const char* counters[] = {"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
                              "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets",
                              "multicast_rcv_packets", "symbol_error", "link_error_recovery", "link_downed",
                              "port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
                              "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
                              "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped",
                              "port_xmit_wait"};
    const char* hw[] = {"out_of_buffer", "out_of_sequence", "duplicate_request", "rnr_nak_retry_err",
                        "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "resp_local_length_error",
                        "resp_cqe_error", "req_cqe_error", "req_remote_invalid_request", "req_remote_access_errors",
                        "resp_remote_access_errors", "resp_cqe_flush_error", "req_cqe_flush_error",
                        "rx_write_requests", "rx_read_requests", "rx_atomic_requests", "lifespan"};
    for (unsigned s = 0; s < 4; ++s) {
      const std::string root_port = fmt::format("pci0000:{:02x}/0000:{:02x}:01.0/0000:{:02x}:00.0", s * 0x40,
                                                s * 0x40, s * 0x40 + 1);
      for (unsigned k = 0; k < 2; ++k) {
        const unsigned i = s * 2 + k;
        const unsigned down = s * 0x40 + 2;
        sysfs.add_gpu(fmt::format("{}/0000:{:02x}:{:02x}.0/0000:{:02x}:00.0", root_port, down, k, s * 0x40 + 0x10 + k));
        const std::string dev = fmt::format("mlx5_{}", i);
        sysfs.add_rdma(dev, fmt::format("{}/0000:{:02x}:{:02x}.0/0000:{:02x}:00.0", root_port, down, k + 2, s * 0x40 + 0x20 + k),
                       "InfiniBand", "400 Gb/sec (4X NDR)", "0c42:a103:0075:2f4e");
        sysfs.set_rdma(dev, "gids/0", "fe80:0000:0000:0000:0c42:a103:0075:2f4f");
        for (const char* c : counters) sysfs.set_rdma(dev, std::string("counters/") + c, 123456789);
        for (const char* c : hw) sysfs.set_rdma(dev, std::string("hw_counters/") + c, 42);
        model::GpuInfo g;
        g.index = i;
        g.pci_bus_id = fmt::format("00000000:{:02X}:00.0", s * 0x40 + 0x10 + k);
        gpus.push_back(g);
      }
    }
    sysfs.add_net("lo", "", -1);
    sysfs.add_net("veth1a2b", "", 10000);
  }
};

void BM_FabricSysfsRead(benchmark::State& state) {
  EightRailNode node;
  const fabric::SysfsPortReader reader(node.sysfs.root());
  std::size_t ports = 0;
  for (auto _ : state) {
    auto scan = reader.read();
    ports = scan.ports.size();
    benchmark::DoNotOptimize(scan);
  }
  state.counters["ports"] = static_cast<double>(ports);
}
BENCHMARK(BM_FabricSysfsRead)->Unit(benchmark::kMicrosecond);

void BM_FabricCollect(benchmark::State& state) {
  EightRailNode node;
  log::Logger log(std::cerr, log::Level::kError);
  agent::FabricCollector collector({node.sysfs.root(), agent::kDefaultFabricInterval, "Hostname", "node"}, node.gpus,
                                   model::system_clock(), log);
  for (auto _ : state) collector.collect();
  state.counters["ports"] = static_cast<double>(collector.latest()->ports.size());
}
BENCHMARK(BM_FabricCollect)->Unit(benchmark::kMicrosecond);

void BM_FabricExposition(benchmark::State& state) {
  EightRailNode node;
  log::Logger log(std::cerr, log::Level::kError);
  agent::FabricCollector collector({node.sysfs.root(), agent::kDefaultFabricInterval, "Hostname", "node"}, node.gpus,
                                   model::system_clock(), log);
  collector.collect();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    exporter::ExpositionWriter w(exporter::ExpositionFormat::kPrometheusText, out);
    collector.write_metrics(w);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_FabricExposition)->Unit(benchmark::kMicrosecond);

}  // namespace
