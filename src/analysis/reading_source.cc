#include "analysis/reading_source.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "analysis/network_verdict.h"

namespace gpuscope::analysis {
namespace {

constexpr std::int64_t kLookbackChunkMs = 3600LL * 1000;

}  // namespace

std::expected<std::vector<store::SeriesSamples>, std::string> StoreSource::select(const std::string& name_regex,
                                                                                  std::int64_t from_ms,
                                                                                  std::int64_t to_ms) const {
  std::optional<store::LabelMatcher> matcher;
  {
    std::lock_guard lock(mu_);
    if (!cached_matcher_ || cached_regex_ != name_regex) {
      auto made = store::LabelMatcher::make(store::LabelMatcher::Op::kRegex, std::string(store::kMetricNameLabel),
                                            name_regex);
      if (!made) return std::unexpected(made.error());
      cached_matcher_ = std::move(*made);
      cached_regex_ = name_regex;
    }
    matcher = cached_matcher_;
  }
  const std::array<store::LabelMatcher, 1> matchers{*matcher};
  // The store's ranges are closed; the diagnosis' are left-open.
  return data_.select(matchers, from_ms + 1, to_ms);
}

bool GpuFilter::matches(const GpuIdentity& id) const {
  if (ids.empty()) return true;
  return std::any_of(ids.begin(), ids.end(), [&](const std::string& want) {
    return want == id.gpu || (!id.uuid.empty() && want == id.uuid);
  });
}

std::expected<std::vector<GpuHistory>, std::string> read_histories(const ReadingSource& source, std::int64_t from_ms,
                                                                   std::int64_t to_ms) {
  auto series = source.select(signal_name_regex(), from_ms, to_ms);
  if (!series) return std::unexpected(series.error());
  return group_by_gpu(std::move(*series));
}

std::expected<std::vector<PortHistory>, std::string> read_port_histories(const ReadingSource& source,
                                                                         std::int64_t from_ms, std::int64_t to_ms) {
  auto series = source.select(fabric_series_regex(), from_ms, to_ms);
  if (!series) return std::unexpected(series.error());
  return group_by_port(std::move(*series));
}

std::expected<void, std::string> find_last_activity(const ReadingSource& source, Diagnosis& diagnosis,
                                                    const Thresholds& t, std::int64_t lookback_ms) {
  const std::int64_t window_start = diagnosis.at_ms - diagnosis.window_ms;
  std::vector<GpuDiagnosis*> waiting;
  for (auto& g : diagnosis.gpus) {
    if (g.verdict == Verdict::kIdle && (!g.since_ms || g.since_is_lower_bound)) waiting.push_back(&g);
  }
  const std::string names = fmt::format("{}|{}", signal_series(Signal::kGrActive)[0], signal_series(Signal::kUtilization)[0]);
  for (std::int64_t to = window_start; !waiting.empty() && to > window_start - lookback_ms; to -= kLookbackChunkMs) {
    const std::int64_t from = std::max(to - kLookbackChunkMs, window_start - lookback_ms);
    auto series = source.select(names, from, to);
    if (!series) return std::unexpected(series.error());
    const auto histories = group_by_gpu(std::move(*series));
    for (auto it = waiting.begin(); it != waiting.end();) {
      GpuDiagnosis& g = **it;
      const auto h = std::find_if(histories.begin(), histories.end(),
                                  [&](const GpuHistory& x) { return x.identity.key == g.identity.key; });
      if (h == histories.end()) {
        // A gap (the agent was down, the GPU absent): what came before it says nothing of since when
        // the GPU is idle, so the search ends with "at least".
        it = waiting.erase(it);
        continue;
      }
      const bool by_gr = !h->points(Signal::kGrActive).empty();
      const auto& pts = by_gr ? h->points(Signal::kGrActive) : h->points(Signal::kUtilization);
      const double busy = by_gr ? t.idle_gr_active : t.idle_utilization_percent;
      const auto last = std::find_if(pts.rbegin(), pts.rend(), [&](const Point& p) { return p.value >= busy; });
      if (last != pts.rend()) {
        g.since_ms = last->t_ms;
        g.since_is_lower_bound = false;
        it = waiting.erase(it);
        continue;
      }
      if (!pts.empty()) g.since_ms = pts.front().t_ms;  // idle at least since the earliest reading seen
      ++it;
    }
  }
  return {};
}

std::expected<Diagnosis, std::string> diagnose_from(const ReadingSource& source, std::int64_t at_ms,
                                                    std::int64_t window_ms, const Thresholds& thresholds,
                                                    const GpuFilter& filter, std::int64_t lookback_ms) {
  // Every GPU is read and diagnosed, and the filter applied after: the others are the peers a GPU is
  // compared with.
  auto gpus = read_histories(source, at_ms - window_ms, at_ms);
  if (!gpus) return std::unexpected(gpus.error());
  auto ports = read_port_histories(source, at_ms - std::max(window_ms, kFabricLookbackMs), at_ms);
  if (!ports) return std::unexpected(ports.error());
  Diagnosis d = diagnose(*gpus, *ports, at_ms, window_ms, thresholds);
  std::erase_if(d.gpus, [&](const GpuDiagnosis& g) { return !filter.matches(g.identity); });
  if (auto found = find_last_activity(source, d, thresholds, lookback_ms); !found) {
    return std::unexpected(found.error());
  }
  return d;
}

}  // namespace gpuscope::analysis
