// The scenario's fabric as the simulated driver lays it out (gpuscopeSimUpdateSysfs): a sysfs tree with
// the PCIe switches the scenario names between GPUs and NICs, and RDMA port files whose counters follow
// the scenario's time (rates integrated over its timeline, link downs, the PMA's saturation), read here
// as plain files, the way the fabric collector opens them.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

namespace fs = std::filesystem;

// Two switches: GPUs 0-1 with mlx5_0, GPUs 2-3 with mlx5_1 (the port that degrades at 60 s); GPU 4 behind
// none. 2 GB/s on both rails, 1 GB/s on mlx5_1 from 60 s.
constexpr const char* kTreeScenario = R"(# fabric tree test
gpus:
  count: 5
  model: NVIDIA H100 80GB HBM3
fabric:
  transmit: 2GB/s
  ports:
    - {device: mlx5_0, gpus: [0, 1]}
    - device: mlx5_1
      gpus: [2, 3]
      timeline:
        - {at: 60s, transmit: 1GB/s, symbol_errors: 10, receive_drops: 3}
        - {at: 1000s, symbol_errors: 100}
      link_downs: [100s]
)";

std::string tree_root() {
  char root[4096];
  EXPECT_EQ(NVML(gpuscopeSimUpdateSysfs)(root, sizeof root), NVML_SUCCESS);
  return root;
}

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

unsigned long long read_counter(const fs::path& p) { return std::stoull(read_line(p)); }

TEST(FabricTree, CountersFollowTheScenariosTime) {
  Session s(kTreeScenario, 0.0);
  ASSERT_TRUE(s.ok());
  const fs::path port = fs::path(tree_root()) / "class/infiniband/mlx5_1/ports/1";
  EXPECT_EQ(read_line(port / "state"), "4: ACTIVE");
  EXPECT_EQ(read_line(port / "rate"), "400 Gb/sec (4X NDR)");
  EXPECT_EQ(read_line(port / "link_layer"), "InfiniBand");
  EXPECT_EQ(read_counter(port / "counters/port_xmit_data"), 0U);

  // 120 s in: 60 s at 2 GB/s and 60 s at 1 GB/s, in 4-octet words; errors and drops since 60 s; the
  // link went down once (at 100 s) and is back.
  s.at(120);
  tree_root();
  EXPECT_EQ(read_counter(port / "counters/port_xmit_data"), (60ULL * 2'000'000'000 + 60ULL * 1'000'000'000) / 4);
  EXPECT_EQ(read_counter(port / "counters/port_rcv_data"), (60ULL * 2'000'000'000 + 60ULL * 1'000'000'000) / 4);
  EXPECT_EQ(read_counter(port / "counters/symbol_error"), 60U * 10);
  EXPECT_EQ(read_counter(port / "hw_counters/out_of_buffer"), 60U * 3);
  EXPECT_EQ(read_counter(port / "counters/link_downed"), 1U);
  EXPECT_EQ(read_line(port / "state"), "4: ACTIVE");
  // The healthy rail: 2 GB/s throughout, nothing counted.
  const fs::path healthy = fs::path(tree_root()) / "class/infiniband/mlx5_0/ports/1";
  EXPECT_EQ(read_counter(healthy / "counters/port_xmit_data"), 120ULL * 2'000'000'000 / 4);
  EXPECT_EQ(read_counter(healthy / "counters/symbol_error"), 0U);

  // During the link down the port is not ACTIVE.
  s.at(102);
  tree_root();
  EXPECT_EQ(read_line(port / "state"), "1: DOWN");
  EXPECT_EQ(read_line(port / "phys_state"), "2: Polling");

  // symbol_error is 16 bits wide in the PMA and saturates: 10/s for 940 s, then 100/s, stops at 65535.
  s.at(1000 + 600);
  tree_root();
  EXPECT_EQ(read_counter(port / "counters/symbol_error"), 65535U);
  EXPECT_EQ(read_counter(port / "hw_counters/out_of_buffer"), (1600U - 60U) * 3);  // 64 bits: no saturation
}

TEST(FabricTree, PcieSwitchesPutEachNicBesideItsGpusAndNoOtherGpus) {
  Session s(kTreeScenario, 0.0);
  ASSERT_TRUE(s.ok());
  const fs::path root = tree_root();
  const auto function_of = [&](const std::string& nvml_bus_id) {
    // NVML's "00000000:18:00.0" is sysfs's "0000:18:00.0".
    std::string id = nvml_bus_id.substr(4);
    for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return fs::canonical(root / "bus/pci/devices" / id);
  };
  std::vector<fs::path> gpus;
  for (unsigned i = 0; i < 5; ++i) {
    char bus[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    nvmlPciInfo_t pci{};
    ASSERT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(s.gpu(i), &pci), NVML_SUCCESS);
    std::snprintf(bus, sizeof bus, "%s", pci.busId);
    gpus.push_back(function_of(bus));
  }
  const fs::path nic0 = fs::canonical(root / "class/infiniband/mlx5_0/device");
  const fs::path nic1 = fs::canonical(root / "class/infiniband/mlx5_1/device");
  // Behind one switch: the same upstream bridge two levels up (function → downstream port → upstream).
  const auto upstream = [](const fs::path& fn) { return fn.parent_path().parent_path(); };
  EXPECT_EQ(upstream(gpus[0]), upstream(nic0));
  EXPECT_EQ(upstream(gpus[1]), upstream(nic0));
  EXPECT_EQ(upstream(gpus[2]), upstream(nic1));
  EXPECT_EQ(upstream(gpus[3]), upstream(nic1));
  EXPECT_NE(upstream(nic0), upstream(nic1));
  // GPU 4 hangs off a root port of its own: only the host bridge in common with any NIC.
  EXPECT_NE(upstream(gpus[4]), upstream(nic0));
  EXPECT_NE(upstream(gpus[4]), upstream(nic1));
  EXPECT_EQ(gpus[4].parent_path().parent_path().filename().string().substr(0, 3), "pci");
  // The InfiniBand port GUID (GID 0's last 64 bits) and the node GUID as sysfs writes them.
  const std::string gid = read_line(root / "class/infiniband/mlx5_0/ports/1/gids/0");
  EXPECT_EQ(gid.size(), 39U) << gid;
  EXPECT_TRUE(gid.starts_with("fe80:0000:0000:0000:")) << gid;
  EXPECT_EQ(read_line(root / "class/infiniband/mlx5_0/node_guid").size(), 19U);
}

TEST(FabricTree, NoFabricNoTreeAndTheTreeGoesWithTheLibrary) {
  {
    Session plain("", 0.0);
    ASSERT_TRUE(plain.ok());
    char root[4096];
    EXPECT_EQ(NVML(gpuscopeSimUpdateSysfs)(root, sizeof root), NVML_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(NVML(gpuscopeSimUpdateSysfs)(nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);
  }
  std::string root;
  {
    Session s(kTreeScenario, 0.0);
    ASSERT_TRUE(s.ok());
    root = tree_root();
    char small[4];
    EXPECT_EQ(NVML(gpuscopeSimUpdateSysfs)(small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
    EXPECT_TRUE(fs::exists(root));
  }
  EXPECT_FALSE(fs::exists(root)) << root << " outlived the last nvmlShutdown";
  char after[4096];
  EXPECT_EQ(NVML(gpuscopeSimUpdateSysfs)(after, sizeof after), NVML_ERROR_UNINITIALIZED);
}

TEST(FabricTree, TheShippedScenarioDegradesOnePortOfEight) {
  Session s(scenario_path("fabric_degrading"), 0.0);
  ASSERT_TRUE(s.ok());
  const fs::path root = tree_root();
  int ports = 0;
  for (const auto& dev : fs::directory_iterator(root / "class/infiniband")) {
    (void)dev;
    ++ports;
  }
  EXPECT_EQ(ports, 8);
  s.at(20 * 60);
  tree_root();
  EXPECT_GT(read_counter(root / "class/infiniband/mlx5_6/ports/1/counters/symbol_error"), 0U);
  EXPECT_EQ(read_counter(root / "class/infiniband/mlx5_7/ports/1/counters/symbol_error"), 0U);
  EXPECT_EQ(read_counter(root / "class/infiniband/mlx5_6/ports/1/counters/link_downed"), 1U);
}

}  // namespace
}  // namespace gpuscope::sim::testing
