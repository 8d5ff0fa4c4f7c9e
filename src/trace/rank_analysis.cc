#include "trace/rank_analysis.h"

#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <unordered_map>

#include "trace/device_extras.h"
#include "trace/interval_math.h"
#include "trace/mostly_ordered_sort.h"
#include "trace/verdict.h"

namespace gpuscope::trace {
namespace {

std::int64_t percentile(std::vector<std::int64_t>& values, double q) {
  if (values.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

// The HTA rule for one idle gap that ends when `next` starts: host wait when the CPU had not even
// started launching `next` when the GPU went idle, else kernel wait when short, else other.
void classify_gap(IdleBreakdown& idle, std::int64_t gap_start, const GpuActivity& next, std::int64_t threshold_ns) {
  const std::int64_t gap = next.start_ns - gap_start;
  if (gap <= 0) return;
  if (next.launch_start_ns != kNoLaunch && next.launch_start_ns > gap_start) {
    idle.host_wait_ns += gap;
  } else if (gap < threshold_ns) {
    idle.kernel_wait_ns += gap;
  } else {
    idle.other_ns += gap;
  }
}

struct LaunchAccumulator {
  LaunchReport report;
  std::vector<std::int64_t> delays;
  std::int64_t delay_sum = 0;
};

// For each correlation id, the runtime call that made it (the earliest, should one id have several):
// `launch_of(id)` is that call or null. Most runtime calls launch nothing (cudaGetDevice, cudaEventRecord,
// ...: 60% of them in the real trace), so the calls whose id no activity has are set aside first, with a
// bitmap of the activities' ids, and only the rest is sorted by id for binary search (sorting all 25k
// calls was 3% of a run).
class LaunchIndex {
 public:
  LaunchIndex(std::vector<RuntimeCall>& calls, const std::vector<GpuActivity>& activities) {
    std::span<RuntimeCall> used(calls);
    std::int64_t low = std::numeric_limits<std::int64_t>::max(), high = -1;
    for (const GpuActivity& a : activities) {
      if (a.correlation < 0) continue;
      low = std::min(low, a.correlation);
      high = std::max(high, a.correlation);
    }
    if (high < 0) {
      used = used.first(0);
    } else if (static_cast<std::uint64_t>(high - low) < 64 * activities.size() + 4096) {
      // At most 8 bytes of bitmap per activity.
      std::vector<bool> launched(static_cast<std::size_t>(high - low) + 1);
      for (const GpuActivity& a : activities) {
        if (a.correlation >= 0) launched[static_cast<std::size_t>(a.correlation - low)] = true;
      }
      // Kept in their order (nearly by id already), the others swapped behind them: every call stays in
      // the array (the op attribution and the critical path read the syncs, which launch nothing).
      std::size_t kept = 0;
      for (std::size_t i = 0; i < calls.size(); ++i) {
        const RuntimeCall& c = calls[i];
        if (c.correlation < low || c.correlation > high || !launched[static_cast<std::size_t>(c.correlation - low)]) continue;
        if (i != kept) std::swap(calls[kept], calls[i]);
        ++kept;
      }
      used = used.first(kept);
    }
    sort_mostly_ordered(used.begin(), used.end(), [](const RuntimeCall& a, const RuntimeCall& b) {
      return a.correlation != b.correlation ? a.correlation < b.correlation : a.start_ns < b.start_ns;
    });
    sorted_ = used;
  }

  // Activities come nearly in the order of their ids, so the search starts where the last one ended
  // and widens in steps of 1, 2, 4, ... (a binary search from scratch missed the cache on every step).
  const RuntimeCall* launch_of(std::int64_t correlation) {
    if (correlation < 0 || sorted_.empty()) return nullptr;
    const auto below = [](const RuntimeCall& c, std::int64_t id) { return c.correlation < id; };
    std::size_t from = 0, to = sorted_.size();  // the first call with this id or a later one is in [from, to]
    const std::size_t n = sorted_.size();
    std::size_t at = std::min(hint_, n - 1);
    if (sorted_[at].correlation < correlation) {
      std::size_t step = 1;
      while (at + step < n && sorted_[at + step].correlation < correlation) at += step, step *= 2;
      from = at + 1;
      to = std::min(n, at + step);
    } else {
      std::size_t step = 1;
      while (at >= step && sorted_[at - step].correlation >= correlation) at -= step, step *= 2;
      from = at >= step ? at - step + 1 : 0;
      to = at;
    }
    const auto it = std::lower_bound(sorted_.begin() + static_cast<std::ptrdiff_t>(from),
                                     sorted_.begin() + static_cast<std::ptrdiff_t>(to), correlation, below);
    hint_ = static_cast<std::size_t>(it - sorted_.begin());
    return it != sorted_.end() && it->correlation == correlation ? &*it : nullptr;
  }

 private:
  std::span<const RuntimeCall> sorted_;
  std::size_t hint_ = 0;
};

// Matches GPU activities to the runtime calls that launched them (same correlation id), writing each
// launch's start into the activity and the launch statistics per device. A call counts once however
// many activities it started (a CUDA graph launch starts many).
std::map<std::int64_t, LaunchAccumulator> join_launches(RankTimeline& timeline) {
  LaunchIndex index(timeline.runtime_calls, timeline.activities);
  std::map<std::int64_t, LaunchAccumulator> per_device;
  std::vector<bool> counted(timeline.runtime_calls.size());
  LaunchAccumulator* acc = nullptr;
  std::int64_t acc_device = 0;
  for (GpuActivity& a : timeline.activities) {
    if (acc == nullptr || a.device != acc_device) acc = &per_device[a.device], acc_device = a.device;
    const RuntimeCall* call = index.launch_of(a.correlation);
    if (call == nullptr) {
      ++acc->report.unmatched;
      continue;
    }
    a.launch_start_ns = call->start_ns;
    ++acc->report.launched;
    const std::int64_t delay = a.start_ns - call->start_ns;
    acc->delays.push_back(delay);
    acc->delay_sum += delay;
    acc->report.delay_max_ns = acc->delays.size() == 1 ? delay : std::max(acc->report.delay_max_ns, delay);
    if (const auto i = static_cast<std::size_t>(call - timeline.runtime_calls.data()); !counted[i]) {
      counted[i] = true;
      ++acc->report.calls;
      acc->report.call_total_ns += call->duration_ns;
      acc->report.call_max_ns = std::max(acc->report.call_max_ns, call->duration_ns);
    }
  }
  for (auto& [device, a] : per_device) {
    if (a.delays.empty()) continue;
    a.report.delay_mean_ns = a.delay_sum / static_cast<std::int64_t>(a.delays.size());
    a.report.delay_p50_ns = percentile(a.delays, 0.50);
    a.report.delay_p95_ns = percentile(a.delays, 0.95);
    a.delays.clear();
    a.delays.shrink_to_fit();
  }
  return per_device;
}

std::vector<StreamReport> analyze_streams(std::vector<const GpuActivity*> acts, std::int64_t threshold_ns) {
  std::stable_sort(acts.begin(), acts.end(), [](const GpuActivity* a, const GpuActivity* b) {
    return a->stream != b->stream ? a->stream < b->stream : a->start_ns < b->start_ns;
  });
  std::vector<StreamReport> streams;
  std::size_t i = 0;
  while (i < acts.size()) {
    StreamReport s;
    s.stream = acts[i]->stream;
    const std::int64_t first = acts[i]->start_ns;
    std::int64_t covered_end = acts[i]->start_ns;  // end of the busy time so far on this stream
    for (; i < acts.size() && acts[i]->stream == s.stream; ++i) {
      const GpuActivity& a = *acts[i];
      ++s.activities;
      if (a.start_ns > covered_end) classify_gap(s.idle, covered_end, a, threshold_ns);
      if (a.end_ns() > covered_end) {
        s.busy_ns += a.end_ns() - std::max(a.start_ns, covered_end);
        covered_end = a.end_ns();
      }
    }
    s.window_ns = covered_end - first;
    streams.push_back(s);
  }
  return streams;
}

DeviceReport analyze_device(const RankTimeline& timeline, std::span<const GpuActivity> acts,
                            const std::vector<Interval>& data_loading, const AnalysisOptions& options) {
  DeviceReport d;
  d.device = acts.front().device;
  if (auto it = timeline.header.device_names.find(d.device); it != timeline.header.device_names.end()) d.name = it->second;
  d.window_start_ns = acts.front().start_ns;

  // Busy time and the device's idle gaps, in one sweep over activities sorted by start.
  std::vector<Interval> idle_gaps;
  std::vector<Interval> computation, communication;
  std::unordered_map<std::uint32_t, NamedTotals> kernels;
  std::int64_t covered_end = acts.front().start_ns;
  for (const GpuActivity& a : acts) {
    if (a.start_ns > covered_end) {
      classify_gap(d.idle, covered_end, a, options.kernel_wait_threshold_ns);
      idle_gaps.push_back(Interval{covered_end, a.start_ns});
    }
    if (a.end_ns() > covered_end) {
      d.busy_ns += a.end_ns() - std::max(a.start_ns, covered_end);
      covered_end = a.end_ns();
    }
    switch (a.kind) {
      case ActivityKind::kComputeKernel:
        d.computation_ns += a.duration_ns;
        computation.push_back(Interval{a.start_ns, a.end_ns()});
        break;
      case ActivityKind::kCommunicationKernel:
        d.communication_ns += a.duration_ns;
        communication.push_back(Interval{a.start_ns, a.end_ns()});
        break;
      case ActivityKind::kMemcpy:
      case ActivityKind::kMemset:
        d.memory_ns += a.duration_ns;
        break;
    }
    if (a.kind == ActivityKind::kComputeKernel || a.kind == ActivityKind::kCommunicationKernel) {
      auto& k = kernels[a.name_id];
      ++k.count;
      k.total_ns += a.duration_ns;
      k.max_ns = std::max(k.max_ns, a.duration_ns);
      ++d.kernel_count;
      d.kernel_total_ns += a.duration_ns;
      ++d.launch.kernels;
      if (a.duration_ns < options.short_kernel_threshold_ns) {
        ++d.launch.short_kernels;
        d.launch.short_kernel_ns += a.duration_ns;
      }
    }
  }
  d.window_end_ns = covered_end;

  const auto computation_union = merge_intervals(std::move(computation));
  const auto communication_union = merge_intervals(std::move(communication));
  d.computation_union_ns = total_length(computation_union);
  d.communication_union_ns = total_length(communication_union);
  d.overlap_ns = intersection_length(computation_union, communication_union);
  d.data_loading_idle_ns = intersection_length(idle_gaps, data_loading);

  std::vector<KernelReport> all;
  all.reserve(kernels.size());
  for (const auto& [id, k] : kernels) {
    all.push_back(KernelReport{timeline.names[id], k.count, k.total_ns, k.max_ns,
                               d.kernel_total_ns > 0 ? static_cast<double>(k.total_ns) / static_cast<double>(d.kernel_total_ns) : 0});
  }
  const std::size_t top = std::min(options.top, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(top), all.end(),
                    [](const KernelReport& a, const KernelReport& b) {
                      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
                    });
  all.resize(top);
  d.top_kernels = std::move(all);

  for (const auto& [key, totals] : timeline.transfers) {
    if (key.first != d.device) continue;
    d.transfers.push_back(TransferReport{std::string(direction_name(key.second)), totals.count, totals.bytes, totals.duration_ns});
  }

  std::vector<const GpuActivity*> pointers;
  pointers.reserve(acts.size());
  for (const GpuActivity& a : acts) pointers.push_back(&a);
  d.streams = analyze_streams(std::move(pointers), options.kernel_wait_threshold_ns);
  return d;
}

}  // namespace

const DeviceReport* RankReport::main_device() const {
  const DeviceReport* best = nullptr;
  for (const auto& d : devices) {
    if (best == nullptr || d.busy_ns > best->busy_ns) best = &d;
  }
  return best;
}

RankReport analyze_rank(RankTimeline& timeline, const AnalysisOptions& options) {
  RankReport report;
  report.rank = timeline.header.rank;
  report.world_size = timeline.header.world_size;
  report.backend = timeline.header.backend;
  report.runtime_calls = timeline.runtime_calls.size();
  if (timeline.first_ns <= timeline.last_ns) {
    report.span_start_ns = timeline.first_ns;
    report.span_end_ns = timeline.last_ns;
  }

  std::int64_t excluded_step_start = std::numeric_limits<std::int64_t>::min();
  if (options.exclude_last_step && !timeline.steps.empty()) {
    const auto last = std::max_element(timeline.steps.begin(), timeline.steps.end(),
                                       [](const Interval& a, const Interval& b) { return a.start < b.start; });
    const auto index = last - timeline.steps.begin();
    excluded_step_start = last->start;
    report.steps.last_excluded = true;
    if (timeline.step_numbers.size() == timeline.steps.size()) {
      report.steps.excluded_number = timeline.step_numbers[static_cast<std::size_t>(index)];
      timeline.step_numbers.erase(timeline.step_numbers.begin() + index);
    }
    timeline.steps.erase(last);
  }
  if (!timeline.steps.empty()) {
    std::int64_t sum = 0;
    for (const Interval& s : timeline.steps) {
      sum += s.end - s.start;
      report.steps.max_ns = std::max(report.steps.max_ns, s.end - s.start);
    }
    report.steps.count = timeline.steps.size();
    report.steps.mean_ns = sum / static_cast<std::int64_t>(timeline.steps.size());
    std::vector<std::int64_t> lengths;
    lengths.reserve(timeline.steps.size());
    for (const Interval& s : timeline.steps) lengths.push_back(s.end - s.start);
    std::sort(lengths.begin(), lengths.end());
    const std::size_t n = lengths.size();
    report.steps.median_ns = n % 2 == 1 ? lengths[n / 2] : (lengths[n / 2 - 1] + lengths[n / 2]) / 2;
  }
  if (!timeline.step_numbers.empty()) {
    const auto [first, last] = std::minmax_element(timeline.step_numbers.begin(), timeline.step_numbers.end());
    report.steps.first_number = *first;
    report.steps.last_number = *last;
  }
  const auto data_loading = merge_intervals(timeline.data_loading);
  report.data_loading_ns = total_length(data_loading);

  // Issue 22: the long runtime calls, kept before the launch join reorders them, explain idle gaps.
  const auto long_calls = long_runtime_calls(timeline.runtime_calls, kExplainingCallMinNs);
  const auto profiler_step_list = profiler_steps(timeline);
  const RankExtrasInput extras{timeline, long_calls, data_loading, profiler_step_list, report.span_start_ns, options};
  std::vector<std::pair<std::span<const GpuActivity>, DeviceGaps>> device_gaps;

  auto launches = join_launches(timeline);
  auto& acts = timeline.activities;
  sort_mostly_ordered(acts.begin(), acts.end(), [](const GpuActivity& a, const GpuActivity& b) {
    if (a.device != b.device) return a.device < b.device;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.duration_ns < b.duration_ns;
  });
  std::size_t i = 0;
  while (i < acts.size()) {
    std::size_t j = i;
    while (j < acts.size() && acts[j].device == acts[i].device) ++j;
    DeviceReport d = analyze_device(timeline, std::span<const GpuActivity>(acts.data() + i, j - i), data_loading, options);
    const LaunchReport counted = d.launch;
    d.launch = launches[d.device].report;
    d.launch.kernels = counted.kernels;
    d.launch.short_kernels = counted.short_kernels;
    d.launch.short_kernel_ns = counted.short_kernel_ns;
    d.verdict = decide_verdict(d);
    const std::span<const GpuActivity> device_acts(acts.data() + i, j - i);
    device_gaps.emplace_back(device_acts, analyze_device_extras(d, device_acts, extras));
    d.queue_length = analyze_queue_length(device_acts, {options.max_queue_length, options.counter_series});
    d.memory_bandwidth = analyze_memory_bandwidth(device_acts, timeline.names, options.counter_series);
    report.devices.push_back(std::move(d));
    i = j;
  }
  if (const DeviceReport* main = report.main_device(); main != nullptr) {
    const auto& [main_acts, main_gaps] = device_gaps[static_cast<std::size_t>(main - report.devices.data())];
    report.per_step = analyze_rank_steps(main->device, main_acts, main_gaps, extras, report.span_end_ns);
  } else {
    report.per_step = analyze_rank_steps(-1, {}, DeviceGaps{}, extras, report.span_end_ns);
  }

  if (!timeline.python_functions.empty()) {
    for (const auto& [name, t] : timeline.python_functions) {
      report.python_functions.push_back(KernelReport{
          name, t.count, t.total_ns, t.max_ns,
          report.span_ns() > 0 ? static_cast<double>(t.total_ns) / static_cast<double>(report.span_ns()) : 0});
    }
    const std::size_t top = std::min(options.top, report.python_functions.size());
    std::partial_sort(report.python_functions.begin(), report.python_functions.begin() + static_cast<std::ptrdiff_t>(top),
                      report.python_functions.end(),
                      [](const KernelReport& a, const KernelReport& b) { return a.total_ns > b.total_ns; });
    report.python_functions.resize(top);
  }
  // Issue 22, the CPU side: ops and annotations by the GPU time they launched, and each step's critical path.
  const CpuNesting nesting = nest_cpu_events(timeline);
  report.ops = attribute_ops(timeline, nesting);
  report.critical_path = critical_paths(timeline, nesting, options.top, options.critical_path_spans, excluded_step_start);
  return report;
}

}  // namespace gpuscope::trace
