// Launch-queue length per CUDA stream over time, as Holistic Trace Analysis defines it
// (TraceCounters.get_queue_length_time_series / _summary, get_time_spent_blocked_on_full_queue): the
// number of operations launched on a stream and not started yet. It goes up by one at the start of the
// runtime call that launched an activity (matched by correlation id) and down by one when the kernel,
// memcpy or memset starts. A stream whose queue reaches CUDA's limit (1024 pending launches) makes the
// next launch call block: the time spent at that length is time the CPU could not run ahead.
//
// Conventions, where HTA leaves them open (docs in /work/notes/trace_counters.md):
// - every activity matched to a runtime call counts (HTA: kernel launches, cudaMemcpyAsync and
//   cudaMemsetAsync only; the real traces launch nothing else);
// - at one timestamp, launches count before starts, so a queue never dips below zero; an activity that
//   starts before its launch call (skewed clocks) counts as launched when it starts;
// - times are the trace's, to the nanosecond (HTA rounds them to microseconds).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trace/trace_overlay.h"

namespace gpuscope::trace {

struct GpuActivity;

inline constexpr std::int64_t kCudaMaxQueueLength = 1024;  // HTA's max_queue_length

struct StreamQueueLength {
  std::int64_t stream = -1;
  std::uint64_t launches = 0;  // activities matched to their launch call
  // HTA's summary: over the value after each change (one sample per launch and per start).
  std::uint64_t samples = 0;
  double mean = 0;
  double p50 = 0;  // percentiles interpolated between samples, as pandas' describe()
  double p95 = 0;
  std::int64_t max = 0;
  // Over time: the integral of the length over [first launch, last start], divided by that span.
  double time_weighted_mean = 0;
  std::int64_t full_ns = 0;  // time at or above the maximum queue length: launches block
  std::vector<CounterPoint> series;  // only when asked for: the length after each distinct timestamp
};

struct QueueLengthReport {
  std::int64_t max_queue_length = kCudaMaxQueueLength;
  std::vector<StreamQueueLength> streams;  // by stream id
  std::int64_t full_ns = 0;  // summed over the streams
  std::int64_t max() const;
};

struct QueueLengthOptions {
  std::int64_t max_queue_length = kCudaMaxQueueLength;
  bool series = false;
};

// `activities`: one device's, in any order (the analysis passes them sorted by start, which is cheapest).
QueueLengthReport analyze_queue_length(std::span<const GpuActivity> activities, const QueueLengthOptions& options);

// The report's series as counter tracks of process `pid` (Kineto's GPU process is the device id): one
// "Queue length stream N" track per stream.
void append_queue_length_counters(const QueueLengthReport& report, std::int64_t pid, std::vector<OverlayEvent>& out);

}  // namespace gpuscope::trace
