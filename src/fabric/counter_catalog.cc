#include "fabric/counter_catalog.h"

#include <array>

namespace gpuscope::fabric {
namespace {

using F = FabricFamily;

// PortXmitData/PortRcvData "indicate the total number of data octets, divided by 4" (IB spec; the
// kernel's sysfs-class-infiniband): ×4 gives bytes.
constexpr double kIbDataWordBytes = 4;

constexpr std::array kSources{
    // Bytes and packets: the PMA's counters where the port has them (mlx5 IB and RoCE), else EFA's.
    CounterSource{"counters/port_xmit_data", F::kTransmitBytes, "", kIbDataWordBytes},
    CounterSource{"hw_counters/tx_bytes", F::kTransmitBytes, ""},
    CounterSource{"statistics/tx_bytes", F::kTransmitBytes, ""},
    CounterSource{"counters/port_rcv_data", F::kReceiveBytes, "", kIbDataWordBytes},
    CounterSource{"hw_counters/rx_bytes", F::kReceiveBytes, ""},
    CounterSource{"statistics/rx_bytes", F::kReceiveBytes, ""},
    CounterSource{"counters/port_xmit_packets", F::kTransmitPackets, ""},
    CounterSource{"hw_counters/tx_pkts", F::kTransmitPackets, ""},
    CounterSource{"statistics/tx_packets", F::kTransmitPackets, ""},
    CounterSource{"counters/port_rcv_packets", F::kReceivePackets, ""},
    CounterSource{"hw_counters/rx_pkts", F::kReceivePackets, ""},
    CounterSource{"statistics/rx_packets", F::kReceivePackets, ""},
    // Link-level errors (PMA): a dirty fibre or failing transceiver shows as symbol errors and link
    // error recoveries first, then as receive errors and downed links.
    CounterSource{"counters/symbol_error", F::kErrors, "symbol"},
    CounterSource{"counters/link_error_recovery", F::kErrors, "link_error_recovery"},
    CounterSource{"counters/port_rcv_errors", F::kErrors, "receive"},
    CounterSource{"counters/port_rcv_remote_physical_errors", F::kErrors, "remote_physical"},
    CounterSource{"counters/local_link_integrity_errors", F::kErrors, "local_link_integrity"},
    CounterSource{"counters/excessive_buffer_overrun_errors", F::kErrors, "buffer_overrun"},
    // Transport errors: mlx5's and EFA's (a lost packet the transport noticed, a peer that stopped answering).
    CounterSource{"hw_counters/out_of_sequence", F::kErrors, "out_of_sequence"},
    CounterSource{"hw_counters/packet_seq_err", F::kErrors, "packet_sequence"},
    CounterSource{"hw_counters/local_ack_timeout_err", F::kErrors, "local_ack_timeout"},
    CounterSource{"hw_counters/rdma_read_wr_err", F::kErrors, "rdma_read"},
    CounterSource{"hw_counters/rdma_write_wr_err", F::kErrors, "rdma_write"},
    CounterSource{"hw_counters/retrans_timeout_events", F::kErrors, "retransmit_timeout"},
    CounterSource{"hw_counters/unresponsive_remote_events", F::kErrors, "unresponsive_remote"},
    CounterSource{"hw_counters/impaired_remote_conn_events", F::kErrors, "impaired_remote"},
    CounterSource{"statistics/rx_errors", F::kErrors, "receive"},
    CounterSource{"statistics/tx_errors", F::kErrors, "transmit"},
    CounterSource{"statistics/rx_crc_errors", F::kErrors, "crc"},
    // Drops: the PMA's transmit discards; mlx5's out_of_buffer (a receive with no posted buffer), EFA's
    // rx_drops (the EFA_RX_DROPPED_PKTS of the issue); a netdev's dropped counts.
    CounterSource{"counters/port_xmit_discards", F::kDiscards, "transmit"},
    CounterSource{"statistics/tx_dropped", F::kDiscards, "transmit"},
    CounterSource{"hw_counters/out_of_buffer", F::kDiscards, "receive"},
    CounterSource{"hw_counters/rx_drops", F::kDiscards, "receive"},
    CounterSource{"statistics/rx_dropped", F::kDiscards, "receive"},
    CounterSource{"counters/link_downed", F::kLinkDowned, ""},
    CounterSource{"carrier_down_count", F::kLinkDowned, ""},
    // RoCE congestion control (DCQCN): CNPs this port sent as the notification point (the traffic it
    // receives was ECN-marked by a congested switch) and CNPs it handled as the reaction point (its
    // sending was slowed).
    CounterSource{"hw_counters/np_cnp_sent", F::kCnp, "sent"},
    CounterSource{"hw_counters/rp_cnp_handled", F::kCnp, "handled"},
    CounterSource{"hw_counters/np_ecn_marked_roce_packets", F::kEcnMarkedPackets, ""},
    // Ticks in which the port had data to send but no credits (IB back-pressure); the tick is the
    // HCA's sample interval, so compare rates between ports of one model, not across models.
    CounterSource{"counters/port_xmit_wait", F::kTransmitWait, ""},
    CounterSource{"hw_counters/retrans_pkts", F::kRetransmittedPackets, ""},
};

}  // namespace

std::span<const CounterSource> counter_sources() { return kSources; }

bool is_catalogued(std::string_view dir, std::string_view name) {
  for (const auto& s : kSources) {
    const std::string_view f = s.file;
    if (dir.empty()) {
      if (f == name) return true;
    } else if (f.size() == dir.size() + 1 + name.size() && f.starts_with(dir) && f[dir.size()] == '/' &&
               f.ends_with(name)) {
      return true;
    }
  }
  return false;
}

}  // namespace gpuscope::fabric
