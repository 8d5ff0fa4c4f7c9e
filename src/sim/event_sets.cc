#include "sim/event_sets.h"

#include "nvml/nvml_abi.h"

namespace gpuscope::sim {

std::vector<DeliverableEvent> deliverable_events(const Scenario& scenario) {
  std::vector<DeliverableEvent> out;
  for (const ScenarioEvent& e : scenario.events) {
    switch (e.kind) {
      case EventKind::kXid:
        out.push_back({e.at_s, e.gpu, nvmlEventTypeXidCriticalError, e.xid});
        break;
      case EventKind::kSingleBitEcc:
        out.push_back({e.at_s, e.gpu, nvmlEventTypeSingleBitEccError, 0});
        break;
      case EventKind::kDoubleBitEcc:
        out.push_back({e.at_s, e.gpu, nvmlEventTypeDoubleBitEccError, 0});
        break;
      case EventKind::kRowRemap:
      case EventKind::kPowerCap:
        break;
    }
  }
  return out;  // scenario.events is sorted already
}

EventSet::EventSet(std::span<const DeliverableEvent> events, double created_s, std::size_t gpu_count)
    : registered_(gpu_count, 0) {
  // Only what happens after the set exists is delivered.
  while (cursor_ < events.size() && events[cursor_].at_s <= created_s) ++cursor_;
}

std::optional<DeliverableEvent> EventSet::next(std::span<const DeliverableEvent> events, double now_s) {
  while (cursor_ < events.size() && events[cursor_].at_s <= now_s) {
    const DeliverableEvent& e = events[cursor_++];
    if ((registered_.at(e.gpu) & e.type) != 0) return e;
  }
  return std::nullopt;
}

double EventSet::next_due(std::span<const DeliverableEvent> events) const {
  return cursor_ < events.size() ? events[cursor_].at_s : kForever;
}

}  // namespace gpuscope::sim
