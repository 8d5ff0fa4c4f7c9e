// RankComparison: several ranks of one job side by side, and the straggler: the rank with the slowest
// steps (ProfilerStep annotations), or, without step annotations, the least busy GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/rank_report.h"

namespace gpuscope::trace {

struct Straggler {
  std::int64_t rank = -1;
  std::string file;
  std::string basis;     // "slowest steps" or "least busy"
  double value = 0;      // mean step seconds, or busy ratio
  double median = 0;     // the same figure's median over the ranks
  double excess = 0;     // value / median - 1 for steps; median - value for busy ratio
  std::string evidence;  // one sentence
};

struct RankComparison {
  std::optional<Straggler> straggler;  // only with two or more ranks
};

RankComparison compare_ranks(const std::vector<RankReport>& ranks);

// The rank a report is shown as: distributedInfo.rank, else the number in "rank-N"/"rank_N" in the file
// name, else -1.
std::int64_t display_rank(const RankReport& report);

}  // namespace gpuscope::trace
