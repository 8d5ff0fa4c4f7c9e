#include "analysis/window_stats.h"

#include <algorithm>
#include <cmath>

namespace gpuscope::analysis {

Segment::Segment(const GpuHistory& history, std::int64_t from_ms, std::int64_t to_ms)
    : history_(history), from_ms_(from_ms), to_ms_(to_ms) {}

std::optional<Stat> Segment::stat(Signal s) const {
  const auto pts = history_.window(s, from_ms_, to_ms_);
  if (pts.empty()) return std::nullopt;
  Stat st;
  st.count = pts.size();
  st.min = st.max = st.first = pts.front().value;
  st.last = pts.back().value;
  double sum = 0;
  for (const Point& p : pts) {
    sum += p.value;
    st.min = std::min(st.min, p.value);
    st.max = std::max(st.max, p.value);
  }
  st.mean = sum / static_cast<double>(pts.size());
  return st;
}

std::optional<double> Segment::mean(Signal s) const {
  const auto st = stat(s);
  if (!st) return std::nullopt;
  return st->mean;
}

std::optional<double> Segment::last(Signal s) const {
  const auto pts = history_.window(s, from_ms_, to_ms_);
  if (pts.empty()) return std::nullopt;
  return pts.back().value;
}

std::optional<double> Segment::float_pipes() const {
  std::optional<double> sum;
  for (Signal s : {Signal::kFp32Active, Signal::kFp16Active, Signal::kFp64Active}) {
    if (const auto m = mean(s)) sum = sum.value_or(0) + *m;
  }
  return sum;
}

std::size_t Segment::readings() const {
  std::size_t n = 0;
  for (Signal s : {Signal::kGrActive, Signal::kSmActive, Signal::kUtilization}) {
    n = std::max(n, history_.window(s, from_ms_, to_ms_).size());
  }
  return n;
}

std::optional<double> Segment::throttle_share(std::uint64_t bits) const {
  const auto pts = history_.window(Signal::kThrottleReasons, from_ms_, to_ms_);
  if (pts.empty()) return std::nullopt;
  std::size_t on = 0;
  for (const Point& p : pts) {
    if ((static_cast<std::uint64_t>(p.value) & bits) != 0) ++on;
  }
  return static_cast<double>(on) / static_cast<double>(pts.size());
}

std::optional<double> pcie_link_bytes_per_second(double gen, double width) {
  // Per lane and direction, after 8b/10b (gen 1-2) or 128b/130b (gen 3-5) coding; gen 6 at its raw rate.
  static constexpr double kLaneBytes[] = {0, 250e6, 500e6, 984.6e6, 1969e6, 3938e6, 7877e6};
  const int g = static_cast<int>(std::lround(gen));
  if (g < 1 || g > 6 || !(width >= 1)) return std::nullopt;
  return kLaneBytes[g] * width;
}

std::optional<double> Segment::link_bytes_per_second() const {
  // The link's setting is read at a lower cadence than the activity: take the latest known one.
  const auto& gen = history_.points(Signal::kPcieLinkGen);
  const auto& width = history_.points(Signal::kPcieLinkWidth);
  auto latest = [&](const std::vector<Point>& pts) -> std::optional<double> {
    const auto it = std::upper_bound(pts.begin(), pts.end(), to_ms_,
                                     [](std::int64_t t, const Point& p) { return t < p.t_ms; });
    if (it == pts.begin()) return std::nullopt;
    return std::prev(it)->value;
  };
  const auto g = latest(gen);
  const auto w = latest(width);
  if (!g || !w) return std::nullopt;
  return pcie_link_bytes_per_second(*g, *w);
}

std::vector<std::vector<double>> Segment::activity() const {
  std::vector<std::vector<double>> out;
  auto values = [&](Signal s, double scale) {
    std::vector<double> v;
    for (const Point& p : history_.window(s, from_ms_, to_ms_)) v.push_back(p.value / scale);
    if (!v.empty()) out.push_back(std::move(v));
  };
  for (Signal s : {Signal::kGrActive, Signal::kSmActive, Signal::kTensorActive, Signal::kDramActive}) values(s, 1);
  // utilization.gpu only where nothing better is recorded: it jumps by tens of points from one reading
  // to the next under a steady sub-second sawtooth (0 to 28 % on the real H100).
  if (out.empty()) values(Signal::kUtilization, 100);
  // PCIe as a share of the link: copies start and stop without the SMs noticing.
  if (const auto link = link_bytes_per_second()) {
    values(Signal::kPcieRxBytes, *link);
    values(Signal::kPcieTxBytes, *link);
  }
  return out;
}

bool Segment::steady(double tolerance) const {
  for (const auto& v : activity()) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    if (*hi - *lo > tolerance) return false;
  }
  return true;
}

bool Segment::differs_from(const Segment& other, double tolerance) const {
  const auto mine = activity();
  const auto theirs = other.activity();
  if (mine.size() != theirs.size()) return true;
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (std::abs(mean(mine[i]) - mean(theirs[i])) > tolerance) return true;
  }
  return false;
}

std::size_t steady_run(const GpuHistory& h, std::span<const Point> times, std::size_t end, double tolerance) {
  if (end == 0) return 0;
  const std::int64_t from = times[0].t_ms - 1;
  const std::int64_t to = times[end - 1].t_ms;
  struct Track {
    std::span<const Point> points;
    double scale;
    std::size_t next;  // points[next, size) are in the run
    double lo, hi;
  };
  std::vector<Track> tracks;
  auto track = [&](Signal s, double scale) {
    const auto pts = h.window(s, from, to);
    if (!pts.empty()) tracks.push_back({pts, scale, pts.size(), 0, 0});
  };
  // The same ratios Segment::activity() compares.
  for (Signal s : {Signal::kGrActive, Signal::kSmActive, Signal::kTensorActive, Signal::kDramActive}) track(s, 1);
  if (tracks.empty()) track(Signal::kUtilization, 100);
  if (const auto link = Segment(h, from, to).link_bytes_per_second()) {
    track(Signal::kPcieRxBytes, *link);
    track(Signal::kPcieTxBytes, *link);
  }
  std::size_t run = 0;
  for (std::size_t i = end; i-- > 0;) {
    const std::int64_t start = times[i].t_ms;
    for (Track& tr : tracks) {
      while (tr.next > 0 && tr.points[tr.next - 1].t_ms >= start) {
        const double v = tr.points[--tr.next].value / tr.scale;
        const bool first = tr.next + 1 == tr.points.size();
        tr.lo = first ? v : std::min(tr.lo, v);
        tr.hi = first ? v : std::max(tr.hi, v);
      }
      if (tr.next < tr.points.size() && tr.hi - tr.lo > tolerance) return std::max<std::size_t>(run, 1);
    }
    ++run;
  }
  return run;
}

bool Segment::sawtooth(double peak, double low_share) const {
  auto pts = history_.window(Signal::kSmActive, from_ms_, to_ms_);
  if (pts.empty()) pts = history_.window(Signal::kGrActive, from_ms_, to_ms_);
  if (pts.size() < 4) return false;
  double top = 0;
  for (const Point& p : pts) top = std::max(top, p.value);
  if (top < peak) return false;
  // Low below half the peak, high from three quarters of it: noise around one level never rises.
  const double low = top * 0.5;
  const double high = top * 0.75;
  std::size_t lows = 0;
  int rises = 0;
  bool was_low = false;
  for (const Point& p : pts) {
    if (p.value < low) {
      ++lows;
      was_low = true;
    } else if (p.value >= high && was_low) {
      ++rises;
      was_low = false;
    }
  }
  return rises >= 2 && static_cast<double>(lows) >= low_share * static_cast<double>(pts.size());
}

}  // namespace gpuscope::analysis
