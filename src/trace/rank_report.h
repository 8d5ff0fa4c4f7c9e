// RankReport: the answers for one rank's trace, per device and per stream, in integer nanoseconds and
// bytes; the text and JSON reports only format these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace_parser.h"
// Per-step rows, idle-gap distributions, repeated kernel sequences.
#include "trace/idle_intervals.h"
#include "trace/kernel_sequences.h"
#include "trace/step_analysis.h"
// Launch-queue length and memory bandwidth over time.
#include "trace/memory_bandwidth.h"
#include "trace/queue_length.h"
// GPU time by op and annotation, and each step's critical path.
#include "trace/critical_path.h"
#include "trace/op_attribution.h"

namespace gpuscope::trace {

// part / whole, 0 when there is no whole.
inline double ratio(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// Idle time split as Holistic Trace Analysis does it: the GPU waited for the CPU to launch the next
// activity (host wait), a short gap between activities queued back to back (kernel wait), or anything
// else (syncs, waiting on another stream or rank).
struct IdleBreakdown {
  std::int64_t host_wait_ns = 0;
  std::int64_t kernel_wait_ns = 0;
  std::int64_t other_ns = 0;
  std::int64_t total() const { return host_wait_ns + kernel_wait_ns + other_ns; }
};

struct StreamReport {
  std::int64_t stream = -1;
  std::uint64_t activities = 0;
  std::int64_t window_ns = 0;  // first start to last end on this stream
  std::int64_t busy_ns = 0;
  IdleBreakdown idle;          // idle = window - busy
};

struct KernelReport {
  std::string name;
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t max_ns = 0;
  double share = 0;  // of all kernel time on the device
};

struct TransferReport {
  std::string direction;  // H2D, D2H, D2D, P2P, H2H, memset, other
  std::uint64_t count = 0;
  std::int64_t bytes = 0;
  std::int64_t duration_ns = 0;
  double bytes_per_second() const { return duration_ns > 0 ? static_cast<double>(bytes) * 1e9 / static_cast<double>(duration_ns) : 0; }
};

struct LaunchReport {
  std::uint64_t launched = 0;    // GPU activities matched to their runtime call
  std::uint64_t unmatched = 0;   // no runtime call with the same correlation id
  std::uint64_t calls = 0;       // distinct runtime calls that launched something
  std::int64_t call_total_ns = 0;
  std::int64_t call_max_ns = 0;
  std::int64_t delay_mean_ns = 0;  // activity start - launch call start
  std::int64_t delay_p50_ns = 0;
  std::int64_t delay_p95_ns = 0;
  std::int64_t delay_max_ns = 0;
  std::uint64_t kernels = 0;
  std::uint64_t short_kernels = 0;  // shorter than the short-kernel threshold
  std::int64_t short_kernel_ns = 0;
};

enum class VerdictKind { kDataLoadingBound, kLaunchBound, kCommunicationBound, kMemoryCopyBound, kComputeBound, kNoGpuWork };

struct Verdict {
  VerdictKind kind = VerdictKind::kNoGpuWork;
  std::string evidence;  // the numbers behind it, one sentence
  std::string fix;
};

std::string verdict_name(VerdictKind kind);  // "launch bound", ...
std::string verdict_key(VerdictKind kind);   // "launch_bound", ...

struct DeviceReport {
  std::int64_t device = -1;
  std::string name;
  std::int64_t window_start_ns = 0;
  std::int64_t window_end_ns = 0;
  std::int64_t busy_ns = 0;  // union of kernels, memcpy and memset
  std::int64_t window_ns() const { return window_end_ns - window_start_ns; }
  std::int64_t idle_ns() const { return window_ns() - busy_ns; }
  IdleBreakdown idle;  // the device's idle gaps, classified by the activity that ends each gap
  std::vector<StreamReport> streams;

  // Sums of durations (activities on different streams may overlap).
  std::int64_t computation_ns = 0;
  std::int64_t communication_ns = 0;
  std::int64_t memory_ns = 0;
  // Unions, for the overlap.
  std::int64_t computation_union_ns = 0;
  std::int64_t communication_union_ns = 0;
  std::int64_t overlap_ns = 0;  // communication running while computation runs

  std::uint64_t kernel_count = 0;
  std::int64_t kernel_total_ns = 0;
  std::vector<KernelReport> top_kernels;
  std::vector<TransferReport> transfers;
  LaunchReport launch;
  std::int64_t data_loading_idle_ns = 0;  // GPU idle inside DataLoader annotations

  Verdict verdict;

  // Issue 22. `idle` above is device-wide (a gap counts when no stream of the device is busy); the
  // per-stream split, HTA's, is in `streams`.
  IdleIntervalsReport idle_intervals;
  std::vector<KernelSequence> kernel_sequences;
  QueueLengthReport queue_length;        // per stream: launched, not started
  MemoryBandwidthReport memory_bandwidth;  // per direction, over time
};

struct StepStats {
  std::uint64_t count = 0;
  std::int64_t mean_ns = 0;
  std::int64_t median_ns = 0;  // the straggler is judged on it: one odd step (warm-up, a checkpoint) cannot move it
  std::int64_t max_ns = 0;
  // The profiler's step counter (ProfilerStep#N): ranks of one profiling window count the same steps.
  std::optional<std::int64_t> first_number;
  std::optional<std::int64_t> last_number;
  // With AnalysisOptions::exclude_last_step, the step left out (its number when it has one).
  bool last_excluded = false;
  std::optional<std::int64_t> excluded_number;
};

struct RankReport {
  std::string file;
  std::optional<std::int64_t> rank;
  std::optional<std::int64_t> world_size;
  std::optional<std::string> backend;
  ParseSummary parse;
  double parse_seconds = 0;
  std::int64_t span_start_ns = 0;
  std::int64_t span_end_ns = 0;
  std::int64_t span_ns() const { return span_end_ns - span_start_ns; }
  StepStats steps;
  std::int64_t data_loading_ns = 0;  // union of DataLoader annotations
  std::vector<DeviceReport> devices;
  std::vector<KernelReport> python_functions;  // only with --python-functions; share of span
  std::uint64_t runtime_calls = 0;
  StepsReport per_step;  // the ProfilerStep rows on the main device
  OpAttribution ops;             // GPU time by aten op and by annotation
  CriticalPathReport critical_path;  // what bounds each step

  // The device doing the most work: its verdict is the rank's.
  const DeviceReport* main_device() const;
};

}  // namespace gpuscope::trace
