// The network verdict on synthetic readings: a GPU that waits on collectives while the NIC port behind its
// PCIe switch counts errors, drops, link downs or falls behind its peers; and the cases where the fabric
// says nothing (clean, not recorded, another host's port, a port that vanished, a GPU that computes).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "analysis/diagnosis.h"
#include "analysis/network_verdict.h"
#include "analysis/reading_source.h"
#include "store/series_set.h"
#include "synthetic_gpus.h"

namespace gpuscope::analysis {
namespace {

using testing::at_s;
using testing::GpuBuilder;
using testing::histories;
using testing::kT0;

constexpr std::int64_t kNetWindow = 30'000;
constexpr int kNetAt = 600;            // s: the diagnosis' time
constexpr int kNetFabricStepS = 10;    // the fabric collector's default cadence
constexpr double kNetPeerBytes = 20e9; // what a healthy rail sends during the all-reduce

// One port's series as the fabric collector writes them, at kNetFabricStepS from 0 to kNetAt: each
// counter given as its value at second s.
struct NetPortBuilder {
  std::string device;
  std::string gpus;
  std::string host = "node-1";
  std::function<double(int)> up = [](int) { return 1.0; };
  std::function<double(int)> transmit = [](int s) { return kNetPeerBytes * s; };
  std::function<double(int)> symbol_errors = [](int) { return 0.0; };
  std::function<double(int)> receive_drops = [](int) { return 0.0; };
  std::function<double(int)> link_downs = [](int) { return 0.0; };
  int last_s = kNetAt;  // the port's series end here (a port gone from the history)

  void add_to(std::vector<store::SeriesSamples>& out) const {
    auto series = [&](std::string name, std::vector<store::Label> extra, const std::function<double(int)>& f) {
      std::vector<store::Label> labels = {{"__name__", std::move(name)}, {"device", device}, {"port", "1"},
                                          {"source", "rdma"},            {"link_layer", "InfiniBand"},
                                          {"gpu", gpus},                 {"Hostname", host}};
      labels.insert(labels.end(), extra.begin(), extra.end());
      store::SeriesSamples s;
      s.labels = store::Labels(labels);
      for (int t = 0; t <= last_s; t += kNetFabricStepS) s.samples.push_back({kT0 + t * 1000LL, f(t)});
      out.push_back(std::move(s));
    };
    series("gpuscope_fabric_port_up", {}, up);
    series("gpuscope_fabric_transmit_bytes_total", {}, transmit);
    series("gpuscope_fabric_errors_total", {{"kind", "symbol"}}, symbol_errors);
    series("gpuscope_fabric_discards_total", {{"direction", "receive"}}, receive_drops);
    series("gpuscope_fabric_link_downed_total", {}, link_downs);
  }
};

// Four rails, two GPUs behind each switch; `bad` (mlx5_1, GPUs 2 and 3) changed by the test.
std::vector<PortHistory> net_ports(const std::function<void(NetPortBuilder&)>& bad) {
  std::vector<store::SeriesSamples> series;
  for (int i = 0; i < 4; ++i) {
    NetPortBuilder p{.device = "mlx5_" + std::to_string(i), .gpus = std::to_string(2 * i) + "," + std::to_string(2 * i + 1)};
    if (i == 1) bad(p);
    p.add_to(series);
  }
  return group_by_port(std::move(series));
}

// GPU 3 waiting at the collectives: the GR engine held by NCCL's kernels on a few SMs, NVLink busy.
GpuBuilder waiting_gpu(std::string gpu = "3", std::string host = "node-1") {
  GpuBuilder g(std::move(gpu), std::move(host));
  g.busy(0, kNetAt + 1, 0.95, 0.25, 0.1, 0.1, 0.01, 98)
      .set("DCGM_FI_PROF_NVLINK_RX_BYTES", 0, kNetAt + 1, 30e9)
      .set("DCGM_FI_PROF_NVLINK_TX_BYTES", 0, kNetAt + 1, 30e9);
  return g;
}

GpuDiagnosis net_one(const GpuBuilder& gpu, const std::vector<PortHistory>& ports) {
  const auto h = histories({gpu});
  const auto d = diagnose(h, ports, at_s(kNetAt), kNetWindow, Thresholds{});
  EXPECT_EQ(d.gpus.size(), 1U);
  return d.gpus.at(0);
}

const Evidence* net_evidence(const GpuDiagnosis& g, std::string_view name) {
  const auto it = std::find_if(g.evidence.begin(), g.evidence.end(), [&](const Evidence& e) { return e.name == name; });
  return it == g.evidence.end() ? nullptr : &*it;
}

TEST(NetworkVerdict, AWaitingGpuWhoseNicCountsErrorsWaitsOnTheNetwork) {
  // mlx5_1 counts 40 symbol errors a second and went down once at 400 s; its GPUs wait at the collectives.
  const auto ports = net_ports([](NetPortBuilder& p) {
    p.symbol_errors = [](int s) { return 40.0 * s; };
    p.link_downs = [](int s) { return s >= 400 ? 1.0 : 0.0; };
  });
  const GpuDiagnosis g = net_one(waiting_gpu(), ports);
  EXPECT_EQ(g.verdict, Verdict::kNetworkBound);
  EXPECT_EQ(verdict_id(g.verdict), "network_bound");
  EXPECT_EQ(g.detail, "mlx5_1/1");
  EXPECT_NE(g.summary.find("NIC port mlx5_1/1 (InfiniBand) counts, over the last 5 min, 40/s symbol errors and 1 "
                           "link down"),
            std::string::npos)
      << g.summary;
  EXPECT_NE(g.summary.find("SM active 0.250"), std::string::npos) << g.summary;
  const Evidence* errors = net_evidence(g, "errors_symbol_per_second");
  ASSERT_NE(errors, nullptr);
  EXPECT_DOUBLE_EQ(errors->value, 40.0);
  const Evidence* downs = net_evidence(g, "link_downs");
  ASSERT_NE(downs, nullptr);
  EXPECT_DOUBLE_EQ(downs->value, 1.0);
  const Evidence* activity = net_evidence(g, "activity");
  ASSERT_NE(activity, nullptr);
  EXPECT_EQ(activity->text, "launch_bound");  // what the GPU read as without the fabric
  EXPECT_NE(g.fix.find("transceiver"), std::string::npos);
  EXPECT_NE(g.fix.find("ibstat mlx5_1, mlxlink -d mlx5_1"), std::string::npos) << g.fix;
  EXPECT_NE(g.fix.find("move the job off this node"), std::string::npos);

  // GPU 0's port is clean: the same waiting pattern there is not the network's.
  EXPECT_EQ(net_one(waiting_gpu("0"), ports).verdict, Verdict::kLaunchBound);
}

TEST(NetworkVerdict, DropsAndAPortBehindItsPeersAreTroubleToo) {
  // Receive drops alone.
  const auto drops = net_ports([](NetPortBuilder& p) { p.receive_drops = [](int s) { return 150.0 * s; }; });
  const GpuDiagnosis d = net_one(waiting_gpu(), drops);
  EXPECT_EQ(d.verdict, Verdict::kNetworkBound);
  ASSERT_NE(net_evidence(d, "discards_receive_per_second"), nullptr);
  EXPECT_DOUBLE_EQ(net_evidence(d, "discards_receive_per_second")->value, 150.0);

  // Clean counters, but it sends a fifth of what the other rails send: the network straggler.
  const auto slow = net_ports([](NetPortBuilder& p) { p.transmit = [](int s) { return kNetPeerBytes / 5 * s; }; });
  const GpuDiagnosis b = net_one(waiting_gpu(), slow);
  EXPECT_EQ(b.verdict, Verdict::kNetworkBound);
  ASSERT_NE(net_evidence(b, "transmit_bytes_per_second"), nullptr);
  EXPECT_DOUBLE_EQ(net_evidence(b, "transmit_bytes_per_second")->value, kNetPeerBytes / 5);
  // The median of the four rails (4, 20, 20, 20 GB/s): the middle two are 20 GB/s.
  ASSERT_NE(net_evidence(b, "peers_median_transmit_bytes_per_second"), nullptr);
  EXPECT_DOUBLE_EQ(net_evidence(b, "peers_median_transmit_bytes_per_second")->value, kNetPeerBytes);
  EXPECT_NE(b.summary.find("sends 4.0 GB/s against a median 20.0 GB/s of the host's InfiniBand ports"),
            std::string::npos)
      << b.summary;

  // At 60 % of its peers it is slower, not a straggler (the rule's factor is a half).
  const auto a_bit = net_ports([](NetPortBuilder& p) { p.transmit = [](int s) { return kNetPeerBytes * 0.6 * s; }; });
  EXPECT_EQ(net_one(waiting_gpu(), a_bit).verdict, Verdict::kLaunchBound);
}

TEST(NetworkVerdict, NoNetworkVerdictOnACleanFabric) {
  const auto clean = net_ports([](NetPortBuilder&) {});
  const GpuDiagnosis g = net_one(waiting_gpu(), clean);
  EXPECT_EQ(g.verdict, Verdict::kLaunchBound);
  EXPECT_EQ(net_evidence(g, "port"), nullptr);
  // Errors counted before the lookback (5 minutes) are history, not what slows the job now.
  const auto old = net_ports([](NetPortBuilder& p) { p.symbol_errors = [](int s) { return s < 200 ? 40.0 * s : 8000.0; }; });
  EXPECT_EQ(net_one(waiting_gpu(), old).verdict, Verdict::kLaunchBound);
}

TEST(NetworkVerdict, NoNetworkVerdictWithoutFabricData) {
  // No fabric series at all (a node without RDMA ports, an agent started with --no-fabric).
  EXPECT_EQ(net_one(waiting_gpu(), {}).verdict, Verdict::kLaunchBound);
  // A bad port of another host naming the same GPU index is not this GPU's.
  const auto elsewhere = net_ports([](NetPortBuilder& p) {
    p.host = "node-2";
    p.symbol_errors = [](int s) { return 40.0 * s; };
  });
  EXPECT_EQ(net_one(waiting_gpu(), elsewhere).verdict, Verdict::kLaunchBound);
  // Counters read once (the agent just started): no increase to judge.
  std::vector<store::SeriesSamples> series;
  NetPortBuilder one_reading{.device = "mlx5_1", .gpus = "2,3"};
  one_reading.symbol_errors = [](int) { return 1e6; };
  one_reading.add_to(series);
  for (auto& s : series) s.samples.erase(s.samples.begin(), s.samples.end() - 1);
  EXPECT_EQ(net_one(waiting_gpu(), group_by_port(std::move(series))).verdict, Verdict::kLaunchBound);
}

TEST(NetworkVerdict, APortDownInTheMiddleOfAFlapStillNamesIt) {
  // The reading at the diagnosis' time caught the link down it counted (a flap): still the port to blame.
  const auto flapping = net_ports([](NetPortBuilder& p) {
    p.symbol_errors = [](int s) { return 40.0 * s; };
    p.link_downs = [](int s) { return s >= kNetAt ? 1.0 : 0.0; };
    p.up = [](int s) { return s >= kNetAt ? 0.0 : 1.0; };
  });
  const GpuDiagnosis g = net_one(waiting_gpu(), flapping);
  EXPECT_EQ(g.verdict, Verdict::kNetworkBound);
  ASSERT_NE(net_evidence(g, "link_downs"), nullptr);
  // Down with no link down counted (disabled by hand, or gone from sysfs): not judged.
  const auto disabled = net_ports([](NetPortBuilder& p) {
    p.symbol_errors = [](int s) { return 40.0 * s; };
    p.up = [](int s) { return s >= kNetAt ? 0.0 : 1.0; };
  });
  EXPECT_EQ(net_one(waiting_gpu(), disabled).verdict, Verdict::kLaunchBound);
}

TEST(NetworkVerdict, APortThatVanishedIsNotJudgedOnWhatItCountedBefore) {
  // Counting errors until 450 s, then gone from sysfs: the collector holds its totals with port_up 0.
  const auto gone = net_ports([](NetPortBuilder& p) {
    p.symbol_errors = [](int s) { return 40.0 * std::min(s, 450); };
    p.transmit = [](int s) { return kNetPeerBytes * std::min(s, 450); };
    p.up = [](int s) { return s <= 450 ? 1.0 : 0.0; };
  });
  EXPECT_EQ(net_one(waiting_gpu(), gone).verdict, Verdict::kLaunchBound);
  // Its series ended (an agent restarted since, or the history lost them): the same.
  const auto ended = net_ports([](NetPortBuilder& p) {
    p.symbol_errors = [](int s) { return 40.0 * s; };
    p.last_s = 450;
  });
  EXPECT_EQ(net_one(waiting_gpu(), ended).verdict, Verdict::kLaunchBound);
  // And a port that is gone is no peer: the three left are the yardstick, and mlx5_0 stays clean.
  const auto t = port_troubles(gone, at_s(kNetAt), kFabricLookbackMs);
  ASSERT_EQ(t.size(), 4U);
  for (const auto& x : t) EXPECT_TRUE(x.empty()) << x.port->identity.key;
}

TEST(NetworkVerdict, AGpuThatComputesKeepsItsVerdictWhateverItsNicCounts) {
  const auto bad = net_ports([](NetPortBuilder& p) { p.symbol_errors = [](int s) { return 40.0 * s; }; });
  GpuBuilder computing("3");
  computing.busy(0, kNetAt + 1, 0.98, 0.9, 0.6, 0.3, 0.05, 100);
  EXPECT_EQ(net_one(computing, bad).verdict, Verdict::kComputeBound);
  // A GPU that waits but moves nothing over NVLink or its port is not in a collective.
  const auto quiet = net_ports([](NetPortBuilder& p) {
    p.symbol_errors = [](int s) { return 40.0 * s; };
    p.transmit = [](int) { return 0.0; };
  });
  GpuBuilder launching("3");
  launching.busy(0, kNetAt + 1, 0.95, 0.25, 0.1, 0.1, 0.01, 98);
  EXPECT_EQ(net_one(launching, quiet).verdict, Verdict::kLaunchBound);
}

TEST(NetworkVerdict, DiagnoseFromAStoreReadsThePortsOverTheLookback) {
  std::vector<store::SeriesSamples> all = waiting_gpu().series();
  for (int i = 0; i < 2; ++i) {
    NetPortBuilder p{.device = "mlx5_" + std::to_string(i), .gpus = std::to_string(2 * i) + "," + std::to_string(2 * i + 1)};
    if (i == 1) p.symbol_errors = [](int s) { return 40.0 * s; };
    p.add_to(all);
  }
  store::SeriesSet data;
  for (const auto& s : all) {
    for (const auto& x : s.samples) data.add(s.labels, x.t_ms, x.value);
  }
  StoreSource source(data);
  auto d = diagnose_from(source, at_s(kNetAt), kNetWindow, Thresholds{}, {});
  ASSERT_TRUE(d) << d.error();
  ASSERT_EQ(d->gpus.size(), 1U);
  EXPECT_EQ(d->gpus[0].verdict, Verdict::kNetworkBound);
  EXPECT_EQ(d->gpus[0].detail, "mlx5_1/1");
}

}  // namespace
}  // namespace gpuscope::analysis
