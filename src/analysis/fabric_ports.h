// The node's fabric ports as the diagnosis reads them: the recorded gpuscope_fabric_* series (the fabric
// collector's, docs/fabric.md) grouped into one history per port, with the GPUs behind the port's PCIe
// switch (its `gpu` label) and its host, so a GPU's verdict can name the NIC it sends through.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include "analysis/gpu_signals.h"
#include "store/queryable.h"

namespace gpuscope::analysis {

struct PortIdentity {
  std::string key;         // host/source:device[/port]
  std::string host;        // Hostname, hostname or instance, as the GPU series say it
  std::string source;      // rdma, net
  std::string device;      // mlx5_3
  std::string port;        // "1"; empty for a network interface
  std::string link_layer;  // InfiniBand, Ethernet, Unspecified (EFA)
  std::vector<std::string> gpus;  // the `gpu` label split at commas: indices of the GPUs behind its switch
  std::string name() const { return port.empty() ? device : device + "/" + port; }
};

// One counter of a port under one label value (errors by kind, discards by direction).
struct LabeledCounter {
  std::string label;
  std::vector<Point> points;
};

struct PortHistory {
  PortIdentity identity;
  std::vector<Point> up;              // gpuscope_fabric_port_up
  std::vector<Point> transmit_bytes;  // gpuscope_fabric_transmit_bytes_total
  std::vector<Point> link_downed;     // gpuscope_fabric_link_downed_total
  std::vector<LabeledCounter> errors;    // gpuscope_fabric_errors_total by kind
  std::vector<LabeledCounter> discards;  // gpuscope_fabric_discards_total by direction

  bool near_gpu(std::string_view gpu) const;
};

// The fabric series the diagnosis reads (what a store::RecentWindow keeps for it), and the same as one
// RE2 alternation.
std::span<const std::string_view> fabric_series_names();
const std::string& fabric_series_regex();

// Groups raw series into one history per port, sorted by key; other series are ignored.
std::vector<PortHistory> group_by_port(std::vector<store::SeriesSamples> series);

// How far a counter rose over the points with from_ms < t <= to_ms (last minus first; a counter never
// falls, the collector sees to that), and over how long; nullopt with fewer than two points.
struct CounterIncrease {
  double increase = 0;
  double seconds = 0;
  double per_second() const { return seconds > 0 ? increase / seconds : 0; }
};
std::optional<CounterIncrease> counter_increase(const std::vector<Point>& points, std::int64_t from_ms,
                                                std::int64_t to_ms);

}  // namespace gpuscope::analysis
