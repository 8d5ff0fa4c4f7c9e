#include "trace/memory_bandwidth.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "trace/rank_timeline.h"

namespace gpuscope::trace {
namespace {

// HTA gives a copy of zero duration one microsecond, so that its rate is finite.
constexpr std::int64_t kBandwidthZeroDurationNs = 1000;
constexpr std::size_t kBandwidthDirections = static_cast<std::size_t>(TransferDirection::kOther) + 1;

struct BandwidthEdge {
  std::int64_t ts_ns;
  double gbps;
};

// pandas' quantile over `values` (reordered): linear interpolation around q * (n - 1).
double bandwidth_quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(below), values.end());
  const double low = values[below];
  const double high = above == below ? low : *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(below) + 1, values.end());
  return low + (high - low) * (position - static_cast<double>(below));
}

void bandwidth_walk(DirectionBandwidth& d, std::vector<BandwidthEdge>& starts, std::vector<BandwidthEdge>& ends, bool series) {
  const auto earlier = [](const BandwidthEdge& a, const BandwidthEdge& b) { return a.ts_ns < b.ts_ns; };
  if (!std::is_sorted(starts.begin(), starts.end(), earlier)) std::stable_sort(starts.begin(), starts.end(), earlier);
  std::stable_sort(ends.begin(), ends.end(), earlier);
  std::vector<double> samples;
  samples.reserve(starts.size() + ends.size());
  double value = 0, sum = 0;
  std::int64_t active = 0, previous = 0;
  std::size_t i = 0, j = 0;
  const std::size_t n = starts.size();
  while (i < n || j < n) {
    const bool end = i == n || (j < n && ends[j].ts_ns <= starts[i].ts_ns);
    const BandwidthEdge& edge = end ? ends[j++] : starts[i++];
    if (active > 0) d.active_ns += edge.ts_ns - previous;
    if (end) {
      // With no copy left the rate is exactly zero, whatever rounding the sums left.
      value = --active == 0 ? 0.0 : std::max(0.0, value - edge.gbps);
    } else {
      ++active;
      value += edge.gbps;
    }
    if (value > 0) {
      samples.push_back(value);
      sum += value;
      d.max_gbps = std::max(d.max_gbps, value);
    }
    if (series) {
      if (!d.series.empty() && d.series.back().ts_ns == edge.ts_ns) {
        d.series.back().value = value;
      } else {
        d.series.push_back(CounterPoint{edge.ts_ns, value});
      }
    }
    previous = edge.ts_ns;
  }
  d.samples = samples.size();
  if (samples.empty()) return;
  d.mean_gbps = sum / static_cast<double>(samples.size());
  d.p50_gbps = bandwidth_quantile(samples, 0.50);
  d.p95_gbps = bandwidth_quantile(samples, 0.95);
}

}  // namespace

MemoryBandwidthReport analyze_memory_bandwidth(std::span<const GpuActivity> activities, const std::vector<std::string>& names,
                                               bool series) {
  std::array<std::vector<BandwidthEdge>, kBandwidthDirections> starts, ends;
  std::array<DirectionBandwidth, kBandwidthDirections> totals;
  std::vector<std::int8_t> direction_of_name;  // name_id -> TransferDirection, -1 not looked up yet
  for (const GpuActivity& a : activities) {
    if (a.kind != ActivityKind::kMemcpy && a.kind != ActivityKind::kMemset) continue;
    TransferDirection direction = TransferDirection::kMemset;
    if (a.kind == ActivityKind::kMemcpy) {
      if (a.name_id >= direction_of_name.size()) direction_of_name.resize(a.name_id + 1, -1);
      auto& cached = direction_of_name[a.name_id];
      if (cached < 0) cached = static_cast<std::int8_t>(a.name_id < names.size() ? direction_of_memcpy(names[a.name_id]) : TransferDirection::kOther);
      direction = static_cast<TransferDirection>(cached);
    }
    const auto k = static_cast<std::size_t>(direction);
    const std::int64_t duration = a.duration_ns > 0 ? a.duration_ns : kBandwidthZeroDurationNs;
    const double gbps = static_cast<double>(a.bytes()) / static_cast<double>(duration);
    starts[k].push_back(BandwidthEdge{a.start_ns, gbps});
    ends[k].push_back(BandwidthEdge{a.start_ns + duration, gbps});
    ++totals[k].copies;
    totals[k].bytes += a.bytes();
  }
  MemoryBandwidthReport report;
  for (std::size_t k = 0; k < kBandwidthDirections; ++k) {
    if (totals[k].copies == 0) continue;
    DirectionBandwidth d = std::move(totals[k]);
    d.direction = std::string(direction_name(static_cast<TransferDirection>(k)));
    bandwidth_walk(d, starts[k], ends[k], series);
    report.directions.push_back(std::move(d));
  }
  return report;
}

void append_memory_bandwidth_counters(const MemoryBandwidthReport& report, std::int64_t pid, std::vector<OverlayEvent>& out) {
  for (const auto& d : report.directions) {
    append_counter_track(fmt::format("Memory bandwidth {}", d.direction), "gpuscope", pid, "GB/s", d.series, out);
  }
}

}  // namespace gpuscope::trace
