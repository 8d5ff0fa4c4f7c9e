// The fabric families of /metrics (and of the history): per RDMA port and physical network interface,
// gpuscope_fabric_* bytes, packets, errors, discards, link-downs, congestion notifications, link state
// and rate, labelled with the port (device, port, guid, link_layer, source), the GPUs behind the same
// PCIe switch (gpu="2,3") and the host label the GPU series carry, so a slow GPU and its NIC's drops
// meet in one query.
#pragma once

#include <string>

#include "export/exposition_writer.h"
#include "fabric/fabric_counters.h"

namespace gpuscope::fabric {

struct FabricExposition {
  const FabricState* state = nullptr;
  std::string host_label;  // Hostname, hostname, or empty for none
  std::string hostname;
};

// Writes nothing when there are no ports: a node without a fabric has no gpuscope_fabric_* families.
void write_fabric_metrics(exporter::ExpositionWriter& writer, const FabricExposition& fabric);

}  // namespace gpuscope::fabric
