// RankComparison: several ranks of one job side by side: whether the files are one job at all (one file
// per rank, one world size and backend), and the straggler: a rank whose steps (ProfilerStep
// annotations) are clearly slower than the others', or, without step annotations, a clearly less busy GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/rank_report.h"

namespace gpuscope::trace {

// A straggler is named only past these thresholds (the README's trace section quotes them).
//
// Ranks of one job doing the same work differ by a few percent from step to step: launch jitter, uneven
// waits inside collectives, the profiler's own overhead. A rank whose median step is 10% slower than the
// other ranks' median holds every collective back by a tenth of a step, which is worth chasing; less is
// noise in a profile of a few steps (two sampled ranks of one real job differ by 0.7%).
inline constexpr double kStragglerStepExcess = 0.10;
// Each rank is judged on its median step, and a median outvotes one odd step (the first step after the
// profiler wakes carries its warm-up; a checkpoint or a garbage-collection pause lands in one step) only
// from three steps on: with one or two, one odd step makes the median.
inline constexpr std::uint64_t kStragglerMinSteps = 3;
// Without step annotations: the least busy GPU, when its busy share of the window is 10 points below the
// other ranks' median (a tenth of the window, as large as the step threshold); smaller gaps come from
// uneven collective waits, which count as busy on the ranks that wait.
inline constexpr double kStragglerBusyGap = 0.10;

enum class StragglerBasis { kSteps, kBusy };

struct Straggler {
  std::int64_t rank = -1;
  std::string file;
  StragglerBasis basis = StragglerBasis::kSteps;
  double value = 0;          // median step seconds, or busy ratio
  double others_median = 0;  // the same figure's median over the other ranks
  double excess = 0;         // value / others_median - 1 for steps; others_median - value for the busy ratio
  double threshold = 0;      // what excess had to reach
  std::string evidence;      // one sentence
};

enum class NoStragglerReason { kBelowThreshold, kTooFewSteps };

// Why no straggler is named although there are two or more ranks, with the numbers.
struct NoStraggler {
  NoStragglerReason reason = NoStragglerReason::kBelowThreshold;
  std::string evidence;  // one sentence
};

struct RankComparison {
  // With two or more ranks exactly one of these is set.
  std::optional<Straggler> straggler;
  std::optional<NoStraggler> no_straggler;
  std::optional<std::int64_t> world_size;  // the job's, when a file says it
};

// The files must be ranks of one run: nullopt when they are, else one line naming the files that are
// not (files of different world sizes or backends; of profiling windows that share no ProfilerStep
// number; two files for one rank). A value a file does not state matches any.
std::optional<std::string> why_not_one_run(const std::vector<RankReport>& ranks);

RankComparison compare_ranks(const std::vector<RankReport>& ranks);

// The rank a report is shown as: distributedInfo.rank, else the number in "rank-N"/"rank_N" in the file
// name, else -1.
std::int64_t display_rank(const RankReport& report);

std::string straggler_basis_key(StragglerBasis basis);     // "steps", "busy"
std::string no_straggler_key(NoStragglerReason reason);    // "below_threshold", "too_few_steps"

}  // namespace gpuscope::trace
