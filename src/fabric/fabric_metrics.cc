#include "fabric/fabric_metrics.h"

#include <array>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "fabric/counter_catalog.h"

namespace gpuscope::fabric {
namespace {

using model::MetricType;

struct CounterFamily {
  FabricFamily family;
  std::string_view name;
  std::string_view label;  // the label the sources' values go in; empty: none
  std::string_view help;
};

constexpr std::array kCounterFamilies{
    CounterFamily{FabricFamily::kTransmitBytes, "gpuscope_fabric_transmit_bytes_total", "",
                  "Bytes the port sent (InfiniBand port_xmit_data x 4, EFA tx_bytes, netdev tx_bytes)."},
    CounterFamily{FabricFamily::kReceiveBytes, "gpuscope_fabric_receive_bytes_total", "",
                  "Bytes the port received (InfiniBand port_rcv_data x 4, EFA rx_bytes, netdev rx_bytes)."},
    CounterFamily{FabricFamily::kTransmitPackets, "gpuscope_fabric_transmit_packets_total", "", "Packets the port sent."},
    CounterFamily{FabricFamily::kReceivePackets, "gpuscope_fabric_receive_packets_total", "", "Packets the port received."},
    CounterFamily{FabricFamily::kErrors, "gpuscope_fabric_errors_total", "kind",
                  "Errors on the port by kind: link level (symbol, link_error_recovery, receive, remote_physical, "
                  "local_link_integrity, buffer_overrun, crc, transmit) and transport level (out_of_sequence, "
                  "packet_sequence, local_ack_timeout, rdma_read, rdma_write, retransmit_timeout, "
                  "unresponsive_remote, impaired_remote)."},
    CounterFamily{FabricFamily::kDiscards, "gpuscope_fabric_discards_total", "direction",
                  "Packets the port dropped, by direction (InfiniBand port_xmit_discards, mlx5 out_of_buffer, EFA "
                  "rx_drops, netdev tx_dropped/rx_dropped)."},
    CounterFamily{FabricFamily::kLinkDowned, "gpuscope_fabric_link_downed_total", "",
                  "Times the port's link went down (InfiniBand link_downed, netdev carrier_down_count)."},
    CounterFamily{FabricFamily::kCnp, "gpuscope_fabric_cnp_total", "role",
                  "RoCE congestion notification packets: sent (this port received ECN-marked traffic) and handled "
                  "(this port's sending was slowed)."},
    CounterFamily{FabricFamily::kEcnMarkedPackets, "gpuscope_fabric_ecn_marked_packets_total", "",
                  "RoCE packets received with an ECN congestion mark."},
    CounterFamily{FabricFamily::kTransmitWait, "gpuscope_fabric_transmit_wait_ticks_total", "",
                  "Ticks in which the port had data to send but no flow-control credits (InfiniBand port_xmit_wait; "
                  "the tick is the adapter's sampling interval)."},
    CounterFamily{FabricFamily::kRetransmittedPackets, "gpuscope_fabric_retransmitted_packets_total", "",
                  "Packets the port sent again (EFA retrans_pkts)."},
};

std::string port_labels(const PortState& s, const FabricExposition& f) {
  exporter::LabelSet l;
  const PortReading& p = s.port;
  l.add("device", p.device);
  if (!p.port.empty()) l.add("port", p.port);
  l.add("source", source_name(p.source));
  l.add("link_layer", p.link_layer);
  l.add("guid", p.guid);
  std::string gpus;
  for (unsigned g : p.near_gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  l.add("gpu", gpus);
  if (!f.host_label.empty()) l.add(f.host_label, f.hostname);
  return l.text();
}

// The label values a family's sources name, in the table's order, each once.
std::vector<std::string_view> label_values(FabricFamily family) {
  std::vector<std::string_view> out;
  for (const auto& s : counter_sources()) {
    if (s.family != family) continue;
    bool known = false;
    for (auto v : out) known = known || v == s.label;
    if (!known) out.push_back(s.label);
  }
  return out;
}

}  // namespace

void write_fabric_metrics(exporter::ExpositionWriter& w, const FabricExposition& f) {
  if (f.state == nullptr || f.state->ports.empty()) return;
  const auto& ports = f.state->ports;
  std::vector<std::string> labels;
  labels.reserve(ports.size());
  for (const auto& s : ports) labels.push_back(port_labels(s, f));

  w.family("gpuscope_fabric_port_up", MetricType::kGauge,
           "Whether the port's link is up: 1 for InfiniBand state ACTIVE or a network interface's operstate up, 0 "
           "otherwise (down, initializing, or the port vanished from sysfs).");
  for (std::size_t i = 0; i < ports.size(); ++i) w.sample("gpuscope_fabric_port_up", labels[i], ports[i].port.up ? 1 : 0);

  bool started = false;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const auto& rate = ports[i].port.rate_bytes_per_second;
    if (!rate || !ports[i].present) continue;
    if (!started) {
      w.family("gpuscope_fabric_port_rate_bytes_per_second", MetricType::kGauge,
               "The link rate the port trained to, in bytes per second (InfiniBand rate, netdev speed); absent "
               "where sysfs does not say.");
    }
    started = true;
    w.sample("gpuscope_fabric_port_rate_bytes_per_second", labels[i], *rate);
  }

  w.family("gpuscope_fabric_port_info", MetricType::kGauge,
           "Always 1: the port's state, physical state and rate as sysfs says them, and its PCI function.");
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const PortReading& p = ports[i].port;
    exporter::LabelSet extra;
    extra.add("state", ports[i].present ? p.state : "gone");
    extra.add("phys_state", p.phys_state);
    extra.add("rate", p.rate);
    extra.add("pci_bus_id", p.pci_bus_id);
    w.sample("gpuscope_fabric_port_info", labels[i], 1, extra.text());
  }

  for (const auto& family : kCounterFamilies) {
    const auto values = label_values(family.family);
    bool begun = false;
    for (std::size_t i = 0; i < ports.size(); ++i) {
      for (auto value : values) {
        // The first source of this series the port has.
        for (const auto& s : counter_sources()) {
          if (s.family != family.family || s.label != value || !ports[i].has(s.file)) continue;
          if (!begun) w.family(family.name, MetricType::kCounter, family.help);
          begun = true;
          std::string extra;
          if (!family.label.empty()) extra = exporter::LabelSet().add(family.label, value).text();
          w.sample(family.name, labels[i], static_cast<double>(ports[i].total(s.file)) * s.scale, extra);
          break;
        }
      }
    }
  }
}

}  // namespace gpuscope::fabric
