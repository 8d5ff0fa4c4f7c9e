// The network verdict: a GPU that waits on communication (its kernels hold the GR engine while few SMs
// work: NCCL's collectives spinning, or bursts of compute between waits) while a NIC port behind its PCIe
// switch counts errors, drops or link downs, or sends far less than the host's other ports: the node is
// the straggler of every collective, and the port is why. Internal to the diagnosis (diagnosis.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/fabric_ports.h"

namespace gpuscope::analysis {

// The fabric is judged over the rules' rate window (FabricPortErrors reads rate(...[5m])), not the GPU
// window: the collector reads every 10 s, and a link down is one step of a counter that a 30 s window
// would see for 30 s only.
inline constexpr std::int64_t kFabricLookbackMs = 5 * 60 * 1000;

// What is wrong with one port over the lookback; empty() when nothing is.
struct PortTrouble {
  const PortHistory* port = nullptr;
  std::vector<std::pair<std::string, double>> error_rates;    // kind → per second, those above 0
  std::vector<std::pair<std::string, double>> discard_rates;  // direction → per second (RDMA ports only)
  double link_downs = 0;
  // Behind its peers: its transmit rate and the median of the host's ports of its link layer.
  std::optional<double> transmit_bytes_per_second;
  std::optional<double> peers_median_bytes_per_second;
  bool behind_peers = false;

  bool empty() const { return error_rates.empty() && discard_rates.empty() && link_downs <= 0 && !behind_peers; }
};

// The troubles of every port that is up at the end of (at_ms - lookback_ms, at_ms], or down after a link
// down it counted in that time (a flap). A port down otherwise or gone from sysfs carries nothing (the
// collectives no longer cross it: FabricPortDown says so), and a port missing from its host's latest
// fabric reading vanished from the history: neither is judged on what it counted before, nor is it a peer.
std::vector<PortTrouble> port_troubles(std::span<const PortHistory> ports, std::int64_t at_ms, std::int64_t lookback_ms);

// Turns the verdict of each GPU that waits (launch bound, input starved) into kNetworkBound where a port
// near it (same host, its `gpu` label naming the GPU) is in trouble and the GPU communicates (the port
// moved traffic, or NVLink did). The verdict it had stays as the evidence `activity`.
void apply_network_verdicts(std::vector<GpuDiagnosis>& gpus, std::span<const GpuHistory> histories,
                            std::span<const PortHistory> ports, std::int64_t at_ms, std::int64_t window_ms);

}  // namespace gpuscope::analysis
