#include "recording/recording_import.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "store/label_matcher.h"

namespace gpuscope::recording {
namespace {

// The timestamps the store holds for exactly these labels within [mint, maxt].
std::expected<std::unordered_set<std::int64_t>, std::string> stored_times(const store::Tsdb& tsdb,
                                                                         const store::Labels& labels,
                                                                         std::int64_t mint, std::int64_t maxt) {
  std::vector<store::LabelMatcher> matchers;
  for (const auto& l : labels) {
    auto m = store::LabelMatcher::make(store::LabelMatcher::Op::kEqual, l.name, l.value);
    if (!m) return std::unexpected(m.error());
    matchers.push_back(std::move(*m));
  }
  auto found = tsdb.select(matchers, mint, maxt);
  if (!found) return std::unexpected(found.error());
  std::unordered_set<std::int64_t> times;
  for (const auto& s : *found) {
    // Equality matchers also select series with more labels than these.
    if (s.labels != labels) continue;
    for (const auto& sample : s.samples) times.insert(sample.t_ms);
  }
  return times;
}

}  // namespace

std::expected<ImportCounts, std::string> import_recording(store::Tsdb& tsdb, Recording recording) {
  ImportCounts counts;
  for (auto& series : recording.series) {
    auto& samples = series.samples;
    if (samples.empty()) continue;
    ++counts.series;
    std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.t_ms < b.t_ms; });
    auto stored = stored_times(tsdb, series.labels, samples.front().t_ms, samples.back().t_ms);
    if (!stored) return std::unexpected(stored.error());
    for (const auto& s : samples) {
      if (stored->contains(s.t_ms)) {
        ++counts.already_present;
        continue;
      }
      auto appended = tsdb.append(series.labels, s.t_ms, s.value);
      if (appended) {
        ++counts.imported;
        continue;
      }
      switch (appended.error().reason) {
        case store::AppendError::Reason::kDuplicate:  // the file held this time twice
          ++counts.already_present;
          break;
        case store::AppendError::Reason::kOutOfOrder:
          ++counts.before_stored;
          break;
        case store::AppendError::Reason::kNoLabels:
          return std::unexpected(appended.error().message);
      }
    }
  }
  return counts;
}

}  // namespace gpuscope::recording
