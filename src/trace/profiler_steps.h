// The ProfilerStep#N annotations of a timeline as ordered steps with their numbers, for the analyses
// that place things in steps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "trace/rank_timeline.h"

namespace gpuscope::trace {

struct ProfilerStep {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::optional<std::int64_t> number;  // N, when every step's name ends in a number
};

// Ordered by start. The timeline keeps the numbers only of names that end in one: when some did not,
// the pairing of numbers to steps is unknown and no step gets a number.
inline std::vector<ProfilerStep> profiler_steps(const RankTimeline& timeline) {
  std::vector<ProfilerStep> steps;
  steps.reserve(timeline.steps.size());
  const bool numbered = timeline.step_numbers.size() == timeline.steps.size();
  for (std::size_t i = 0; i < timeline.steps.size(); ++i) {
    steps.push_back(ProfilerStep{timeline.steps[i].start, timeline.steps[i].end,
                                 numbered ? std::optional<std::int64_t>(timeline.step_numbers[i]) : std::nullopt});
  }
  std::stable_sort(steps.begin(), steps.end(), [](const ProfilerStep& a, const ProfilerStep& b) { return a.start_ns < b.start_ns; });
  return steps;
}

// The index of the last step starting at or before `t` that has not ended by `t`; -1 when none.
inline std::ptrdiff_t step_containing(const std::vector<ProfilerStep>& steps, std::int64_t t) {
  auto it = std::upper_bound(steps.begin(), steps.end(), t, [](std::int64_t v, const ProfilerStep& s) { return v < s.start_ns; });
  if (it == steps.begin()) return -1;
  --it;
  return t < it->end_ns ? it - steps.begin() : -1;
}

}  // namespace gpuscope::trace
