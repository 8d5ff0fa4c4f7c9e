#include "analysis/window_summary.h"

#include <algorithm>
#include <array>

namespace gpuscope::analysis {

namespace {

// Prometheus's lookback: readings further apart than this are not one run of the agent.
constexpr std::int64_t kSummaryMaxGapMs = 5 * 60 * 1000;
// The diagnosis reads at most this much of a span: a verdict says what the GPU does now.
constexpr std::int64_t kSummaryVerdictWindowMs = 3600 * 1000;

constexpr std::array<SummaryQuantity, 6> kQuantities{{
    {"utilization_percent", Signal::kUtilization},
    {"sm_active", Signal::kSmActive},
    {"tensor_active", Signal::kTensorActive},
    {"memory_used_mib", Signal::kFbUsed},
    {"power_watts", Signal::kPower},
    {"temperature_celsius", Signal::kGpuTemp},
}};

}  // namespace

std::span<const SummaryQuantity> summary_quantities() { return kQuantities; }

std::optional<SpanStat> time_weighted(std::span<const Point> points, std::int64_t max_gap_ms) {
  if (points.empty()) return std::nullopt;
  std::int64_t first_weight = 1;
  if (points.size() > 1) {
    std::vector<std::int64_t> gaps;
    gaps.reserve(points.size() - 1);
    for (std::size_t i = 1; i < points.size(); ++i) gaps.push_back(points[i].t_ms - points[i - 1].t_ms);
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
    first_weight = std::clamp<std::int64_t>(gaps[gaps.size() / 2], 1, max_gap_ms);
  }
  SpanStat s{0, points[0].value, points[0].value};
  double weighted = 0, total = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::int64_t w = i == 0 ? first_weight : std::clamp<std::int64_t>(points[i].t_ms - points[i - 1].t_ms, 1, max_gap_ms);
    weighted += points[i].value * static_cast<double>(w);
    total += static_cast<double>(w);
    s.min = std::min(s.min, points[i].value);
    s.max = std::max(s.max, points[i].value);
  }
  s.mean = weighted / total;
  return s;
}

std::vector<GpuSpanSummary> summarize_span(std::span<const GpuHistory> histories, std::int64_t from_ms, std::int64_t to_ms,
                                           const Thresholds& thresholds) {
  std::vector<GpuSpanSummary> out;
  const std::int64_t window = std::clamp<std::int64_t>(to_ms - from_ms, 1, kSummaryVerdictWindowMs);
  const Diagnosis diagnosis = diagnose(histories, to_ms, window, thresholds);
  for (const auto& h : histories) {
    GpuSpanSummary s;
    s.identity = h.identity;
    for (const auto& q : kQuantities) {
      const auto points = h.window(q.signal, from_ms, to_ms);
      s.readings = std::max(s.readings, points.size());
      if (auto stat = time_weighted(points, kSummaryMaxGapMs)) s.stats.emplace_back(q.name, *stat);
    }
    for (const auto& g : diagnosis.gpus) {
      if (g.identity.key == h.identity.key && g.readings > 0) {
        s.verdict = g.verdict;
        s.verdict_summary = g.summary;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::expected<std::optional<std::string>, std::string> span_verdict(const ReadingSource& source, std::int64_t from_ms,
                                                                    std::int64_t to_ms, unsigned gpu,
                                                                    const Thresholds& thresholds) {
  const std::int64_t from = std::max(from_ms, to_ms - kSummaryVerdictWindowMs);
  auto histories = read_histories(source, from, to_ms);
  if (!histories) return std::unexpected(histories.error());
  const Diagnosis d = diagnose(*histories, to_ms, to_ms - from, thresholds);
  const std::string index = std::to_string(gpu);
  for (const auto& g : d.gpus) {
    if (g.identity.gpu == index && g.readings > 0) return std::string(verdict_id(g.verdict));
  }
  return std::nullopt;
}

}  // namespace gpuscope::analysis
