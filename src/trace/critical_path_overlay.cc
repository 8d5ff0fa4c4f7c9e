#include "trace/critical_path_overlay.h"

#include <string>

namespace gpuscope::trace {

std::vector<OverlayEvent> critical_path_overlay_events(const CriticalPathReport& path) {
  std::vector<OverlayEvent> out;
  std::int64_t row = 0;
  for (const StepCriticalPath& step : path.steps) {
    ++row;  // a step's GPU work can run into the next step's: one row each keeps the spans apart
    for (const PathSpan& span : step.spans) {
      OverlayEvent e;
      e.phase = OverlayEvent::Phase::kComplete;
      e.name = std::string(path_element_kind_name(span.kind)) + ": " + span.name;
      e.category = "gpuscope_critical_path";
      e.pid = kCriticalPathPid;
      e.tid = row;
      e.ts_ns = span.start_ns;
      e.duration_ns = span.end_ns - span.start_ns;
      e.args.push_back(OverlayArg{"step", step.step});
      e.args.push_back(OverlayArg{"bound", std::string(step.gpu_bound() ? "GPU" : "CPU")});
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace gpuscope::trace
