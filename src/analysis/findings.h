// Secondary findings on one GPU beside its verdict: throttling (power cap, thermal slowdown), memory
// nearly full, "utilization lies", slow transfers, a degraded PCIe link, pending row remaps, rising
// correctable errors. Internal to the diagnosis.
#pragma once

#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/window_stats.h"

namespace gpuscope::analysis {

// `segment`: the readings the verdict was drawn from; `window`: the whole window (counters' increase).
std::vector<Finding> findings(const Segment& segment, const Segment& window, Verdict verdict, const Thresholds& t);

}  // namespace gpuscope::analysis
