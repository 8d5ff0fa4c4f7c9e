// NVML event sets over the scenario's timed events: each set hands out every XID / ECC event that
// falls due after its creation exactly once, in order, for the GPUs and types registered on it.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "sim/scenario.h"

namespace gpuscope::sim {

struct DeliverableEvent {
  double at_s;
  unsigned gpu;
  unsigned long long type;  // nvmlEventType* bit
  unsigned long long data;  // the XID for XID events, else 0
};

// The events of `scenario` a set can deliver, in time order (stable for equal times).
std::vector<DeliverableEvent> deliverable_events(const Scenario& scenario);

// The event types the simulator raises.
inline constexpr unsigned long long kSupportedEventTypes = 0x1ULL | 0x2ULL | 0x8ULL;

class EventSet {
 public:
  EventSet(std::span<const DeliverableEvent> events, double created_s, std::size_t gpu_count);

  void add(unsigned gpu, unsigned long long types) { registered_.at(gpu) |= types; }

  // The next event due by `now_s` that this set listens for, consumed; events of GPUs or types
  // nobody registered are passed over for good, as NVML never queued them.
  std::optional<DeliverableEvent> next(std::span<const DeliverableEvent> events, double now_s);
  // Scenario time of the next event not yet consumed (infinity when none).
  double next_due(std::span<const DeliverableEvent> events) const;

 private:
  std::size_t cursor_ = 0;
  std::vector<unsigned long long> registered_;
};

}  // namespace gpuscope::sim
