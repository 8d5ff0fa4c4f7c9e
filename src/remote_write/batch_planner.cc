#include "remote_write/batch_planner.h"

#include <algorithm>

namespace gpuscope::remote_write {

std::vector<WriteBatch> plan_batches(std::span<const store::SeriesSamples> window, std::int64_t window_end,
                                     std::size_t max_samples) {
  std::vector<PlannedSample> all;
  std::size_t total = 0;
  for (const auto& s : window) total += s.samples.size();
  all.reserve(total);
  for (std::size_t i = 0; i < window.size(); ++i) {
    for (const store::Sample& sample : window[i].samples) all.push_back({static_cast<std::uint32_t>(i), sample});
  }
  // By time, then by series: each timestamp's samples become one group.
  std::stable_sort(all.begin(), all.end(),
                   [](const PlannedSample& a, const PlannedSample& b) { return a.sample.t_ms < b.sample.t_ms; });

  std::vector<WriteBatch> out;
  WriteBatch current;
  // in_current[series] == batch number: the series already has its one sample in the current batch.
  std::vector<std::size_t> in_current(window.size(), SIZE_MAX);
  std::size_t batch_number = 0;
  std::optional<std::int64_t> last_complete;  // the last timestamp whose group is wholly in `current` or before
  auto close = [&](std::optional<std::int64_t> cursor) {
    current.cursor_after = cursor;
    out.push_back(std::move(current));
    current = WriteBatch{};
    ++batch_number;
  };

  for (std::size_t begin = 0; begin < all.size();) {
    const std::int64_t t = all[begin].sample.t_ms;
    std::size_t end = begin;
    bool repeats = false;
    while (end < all.size() && all[end].sample.t_ms == t) {
      repeats = repeats || in_current[all[end].series] == batch_number;
      ++end;
    }
    const std::size_t group = end - begin;
    if (!current.samples.empty() && (repeats || current.samples.size() + group > max_samples)) close(last_complete);
    for (std::size_t i = begin; i < end; ++i) {
      if (current.samples.size() == max_samples) close(std::nullopt);  // a timestamp larger than a batch
      in_current[all[i].series] = batch_number;
      current.samples.push_back(all[i]);
    }
    last_complete = t;
    begin = end;
  }
  if (!current.samples.empty()) close(window_end);
  return out;
}

}  // namespace gpuscope::remote_write
