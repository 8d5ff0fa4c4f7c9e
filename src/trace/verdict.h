// The verdict for one device: which of data loading, kernel launches, communication, memory copies or
// computation limits it, decided by a fixed tree of thresholds (in verdict.cc, and in the README) so the
// same trace always gets the same answer, with the numbers behind it and the usual fix.
#pragma once

#include "trace/rank_report.h"

namespace gpuscope::trace {

Verdict decide_verdict(const DeviceReport& device);

}  // namespace gpuscope::trace
