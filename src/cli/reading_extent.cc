#include "cli/reading_extent.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace gpuscope::cli {
namespace {

constexpr std::int64_t kFirstSearchSpanMs = 3600LL * 1000;

// The readings every source has of every GPU: one or two series per GPU, so a long span stays small.
const std::string& presence_regex() {
  static const std::string names = fmt::format("{}|{}", analysis::signal_series(analysis::Signal::kUtilization)[0],
                                               analysis::signal_series(analysis::Signal::kGrActive)[0]);
  return names;
}

// The oldest and newest reading time of the GPUs `filter` keeps in (from, to]; nullopt: none.
std::expected<std::optional<std::pair<std::int64_t, std::int64_t>>, std::string> span_of_readings(
    const analysis::ReadingSource& source, std::int64_t from, std::int64_t to, const analysis::GpuFilter& filter) {
  auto series = source.select(presence_regex(), from, to);
  if (!series) return std::unexpected(series.error());
  std::optional<std::pair<std::int64_t, std::int64_t>> out;
  for (const auto& gpu : analysis::group_by_gpu(std::move(*series))) {
    if (!filter.matches(gpu.identity)) continue;
    for (const auto& points : gpu.signals) {
      if (points.empty()) continue;
      const std::int64_t first = points.front().t_ms, last = points.back().t_ms;
      out = out ? std::pair{std::min(out->first, first), std::max(out->second, last)} : std::pair{first, last};
    }
  }
  return out;
}

}  // namespace

std::expected<ReadingExtent, std::string> find_reading_extent(const analysis::ReadingSource& source,
                                                              std::int64_t from_ms, std::int64_t to_ms,
                                                              std::int64_t horizon_end_ms,
                                                              const analysis::GpuFilter& filter) {
  ReadingExtent extent;
  // Backwards: (from - 2s, from - s] for s = 1h, 2h, 4h ... (the first also takes (from - 1h, from]).
  std::int64_t near = from_ms;
  for (std::int64_t span = kFirstSearchSpanMs; near > from_ms - kExtentHorizonMs; span *= 2) {
    const std::int64_t far = near - span;
    auto found = span_of_readings(source, far, near, filter);
    if (!found) return std::unexpected(found.error());
    if (*found) {
      extent.last_before = (*found)->second;
      break;
    }
    near = far;
  }
  // Forwards, up to the horizon's end.
  near = to_ms;
  for (std::int64_t span = kFirstSearchSpanMs; near < std::min(horizon_end_ms, to_ms + kExtentHorizonMs); span *= 2) {
    const std::int64_t far = std::min(near + span, horizon_end_ms);
    auto found = span_of_readings(source, near, far, filter);
    if (!found) return std::unexpected(found.error());
    if (*found) {
      extent.first_after = (*found)->first;
      break;
    }
    near = far;
  }
  return extent;
}

}  // namespace gpuscope::cli
