// The fabric collector against fake sysfs trees (tests/agent/fabric_sysfs_tree.h: an mlx5 InfiniBand
// port, an mlx5 RoCE port, an AWS EFA device and an Ethernet NIC, plus interfaces to skip): what is read,
// in which units, counters over wraps, resets and vanished ports, which GPUs are near which NIC, and the
// exposition.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/fabric_collector.h"
#include "agent/fabric_sysfs_tree.h"
#include "cli/serve_verb.h"
#include "export/exposition_writer.h"
#include "fabric/fabric_counters.h"
#include "fabric/fabric_metrics.h"
#include "fabric/pci_locality.h"
#include "fabric/sysfs_ports.h"
#include "model/clock.h"

namespace gpuscope::agent {
namespace {

namespace fs = std::filesystem;
using fabric_test::FakeSysfs;
using fabric_test::ScratchDir;

// The demo scenario's first five GPUs, as NVML spells their bus ids.
std::vector<model::GpuInfo> demo_gpus() {
  std::vector<model::GpuInfo> gpus;
  const char* buses[] = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
                         "00000000:9A:00.0", "00000000:AB:00.0"};
  for (unsigned i = 0; i < 6; ++i) {
    model::GpuInfo g;
    g.index = i;
    g.pci_bus_id = buses[i];
    gpus.push_back(g);
  }
  return gpus;
}

struct Tree {
  ScratchDir dir;
  FakeSysfs sysfs{dir.path / "sys"};
  Tree() { sysfs.standard_host(); }
};

const fabric::PortReading* find(const fabric::SysfsScan& scan, const std::string& key) {
  for (const auto& p : scan.ports) {
    if (p.key() == key) return &p;
  }
  return nullptr;
}

std::uint64_t raw(const fabric::PortReading& p, const std::string& file) {
  for (const auto& [f, v] : p.counters) {
    if (f == file) return v;
  }
  return ~std::uint64_t{0};
}

std::string exposition(const fabric::FabricState& state, std::string host_label = "Hostname") {
  std::string out;
  exporter::ExpositionWriter w(exporter::ExpositionFormat::kPrometheusText, out);
  fabric::write_fabric_metrics(w, {&state, std::move(host_label), "node1"});
  return out;
}

// The value of the one sample line starting with `prefix` (name and the labels up to where they differ).
std::optional<double> value(const std::string& text, const std::string& name, const std::vector<std::string>& has) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(name + "{")) continue;
    if (std::all_of(has.begin(), has.end(), [&](const std::string& h) { return line.find(h) != std::string::npos; })) {
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return std::nullopt;
}

TEST(FabricSysfs, ReadsInfinibandRoceEfaAndEthernetPortsAndSkipsVirtualAndIpoibInterfaces) {
  Tree t;
  const auto scan = fabric::SysfsPortReader(t.sysfs.root()).read();
  std::vector<std::string> keys;
  for (const auto& p : scan.ports) keys.push_back(p.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"net:eth2", "rdma:mlx5_0/1", "rdma:mlx5_1/1", "rdma:rdmap131s0/1"}));
  EXPECT_TRUE(scan.problems.empty()) << scan.problems.front();

  const auto* ib = find(scan, "rdma:mlx5_0/1");
  ASSERT_NE(ib, nullptr);
  EXPECT_EQ(ib->link_layer, "InfiniBand");
  EXPECT_EQ(ib->state, "ACTIVE");
  EXPECT_EQ(ib->phys_state, "LinkUp");
  EXPECT_TRUE(ib->up);
  EXPECT_EQ(ib->rate, "400 Gb/sec (4X NDR)");
  EXPECT_DOUBLE_EQ(ib->rate_bytes_per_second.value(), 50e9);
  EXPECT_EQ(ib->guid, "0c42:a103:0075:2f4f");  // the port GUID from GID 0, not the node GUID
  EXPECT_EQ(ib->pci_bus_id, "0000:03:00.0");
  EXPECT_EQ(raw(*ib, "counters/port_xmit_data"), 1000U);
  EXPECT_EQ(raw(*ib, "counters/VL15_dropped"), ~std::uint64_t{0}) << "not in the catalog: not read";
  EXPECT_EQ(raw(*ib, "hw_counters/lifespan"), ~std::uint64_t{0}) << "lifespan is a setting, not a counter";

  const auto* roce = find(scan, "rdma:mlx5_1/1");
  ASSERT_NE(roce, nullptr);
  EXPECT_EQ(roce->link_layer, "Ethernet");
  EXPECT_EQ(roce->guid, "0c42:a103:0075:3000");  // RoCE: the node GUID
  EXPECT_EQ(raw(*roce, "hw_counters/np_cnp_sent"), 3U);

  const auto* efa = find(scan, "rdma:rdmap131s0/1");
  ASSERT_NE(efa, nullptr);
  EXPECT_EQ(efa->link_layer, "Unspecified");
  EXPECT_EQ(raw(*efa, "hw_counters/rx_drops"), 0U);
  EXPECT_EQ(raw(*efa, "hw_counters/tx_bytes"), 3000U);

  const auto* eth = find(scan, "net:eth2");
  ASSERT_NE(eth, nullptr);
  EXPECT_EQ(eth->port, "");
  EXPECT_EQ(eth->state, "up");
  EXPECT_DOUBLE_EQ(eth->rate_bytes_per_second.value(), 100000 * 1e6 / 8);
  EXPECT_EQ(raw(*eth, "carrier_down_count"), 2U);
  EXPECT_EQ(raw(*eth, "statistics/rx_bytes"), 1000U);
}

TEST(FabricSysfs, ADownPortAndAnUnreadableCounterAreReportedNotFatal) {
  Tree t;
  t.sysfs.set_rdma("mlx5_1", "state", "1: DOWN");
  t.sysfs.set_rdma("mlx5_1", "phys_state", "3: Disabled");
  t.sysfs.set_rdma("mlx5_1", "hw_counters/out_of_buffer", "N/A");
  const auto scan = fabric::SysfsPortReader(t.sysfs.root()).read();
  const auto* roce = find(scan, "rdma:mlx5_1/1");
  ASSERT_NE(roce, nullptr);
  EXPECT_FALSE(roce->up);
  EXPECT_EQ(roce->state, "DOWN");
  EXPECT_EQ(roce->phys_state, "Disabled");
  ASSERT_EQ(scan.problems.size(), 1U);
  EXPECT_NE(scan.problems[0].find("hw_counters/out_of_buffer"), std::string::npos) << scan.problems[0];
  EXPECT_EQ(raw(*roce, "counters/port_xmit_data"), 500U) << "the other counters still read";
}

TEST(FabricSysfs, ANodeWithoutFabricHasNoPorts) {
  ScratchDir dir;
  FakeSysfs sysfs(dir.path / "sys");
  sysfs.add_net("lo", "", -1);
  sysfs.add_net("veth9", "", 10000);
  EXPECT_TRUE(fabric::SysfsPortReader(sysfs.root()).read().ports.empty());
  EXPECT_TRUE(fabric::SysfsPortReader(dir.path / "missing").read().ports.empty());
}

TEST(FabricSysfs, ParsesRatesAndStatesAsSysfsWritesThem) {
  EXPECT_DOUBLE_EQ(fabric::parse_ib_rate("400 Gb/sec (4X NDR)").value(), 50e9);
  EXPECT_DOUBLE_EQ(fabric::parse_ib_rate("2.5 Gb/sec (1X SDR)").value(), 2.5e9 / 8);
  EXPECT_FALSE(fabric::parse_ib_rate("fast").has_value());
  EXPECT_EQ(fabric::parse_numbered_state("4: ACTIVE")->second, "ACTIVE");
  EXPECT_EQ(fabric::parse_numbered_state("5: LinkUp")->first, 5);
  EXPECT_FALSE(fabric::parse_numbered_state("ACTIVE").has_value());
}

TEST(FabricCounters, ADeltaOverA32BitWrapIsWhatWasCountedAndAResetCountsFromZero) {
  EXPECT_EQ(fabric::counter_delta(100, 150), 50U);
  EXPECT_EQ(fabric::counter_delta(4294967000ULL, 500), 796U);                  // wrapped past 2^32
  EXPECT_EQ(fabric::counter_delta(1000, 10), 10U);                             // reset: counts from 0
  EXPECT_EQ(fabric::counter_delta(std::uint64_t{1} << 40U, 7), 7U);            // a 64-bit counter fell: reset
}

TEST(FabricCounters, TotalsStayMonotonicOverAWrapAVanishedPortAndAReturnWithReset) {
  fabric::FabricCounters counters;
  auto reading = [](std::uint64_t data) {
    fabric::PortReading p;
    p.device = "mlx5_0";
    p.port = "1";
    p.up = true;
    p.counters = {{"counters/port_xmit_data", data}};
    return std::vector<fabric::PortReading>{p};
  };
  counters.update(reading(4294967000ULL));
  EXPECT_EQ(counters.state().ports.at(0).total("counters/port_xmit_data"), 4294967000ULL);
  counters.update(reading(500));  // the legacy 32-bit counter wrapped
  EXPECT_EQ(counters.state().ports.at(0).total("counters/port_xmit_data"), 4294967000ULL + 796);

  counters.update({});  // the device vanished (driver unbound)
  auto gone = counters.state();
  ASSERT_EQ(gone.ports.size(), 1U);
  EXPECT_FALSE(gone.ports[0].present);
  EXPECT_FALSE(gone.ports[0].port.up);
  EXPECT_EQ(gone.ports[0].total("counters/port_xmit_data"), 4294967000ULL + 796) << "held while gone";

  counters.update(reading(40));  // back after a driver reload: its counters restarted
  EXPECT_TRUE(counters.state().ports[0].present);
  EXPECT_EQ(counters.state().ports[0].total("counters/port_xmit_data"), 4294967000ULL + 796 + 40);
  counters.update({});
  counters.update(reading(90));  // back without a reset: only what it counted since
  EXPECT_EQ(counters.state().ports[0].total("counters/port_xmit_data"), 4294967000ULL + 796 + 90);
}

TEST(FabricLocality, GpusBehindTheNicsPcieSwitchAreNearItOthersAreNot) {
  Tree t;
  const auto gpus = demo_gpus();
  const fabric::PciLocality locality(t.sysfs.root(), gpus);
  EXPECT_EQ(locality.gpus_found(), 5U) << "GPU 5 has no function in the fake tree";
  const auto scan = fabric::SysfsPortReader(t.sysfs.root()).read();
  EXPECT_EQ(locality.near_gpus(find(scan, "rdma:mlx5_0/1")->pci_path), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(locality.near_gpus(find(scan, "rdma:mlx5_1/1")->pci_path), (std::vector<unsigned>{2}));
  EXPECT_EQ(locality.near_gpus(find(scan, "rdma:rdmap131s0/1")->pci_path), (std::vector<unsigned>{4}));
  EXPECT_TRUE(locality.near_gpus(find(scan, "net:eth2")->pci_path).empty()) << "alone under its root port";
}

TEST(FabricLocality, PathsAndBusIdsAreReadAsSysfsAndNvmlWriteThem) {
  EXPECT_EQ(fabric::sysfs_bus_id("00000000:9A:00.0"), "0000:9a:00.0");
  EXPECT_EQ(fabric::sysfs_bus_id("garbage"), "");
  const auto p = fabric::parse_pci_path("/sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->host_bridge, "pci0000:00");
  EXPECT_EQ(p->function(), "0000:00:03.0");
  EXPECT_FALSE(fabric::parse_pci_path("/sys/devices/virtual/net/lo").has_value());
  const auto a = *fabric::parse_pci_path("devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0");
  const auto b = *fabric::parse_pci_path("devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.1");
  const auto c = *fabric::parse_pci_path("devices/pci0000:01/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:04:00.0");
  EXPECT_TRUE(fabric::share_pcie_switch(a, b)) << "two functions of one NIC";
  EXPECT_FALSE(fabric::share_pcie_switch(a, c)) << "another host bridge";
}

TEST(FabricMetrics, EveryPortHasItsLabelsAndCountersInBytesWithHelpAndType) {
  Tree t;
  const auto gpus = demo_gpus();
  log::Logger log(std::cerr, log::Level::kError);
  model::VirtualClock clock;
  FabricCollector collector({t.sysfs.root(), kDefaultFabricInterval, "Hostname", "node1"}, gpus, clock, log);
  collector.collect();
  std::string text;
  exporter::ExpositionWriter w(exporter::ExpositionFormat::kPrometheusText, text);
  collector.write_metrics(w);

  EXPECT_NE(text.find("# HELP gpuscope_fabric_transmit_bytes_total "), std::string::npos);
  EXPECT_NE(text.find("# TYPE gpuscope_fabric_transmit_bytes_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE gpuscope_fabric_port_up gauge"), std::string::npos);
  const std::string ib_labels =
      R"(device="mlx5_0",port="1",source="rdma",link_layer="InfiniBand",guid="0c42:a103:0075:2f4f",gpu="0,1",Hostname="node1")";
  EXPECT_NE(text.find("gpuscope_fabric_transmit_bytes_total{" + ib_labels + "} 4000\n"), std::string::npos)
      << "port_xmit_data counts 4-byte words\n" << text;
  EXPECT_EQ(value(text, "gpuscope_fabric_receive_bytes_total", {"mlx5_0"}), 8000);
  EXPECT_EQ(value(text, "gpuscope_fabric_transmit_bytes_total", {"rdmap131s0"}), 3000) << "EFA counts bytes";
  EXPECT_EQ(value(text, "gpuscope_fabric_transmit_bytes_total", {"eth2"}), 2000);
  EXPECT_EQ(value(text, "gpuscope_fabric_port_rate_bytes_per_second", {"mlx5_0"}), 50e9);
  EXPECT_EQ(value(text, "gpuscope_fabric_port_up", {"mlx5_1"}), 1);
  EXPECT_EQ(value(text, "gpuscope_fabric_link_downed_total", {"mlx5_0"}), 1);
  EXPECT_EQ(value(text, "gpuscope_fabric_link_downed_total", {"eth2"}), 2);
  EXPECT_EQ(value(text, "gpuscope_fabric_cnp_total", {"mlx5_1", R"(role="handled")"}), 4);
  EXPECT_EQ(value(text, "gpuscope_fabric_ecn_marked_packets_total", {"mlx5_1"}), 7);
  EXPECT_EQ(value(text, "gpuscope_fabric_discards_total", {"rdmap131s0", R"(direction="receive")"}), 0);
  EXPECT_EQ(value(text, "gpuscope_fabric_errors_total", {"mlx5_0", R"(kind="symbol")"}), 0);
  EXPECT_EQ(value(text, "gpuscope_fabric_transmit_wait_ticks_total", {"mlx5_0"}), 5);
  EXPECT_EQ(value(text, "gpuscope_fabric_port_info", {"eth2", R"(state="up")", R"(pci_bus_id="0000:90:00.0")"}), 1);
  EXPECT_NE(text.find(R"(device="eth2",source="net",link_layer="Ethernet",guid="",gpu="",Hostname="node1")"),
            std::string::npos)
      << "a network interface has no port label and no GPU near it\n" << text;
  EXPECT_EQ(text.find("veth"), std::string::npos);
  EXPECT_EQ(text.find("ib0"), std::string::npos);

  const auto result = collector.collector_result();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->name, "fabric");
  EXPECT_TRUE(result->success);
}

TEST(FabricMetrics, CountersMoveBetweenReadingsAndAVanishedPortIsDownWithItsTotalsHeld) {
  Tree t;
  const auto gpus = demo_gpus();
  log::Logger log(std::cerr, log::Level::kError);
  model::VirtualClock clock;
  FabricCollector collector({t.sysfs.root(), kDefaultFabricInterval, "", ""}, gpus, clock, log);
  collector.collect();
  t.sysfs.set_rdma("mlx5_0", "counters/port_xmit_data", 1250);
  t.sysfs.set_rdma("mlx5_0", "counters/symbol_error", 3);
  t.sysfs.set_rdma("rdmap131s0", "hw_counters/rx_drops", 17);
  t.sysfs.remove_rdma("mlx5_1");
  collector.collect();
  auto text = exposition(*collector.latest(), "");
  EXPECT_EQ(value(text, "gpuscope_fabric_transmit_bytes_total", {"mlx5_0"}), 5000);
  EXPECT_EQ(value(text, "gpuscope_fabric_errors_total", {"mlx5_0", R"(kind="symbol")"}), 3);
  EXPECT_EQ(value(text, "gpuscope_fabric_discards_total", {"rdmap131s0", R"(direction="receive")"}), 17);
  EXPECT_EQ(value(text, "gpuscope_fabric_port_up", {"mlx5_1"}), 0);
  EXPECT_EQ(value(text, "gpuscope_fabric_port_info", {"mlx5_1", R"(state="gone")"}), 1);
  EXPECT_EQ(value(text, "gpuscope_fabric_transmit_bytes_total", {"mlx5_1"}), 2000) << "held while gone";
  EXPECT_FALSE(value(text, "gpuscope_fabric_port_rate_bytes_per_second", {"mlx5_1"}).has_value());
  EXPECT_EQ(text.find("Hostname"), std::string::npos) << "--no-hostname: no host label";

  // Back after a driver reload, its counters from 0 again: the total goes on from where it was.
  t.sysfs.add_rdma("mlx5_1", "pci0000:00/0000:00:02.0/0000:30:00.0/0000:31:00.0/0000:32:00.0", "Ethernet",
                   "200 Gb/sec (4X HDR)", "0c42:a103:0075:3000");
  t.sysfs.set_rdma("mlx5_1", "counters/port_xmit_data", 25);
  collector.collect();
  text = exposition(*collector.latest(), "");
  EXPECT_EQ(value(text, "gpuscope_fabric_transmit_bytes_total", {"mlx5_1"}), 2100);
  EXPECT_EQ(value(text, "gpuscope_fabric_port_up", {"mlx5_1"}), 1);
  EXPECT_EQ(collector.readings(), 3U);
}

TEST(FabricMetrics, NoPortsNoFamiliesAndOneInfoLine) {
  ScratchDir dir;
  FakeSysfs sysfs(dir.path / "sys");
  sysfs.add_net("lo", "", -1);
  std::ostringstream logged;
  log::Logger log(logged, log::Level::kInfo);
  model::VirtualClock clock;
  FabricCollector collector({sysfs.root(), kDefaultFabricInterval, "Hostname", "node1"}, demo_gpus(), clock, log);
  for (int i = 0; i < 3; ++i) collector.collect();
  std::string text;
  exporter::ExpositionWriter w(exporter::ExpositionFormat::kPrometheusText, text);
  collector.write_metrics(w);
  EXPECT_EQ(text, "");
  EXPECT_FALSE(collector.collector_result().has_value());
  const std::string log_text = logged.str();
  EXPECT_EQ(std::count(log_text.begin(), log_text.end(), '\n'), 1) << log_text;
  EXPECT_NE(log_text.find("no RDMA ports"), std::string::npos) << log_text;
}

TEST(FabricCollectorThread, ReadsAtStartThenEveryIntervalOnItsClock) {
  Tree t;
  log::Logger log(std::cerr, log::Level::kError);
  model::VirtualClock clock;
  FabricCollector collector({t.sysfs.root(), std::chrono::seconds(10), "", ""}, demo_gpus(), clock, log);
  collector.start();
  ASSERT_TRUE(collector.wait_for_readings(1, std::chrono::seconds(30)));
  clock.advance(std::chrono::seconds(5));
  EXPECT_FALSE(collector.wait_for_readings(2, std::chrono::milliseconds(50))) << "not before its interval";
  clock.advance(std::chrono::seconds(5));
  EXPECT_TRUE(collector.wait_for_readings(2, std::chrono::seconds(30)));
  collector.stop();
}

TEST(FabricServeFlags, IntervalNoFabricAndSysfsRoot) {
  auto parse = [](std::vector<std::string> args) { return cli::parse_serve_args(args); };
  auto d = parse({});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->fabric_interval, kDefaultFabricInterval);
  auto off = parse({"--no-fabric"});
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(off->fabric_interval.count(), 0);
  auto zero = parse({"--fabric-interval", "0"});
  ASSERT_TRUE(zero.has_value());
  EXPECT_EQ(zero->fabric_interval.count(), 0);
  auto root = parse({"--fabric-interval", "30s", "--sysfs-root", "/tmp/fake"});
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->fabric_interval, std::chrono::seconds(30));
  EXPECT_EQ(root->fabric_sysfs_root, "/tmp/fake");
  EXPECT_FALSE(parse({"--fabric-interval", "10ms"}).has_value());
  EXPECT_FALSE(parse({"--fabric-interval", "fast"}).has_value());
}

}  // namespace
}  // namespace gpuscope::agent
