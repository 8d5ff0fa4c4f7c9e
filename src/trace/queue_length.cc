#include "trace/queue_length.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "trace/mostly_ordered_sort.h"
#include "trace/rank_timeline.h"

namespace gpuscope::trace {
namespace {

// The launch times (+1) and start times (-1) of one stream's activities.
struct QueueStreamEvents {
  std::int64_t stream = -1;
  std::vector<std::int64_t> launches;
  std::vector<std::int64_t> starts;
};

// The k-th smallest sample (0-based), from the count of samples of each length.
std::int64_t queue_sample_at(const std::vector<std::uint64_t>& histogram, std::uint64_t k) {
  std::uint64_t seen = 0;
  for (std::size_t v = 0; v < histogram.size(); ++v) {
    seen += histogram[v];
    if (seen > k) return static_cast<std::int64_t>(v);
  }
  return histogram.empty() ? 0 : static_cast<std::int64_t>(histogram.size() - 1);
}

// pandas' quantile (linear interpolation between the two samples around q * (n - 1)).
double queue_quantile(const std::vector<std::uint64_t>& histogram, std::uint64_t n, double q) {
  if (n == 0) return 0;
  const double position = q * static_cast<double>(n - 1);
  const auto below = static_cast<std::uint64_t>(std::floor(position));
  const std::uint64_t above = std::min(below + 1, n - 1);
  const auto low = static_cast<double>(queue_sample_at(histogram, below));
  const auto high = static_cast<double>(queue_sample_at(histogram, above));
  return low + (high - low) * (position - static_cast<double>(below));
}

StreamQueueLength queue_walk(QueueStreamEvents& events, const QueueLengthOptions& options) {
  StreamQueueLength s;
  s.stream = events.stream;
  s.launches = events.starts.size();
  auto& launches = events.launches;
  auto& starts = events.starts;
  // A stream runs its work in launch order, so both lists come nearly sorted.
  if (!std::is_sorted(starts.begin(), starts.end())) sort_mostly_ordered(starts.begin(), starts.end(), std::less<>());
  if (!std::is_sorted(launches.begin(), launches.end())) sort_mostly_ordered(launches.begin(), launches.end(), std::less<>());

  // Lengths are never negative (each activity counts as launched no later than it starts, and launches
  // go first at one timestamp), so the samples fit a histogram indexed by length.
  std::vector<std::uint64_t> histogram(1, 0);
  double integral = 0;
  double sum = 0;
  std::int64_t length = 0;
  std::int64_t previous = 0;
  const std::size_t n_launches = launches.size(), n_starts = starts.size();
  std::size_t i = 0, j = 0;
  while (i < n_launches || j < n_starts) {
    const bool launch = j == n_starts || (i < n_launches && launches[i] <= starts[j]);
    const std::int64_t ts = launch ? launches[i++] : starts[j++];
    if (s.samples > 0) {
      const std::int64_t dt = ts - previous;
      integral += static_cast<double>(length) * static_cast<double>(dt);
      if (length >= options.max_queue_length) s.full_ns += dt;
    }
    length += launch ? 1 : -1;
    if (static_cast<std::size_t>(length) >= histogram.size()) histogram.resize(static_cast<std::size_t>(length) + 1, 0);
    ++histogram[static_cast<std::size_t>(length)];
    ++s.samples;
    sum += static_cast<double>(length);
    s.max = std::max(s.max, length);
    if (options.series) {
      if (!s.series.empty() && s.series.back().ts_ns == ts) {
        s.series.back().value = static_cast<double>(length);
      } else {
        s.series.push_back(CounterPoint{ts, static_cast<double>(length)});
      }
    }
    previous = ts;
  }
  if (s.samples == 0) return s;
  s.mean = sum / static_cast<double>(s.samples);
  s.p50 = queue_quantile(histogram, s.samples, 0.50);
  s.p95 = queue_quantile(histogram, s.samples, 0.95);
  const std::int64_t span = previous - launches.front();
  s.time_weighted_mean = span > 0 ? integral / static_cast<double>(span) : 0;
  return s;
}

}  // namespace

std::int64_t QueueLengthReport::max() const {
  std::int64_t m = 0;
  for (const auto& s : streams) m = std::max(m, s.max);
  return m;
}

QueueLengthReport analyze_queue_length(std::span<const GpuActivity> activities, const QueueLengthOptions& options) {
  QueueLengthReport report;
  report.max_queue_length = options.max_queue_length;
  std::vector<QueueStreamEvents> streams;  // by stream id
  std::size_t last = 0;
  for (const GpuActivity& a : activities) {
    if (a.launch_start_ns == kNoLaunch || a.stream < 0) continue;
    if (last >= streams.size() || streams[last].stream != a.stream) {
      const auto it = std::lower_bound(streams.begin(), streams.end(), a.stream,
                                       [](const QueueStreamEvents& s, std::int64_t id) { return s.stream < id; });
      last = static_cast<std::size_t>(it - streams.begin());
      if (it == streams.end() || it->stream != a.stream) streams.insert(it, QueueStreamEvents{a.stream, {}, {}});
    }
    streams[last].launches.push_back(std::min(a.launch_start_ns, a.start_ns));
    streams[last].starts.push_back(a.start_ns);
  }
  report.streams.reserve(streams.size());
  for (auto& events : streams) {
    report.streams.push_back(queue_walk(events, options));
    report.full_ns += report.streams.back().full_ns;
  }
  return report;
}

void append_queue_length_counters(const QueueLengthReport& report, std::int64_t pid, std::vector<OverlayEvent>& out) {
  for (const auto& s : report.streams) {
    append_counter_track(fmt::format("Queue length stream {}", s.stream), "gpuscope", pid, "queued", s.series, out);
  }
}

}  // namespace gpuscope::trace
