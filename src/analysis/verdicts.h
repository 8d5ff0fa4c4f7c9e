// The decision tree: one segment of a GPU's readings → its primary verdict, the values that decided
// it, and the fix. Internal to the diagnosis (diagnosis.h is the interface).
#pragma once

#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/window_stats.h"

namespace gpuscope::analysis {

struct Decision {
  Verdict verdict = Verdict::kUnknown;
  std::string detail;  // transfer direction, or which side starves the GPU
  std::string summary;
  std::vector<Evidence> evidence;
  std::string fix;
  std::vector<std::string> undecided;
};

// Health left aside (the caller checks it first): idle and transfers before kernels' shapes, memory
// before the SMs' fill, the fill before the duty cycle, the pipes last.
Decision classify(const Segment& segment, const Thresholds& thresholds);

}  // namespace gpuscope::analysis
