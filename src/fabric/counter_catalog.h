// The fabric counters gpuscope reads from sysfs and the series each one becomes: one table, read by the
// sysfs reader (which files to open) and by the exposition (which family and label each lands in).
// Where the files come from (the layouts the fake trees in tests/agent/fabric_*_test.cc copy):
//  - counters/ of /sys/class/infiniband/DEV/ports/N: the port's PMA PortCounters (IB spec 1.x §16.1.3.5),
//    documented in the kernel's Documentation/ABI/stable/sysfs-class-infiniband; port_xmit_data and
//    port_rcv_data count 4-octet words ("octets divided by 4"). mlx5 fills them for InfiniBand and RoCE
//    ports alike (64-bit from PortCountersExtended where the HCA has them, else 32-bit).
//  - hw_counters/ of the same port: the driver's own counters (mlx5: out_of_buffer, out_of_sequence,
//    np_cnp_sent, rp_cnp_handled, np_ecn_marked_roce_packets, ...; the same ABI file documents them).
//    AWS EFA has no counters/ directory: its port's hw_counters/ hold tx_bytes, rx_bytes, tx_pkts,
//    rx_pkts, rx_drops, rdma_read_wr_err, ... (drivers/infiniband/hw/efa/efa_verbs.c, EFA_DEFINE_PORT_STATS)
//    and, in newer drivers, retrans_pkts, retrans_timeout_events, unresponsive_remote_events,
//    impaired_remote_conn_events.
//  - statistics/ of /sys/class/net/IFACE (Documentation/ABI/testing/sysfs-class-net-statistics), and the
//    interface's own carrier_down_count (Documentation/ABI/testing/sysfs-class-net, Linux 4.16+).
#pragma once

#include <span>
#include <string_view>

namespace gpuscope::fabric {

// The series families a counter file lands in.
enum class FabricFamily {
  kTransmitBytes,
  kReceiveBytes,
  kTransmitPackets,
  kReceivePackets,
  kErrors,     // label kind
  kDiscards,   // label direction
  kLinkDowned,
  kCnp,        // label role
  kEcnMarkedPackets,
  kTransmitWait,
  kRetransmittedPackets,
};

// One sysfs counter file. `file` is relative to the port's directory for an RDMA port
// ("counters/port_xmit_data", "hw_counters/rx_drops") or to the interface's directory for a network
// interface ("statistics/rx_bytes", "carrier_down_count"). Several files may feed one series (the same
// family and label value): the first one a port has, in this table's order, is the one exported.
struct CounterSource {
  std::string_view file;
  FabricFamily family;
  std::string_view label;  // the kind, direction or role; empty for families without one
  double scale = 1;        // IB data counters count 4-octet words
};

std::span<const CounterSource> counter_sources();

// Whether `dir`/`name` (dir: counters, hw_counters, statistics, or empty for the interface's own
// directory) is a file of the table: the reader opens no other.
bool is_catalogued(std::string_view dir, std::string_view name);

}  // namespace gpuscope::fabric
