#include "trace/step_analysis.h"

#include <algorithm>
#include <unordered_map>

#include <limits>

namespace gpuscope::trace {
namespace {

bool step_is_kernel(const GpuActivity& a) {
  return a.kind == ActivityKind::kComputeKernel || a.kind == ActivityKind::kCommunicationKernel;
}

std::int64_t step_overlap(std::int64_t a_start, std::int64_t a_end, std::int64_t b_start, std::int64_t b_end) {
  return std::max<std::int64_t>(0, std::min(a_end, b_end) - std::max(a_start, b_start));
}

// Busy, idle and host wait inside each step: the device's busy time is its window less its gaps.
void step_fill_busy(const StepAnalysisInput& in, std::vector<StepRow>& rows) {
  if (in.acts.empty()) {
    for (auto& row : rows) row.idle_ns = row.duration_ns;
    return;
  }
  std::int64_t window_end = in.acts.front().start_ns;
  for (const GpuActivity& a : in.acts) window_end = std::max(window_end, a.end_ns());
  const std::int64_t window_start = in.acts.front().start_ns;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ProfilerStep& s = in.steps[i];
    std::int64_t busy = step_overlap(s.start_ns, s.end_ns, window_start, window_end);
    auto it = std::partition_point(in.device_gaps.begin(), in.device_gaps.end(), [&](const IdleGap& g) { return g.end_ns <= s.start_ns; });
    for (; it != in.device_gaps.end() && it->start_ns < s.end_ns; ++it) {
      const std::int64_t o = step_overlap(s.start_ns, s.end_ns, it->start_ns, it->end_ns);
      busy -= o;
      if (it->kind == GapKind::kHostWait) rows[i].host_wait_ns += o;
    }
    rows[i].busy_ns = busy;
    rows[i].idle_ns = rows[i].duration_ns - busy;
  }
}

}  // namespace

StepsReport analyze_steps(const StepAnalysisInput& in) {
  StepsReport report;
  report.device = in.device;
  report.drop_incomplete = in.drop_incomplete;
  const std::size_t n = in.steps.size();
  if (n == 0) return report;

  std::vector<StepRow> rows(n);
  for (std::size_t i = 0; i < n; ++i) {
    rows[i].number = in.steps[i].number;
    rows[i].index = i;
    rows[i].start_offset_ns = in.steps[i].start_ns - in.trace_start_ns;
    rows[i].duration_ns = in.steps[i].end_ns - in.steps[i].start_ns;
  }
  step_fill_busy(in, rows);

  // The work each step launched; the end of the last of it, the first start of it, and the earliest
  // activity whose launch the trace lacks (launched before the profiler started).
  std::vector<std::unordered_map<std::uint32_t, std::int64_t>> per_kernel(n);
  std::vector<std::int64_t> work_end(n, std::numeric_limits<std::int64_t>::min());
  std::vector<std::int64_t> work_start(n, std::numeric_limits<std::int64_t>::max());
  std::vector<std::uint64_t> launched(n, 0);
  std::int64_t unlaunched_start = std::numeric_limits<std::int64_t>::max(), unlaunched_end = std::numeric_limits<std::int64_t>::min();
  for (const GpuActivity& a : in.acts) {
    if (a.launch_start_ns == kNoLaunch) {
      ++report.unattributed;
      unlaunched_start = std::min(unlaunched_start, a.start_ns);
      unlaunched_end = std::max(unlaunched_end, a.end_ns());
      continue;
    }
    const auto at = step_containing(in.steps, a.launch_start_ns);
    if (at < 0) {
      ++report.unattributed;
      continue;
    }
    const auto i = static_cast<std::size_t>(at);
    ++launched[i];
    work_end[i] = std::max(work_end[i], a.end_ns());
    work_start[i] = std::min(work_start[i], a.start_ns);
    if (!step_is_kernel(a)) continue;
    ++rows[i].kernels;
    rows[i].kernel_ns += a.duration_ns;
    per_kernel[i][a.name_id] += a.duration_ns;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (launched[i] > 0) rows[i].gpu_tail_ns = std::max<std::int64_t>(0, work_end[i] - in.steps[i].end_ns);
    std::uint32_t top = 0;
    std::int64_t top_ns = -1;
    for (const auto& [id, ns] : per_kernel[i]) {
      if (ns > top_ns || (ns == top_ns && in.names[id] < in.names[top])) top = id, top_ns = ns;
    }
    if (top_ns >= 0) rows[i].top_kernel = in.names[top], rows[i].top_kernel_ns = top_ns;
  }

  // Cut by the window's end: the trace ends while the GPU still runs work the last step launched
  // (nothing of any kind ends after it, so what it launched later may be missing), or the last step
  // launched nothing although every other step did.
  const std::size_t last = n - 1;
  if (launched[last] > 0 && work_end[last] >= in.trace_end_ns) {
    rows[last].incomplete = "the trace ends while the GPU still runs work the step launched";
  } else if (launched[last] == 0 && n > 1 && std::all_of(launched.begin(), launched.end() - 1, [](std::uint64_t k) { return k > 0; })) {
    rows[last].incomplete = "the step launched no GPU work in the trace, unlike every other step";
  }
  // Cut by the window's start: the GPU was still running work launched before the trace began (its
  // launch is not in the trace) when the first step's own work started, so the step's GPU time is not
  // its own.
  if (rows[0].incomplete.empty() && launched[0] > 0 && unlaunched_start < work_start[0] && unlaunched_end > in.steps[0].start_ns) {
    rows[0].incomplete = "the GPU was still running work launched before the trace began";
  }

  for (auto& row : rows) {
    if (in.drop_incomplete && !row.incomplete.empty()) {
      report.dropped.push_back(std::move(row));
    } else {
      report.rows.push_back(std::move(row));
    }
  }
  return report;
}

}  // namespace gpuscope::trace
