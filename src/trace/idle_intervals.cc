#include "trace/idle_intervals.h"

#include <algorithm>
#include <unordered_map>

namespace gpuscope::trace {
namespace {

// Nearest rank at round(q (n - 1)). Called with rising q, each search starts past the last one's
// index: nth_element left everything above it there.
std::int64_t idle_nearest_rank(std::vector<std::int64_t>& values, double q, std::size_t& from) {
  const auto k = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  std::nth_element(values.begin() + static_cast<std::ptrdiff_t>(from), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  from = k;
  return values[k];
}

std::int64_t idle_overlap(std::int64_t a_start, std::int64_t a_end, std::int64_t b_start, std::int64_t b_end) {
  return std::max<std::int64_t>(0, std::min(a_end, b_end) - std::max(a_start, b_start));
}

std::string_view idle_cpu_kind_key(CpuEventKind kind) {
  switch (kind) {
    case CpuEventKind::kCpuOp: return "cpu_op";
    case CpuEventKind::kUserAnnotation: return "user_annotation";
    case CpuEventKind::kGpuUserAnnotation: return "gpu_user_annotation";
  }
  return "cpu_op";
}

// One pass over the CPU events for all the gaps explained: each keeps the events that overlap it.
struct IdleCandidates {
  std::vector<std::pair<const CpuEvent*, std::int64_t>> events;  // with how much of the gap each covers
};

void idle_explain_gap(const IdleIntervalsInput& in, GapContext& c, const IdleCandidates& candidates) {
  const std::int64_t gs = c.gap.start_ns, ge = c.gap.end_ns, len = c.gap.length();
  // The CPU-side range covering most of the gap; among those covering nearly as much, the innermost
  // (shortest): a ProfilerStep or "forward" annotation covers everything and says little.
  const CpuEvent* best = nullptr;
  std::int64_t best_cover = 0;
  for (const auto& [e, cover] : candidates.events) {
    if (cover > best_cover) best_cover = cover, best = e;
  }
  if (best != nullptr) {
    const CpuEvent* inner = best;
    std::int64_t inner_cover = best_cover;
    for (const auto& [e, cover] : candidates.events) {
      if (e->duration_ns < inner->duration_ns && 10 * cover >= 9 * best_cover) inner = e, inner_cover = cover;
    }
    c.cpu_name = in.timeline.names[inner->name_id];
    c.cpu_kind = std::string(idle_cpu_kind_key(inner->kind));
    c.cpu_tid = inner->tid;
    c.cpu_cover = ratio_of(inner_cover, len);
  }
  std::int64_t runtime_cover = 0;
  for (const LongRuntimeCall& r : in.runtime_calls) {
    if (r.start_ns >= ge) break;
    const std::int64_t cover = idle_overlap(gs, ge, r.start_ns, r.end_ns);
    if (cover > runtime_cover) runtime_cover = cover, c.runtime_name = in.timeline.names[r.name_id];
  }
  c.runtime_cover = ratio_of(runtime_cover, len);
  std::int64_t loading = 0;
  for (const Interval& d : in.data_loading) loading += idle_overlap(gs, ge, d.start, d.end);
  c.data_loading_cover = ratio_of(loading, len);
  if (const auto i = step_containing(in.steps, gs); i >= 0) c.step = in.steps[static_cast<std::size_t>(i)].number;
}

}  // namespace

double ratio_of(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string_view gap_kind_key(GapKind kind) {
  switch (kind) {
    case GapKind::kHostWait: return "host_wait";
    case GapKind::kKernelWait: return "kernel_wait";
    case GapKind::kOther: return "other";
  }
  return "other";
}

GapKind classify_gap_kind(std::int64_t gap_start, const GpuActivity& next, std::int64_t kernel_wait_threshold_ns) {
  if (next.launch_start_ns != kNoLaunch && next.launch_start_ns > gap_start) return GapKind::kHostWait;
  return next.start_ns - gap_start < kernel_wait_threshold_ns ? GapKind::kKernelWait : GapKind::kOther;
}

DeviceGaps find_idle_gaps(std::span<const GpuActivity> acts, std::int64_t kernel_wait_threshold_ns) {
  DeviceGaps out;
  if (acts.empty()) return out;
  struct Cursor {
    std::int64_t covered_end = 0;
    std::vector<IdleGap> gaps;
  };
  std::vector<std::pair<std::int32_t, Cursor>> streams;
  std::unordered_map<std::int32_t, std::size_t> index;
  std::int64_t covered_end = acts.front().start_ns;
  std::int32_t last_stream = 0;
  std::size_t last_at = static_cast<std::size_t>(-1);
  for (const GpuActivity& a : acts) {
    if (a.start_ns > covered_end) {
      out.device.push_back(IdleGap{covered_end, a.start_ns, classify_gap_kind(covered_end, a, kernel_wait_threshold_ns)});
    }
    covered_end = std::max(covered_end, a.end_ns());
    if (last_at == static_cast<std::size_t>(-1) || a.stream != last_stream) {
      auto [it, added] = index.try_emplace(a.stream, streams.size());
      if (added) streams.push_back({a.stream, Cursor{a.start_ns, {}}});
      last_stream = a.stream;
      last_at = it->second;
    }
    Cursor& s = streams[last_at].second;
    if (a.start_ns > s.covered_end) {
      s.gaps.push_back(IdleGap{s.covered_end, a.start_ns, classify_gap_kind(s.covered_end, a, kernel_wait_threshold_ns)});
    }
    s.covered_end = std::max(s.covered_end, a.end_ns());
  }
  std::sort(streams.begin(), streams.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  out.streams.reserve(streams.size());
  for (auto& [id, cursor] : streams) out.streams.emplace_back(id, std::move(cursor.gaps));
  return out;
}

GapDistribution gap_distribution(std::span<const IdleGap> gaps, std::int64_t trace_start_ns) {
  GapDistribution d;
  if (gaps.empty()) return d;
  std::vector<std::int64_t> lengths;
  lengths.reserve(gaps.size());
  const IdleGap* longest = &gaps.front();
  for (const IdleGap& g : gaps) {
    lengths.push_back(g.length());
    d.total_ns += g.length();
    if (g.length() > longest->length()) longest = &g;
  }
  d.count = gaps.size();
  d.longest_ns = longest->length();
  d.longest_start_ns = longest->start_ns - trace_start_ns;
  d.longest_kind = longest->kind;
  std::size_t from = 0;
  d.p50_ns = idle_nearest_rank(lengths, 0.50, from);
  d.p90_ns = idle_nearest_rank(lengths, 0.90, from);
  d.p99_ns = idle_nearest_rank(lengths, 0.99, from);
  return d;
}

std::vector<LongRuntimeCall> long_runtime_calls(const std::vector<RuntimeCall>& calls, std::int64_t min_ns) {
  std::vector<LongRuntimeCall> out;
  for (const RuntimeCall& c : calls) {
    if (c.duration_ns >= min_ns) out.push_back(LongRuntimeCall{c.start_ns, c.start_ns + c.duration_ns, c.name_id});
  }
  std::sort(out.begin(), out.end(), [](const LongRuntimeCall& a, const LongRuntimeCall& b) { return a.start_ns < b.start_ns; });
  return out;
}

IdleIntervalsReport analyze_idle_intervals(const IdleIntervalsInput& in) {
  IdleIntervalsReport r;
  r.device = gap_distribution(in.gaps.device, in.trace_start_ns);
  for (const auto& [stream, gaps] : in.gaps.streams) r.streams.push_back(StreamGaps{stream, gap_distribution(gaps, in.trace_start_ns)});
  r.cpu_events = std::any_of(in.timeline.cpu_events.begin(), in.timeline.cpu_events.end(),
                             [](const CpuEvent& e) { return e.kind != CpuEventKind::kGpuUserAnnotation; });

  std::vector<const IdleGap*> order;
  order.reserve(in.gaps.device.size());
  for (const IdleGap& g : in.gaps.device) order.push_back(&g);
  const std::size_t n = std::min(in.explain, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(), [](const IdleGap* a, const IdleGap* b) {
    return a->length() != b->length() ? a->length() > b->length() : a->start_ns < b->start_ns;
  });
  std::vector<IdleCandidates> candidates(n);
  if (n > 0) {
    for (const CpuEvent& e : in.timeline.cpu_events) {
      if (e.kind == CpuEventKind::kGpuUserAnnotation) continue;
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t cover = idle_overlap(order[i]->start_ns, order[i]->end_ns, e.start_ns, e.end_ns());
        if (cover > 0) candidates[i].events.emplace_back(&e, cover);
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    GapContext c;
    c.gap = *order[i];
    c.start_offset_ns = c.gap.start_ns - in.trace_start_ns;
    idle_explain_gap(in, c, candidates[i]);
    r.longest.push_back(std::move(c));
  }
  return r;
}

}  // namespace gpuscope::trace
