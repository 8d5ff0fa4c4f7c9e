// StepAnalysis: the ProfilerStep#N annotations as rows, on the rank's main device: the step's GPU busy
// and idle time (the union of activities clipped to the step's CPU-side interval), the HTA host wait
// inside it, and the kernels the step launched (matched by correlation id to a runtime call inside the
// step, HTA's assignment of kernels to iterations). First and last steps cut by the profiler window are
// marked, and left out on request.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trace/idle_intervals.h"
#include "trace/profiler_steps.h"
#include "trace/rank_timeline.h"

namespace gpuscope::trace {

struct StepRow {
  std::optional<std::int64_t> number;  // N of ProfilerStep#N
  std::size_t index = 0;               // position among all the trace's steps, from 0
  std::int64_t start_offset_ns = 0;    // from the trace's start
  std::int64_t duration_ns = 0;
  std::int64_t busy_ns = 0;            // main device busy within the step
  std::int64_t idle_ns = 0;            // duration - busy
  std::int64_t host_wait_ns = 0;       // device-wide idle within the step that HTA calls host wait
  std::uint64_t kernels = 0;           // kernels launched in the step
  std::int64_t kernel_ns = 0;          // their GPU time
  std::string top_kernel;              // the one with the most GPU time among them; empty when none
  std::int64_t top_kernel_ns = 0;
  // How long after the step's end the GPU work it launched (kernels, copies, memsets) still ran; 0 when
  // it finished within the step.
  std::int64_t gpu_tail_ns = 0;
  std::string incomplete;              // why the profiler window cut this step; empty when it did not
};

struct StepsReport {
  std::int64_t device = -1;  // the main device; -1 when the trace has no GPU activity
  std::vector<StepRow> rows;     // in step order; without the dropped ones
  std::vector<StepRow> dropped;  // with drop_incomplete: the incomplete first/last steps
  bool drop_incomplete = false;
  std::uint64_t unattributed = 0;  // main-device activities launched outside any step or with no launch in the trace
};

struct StepAnalysisInput {
  std::span<const GpuActivity> acts;    // the main device's, sorted by start, launches joined
  std::span<const IdleGap> device_gaps; // its device-wide gaps
  const std::vector<ProfilerStep>& steps;
  const std::vector<std::string>& names;
  std::int64_t trace_start_ns = 0;
  std::int64_t trace_end_ns = 0;  // the end of the last event of any kind
  std::int64_t device = -1;
  bool drop_incomplete = false;
};

StepsReport analyze_steps(const StepAnalysisInput& input);

}  // namespace gpuscope::trace
