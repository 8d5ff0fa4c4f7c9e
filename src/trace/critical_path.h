// CriticalPath: what bounds each ProfilerStep (or the whole trace when it has no steps): the longest
// path through a graph of the step's CPU work, CUDA calls and GPU activities, weighted by the time each
// element itself takes.
//
// The graph (a DAG: every edge goes forward in time; one whose source is not earlier is dropped):
//   - per CPU thread that made CUDA calls, a chain: the CPU time before each call (only where an op or
//     annotation runs on that thread: an idle thread is not work), the call itself, ... ;
//   - launch: the CPU time before a launching call -> the kernel / copy / memset it launched (the work is
//     queued when the call starts, so the call's own time is not on the way to the kernel);
//   - stream order: each activity -> the next one on its stream;
//   - sync: the activity that finished last while a synchronizing call (cudaStreamSynchronize,
//     cudaDeviceSynchronize, cudaEventSynchronize, a blocking cudaMemcpy) was waiting -> the call, whose
//     weight is then only the part after that activity ended (the wait itself is nobody's work).
// The path's CPU part against its GPU part says whether the CPU or the GPU bounds the step; its elements,
// summed by name, are what to make faster, with the share of the path each holds. A step runs from its
// ProfilerStep annotation's start to the end of the GPU work its calls launched (or of the annotation):
// where the CPU runs ahead, a step's kernels finish long after its annotation ends. Limits: dependencies
// between CPU threads, between streams (events) and a launch that blocks on a full queue are not seen.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "trace/op_attribution.h"
#include "trace/rank_timeline.h"

namespace gpuscope::trace {

enum class PathElementKind : std::uint8_t {
  kCpu,          // CPU time inside an op (named by the op around the next CUDA call)
  kRuntimeCall,  // a CUDA runtime/driver call (a sync: the part after the GPU work it waited for)
  kKernel,
  kCommunication,  // NCCL kernels
  kMemcpy,
  kMemset,
};

std::string_view path_element_kind_name(PathElementKind kind);  // "cpu", "runtime", "kernel", ...
inline bool is_gpu_element(PathElementKind kind) {
  return kind != PathElementKind::kCpu && kind != PathElementKind::kRuntimeCall;
}

struct PathElement {
  std::string name;
  PathElementKind kind = PathElementKind::kCpu;
  std::uint64_t count = 0;  // times it is on the path
  std::int64_t total_ns = 0;
  double share = 0;  // of the path's length (over all steps: of the paths' summed lengths)
};

// One element of a path, in time (only when asked for: an augmented trace draws them).
struct PathSpan {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  PathElementKind kind = PathElementKind::kCpu;
  std::string name;
};

struct StepCriticalPath {
  std::string step;  // "ProfilerStep#1009", or "whole trace"
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;      // the end of the step's GPU work, or of its CPU range if later
  std::int64_t cpu_end_ns = 0;  // the end of the step's CPU range (the annotation)
  std::int64_t length_ns = 0;  // the path: cpu_ns + gpu_ns
  std::int64_t cpu_ns = 0;     // CPU time and CUDA calls on the path
  std::int64_t gpu_ns = 0;     // GPU activities on the path
  std::uint64_t elements = 0;  // nodes on the path
  std::vector<PathElement> top;  // by time on the path
  std::vector<PathSpan> spans;   // with keep_spans: the path's elements in time order

  std::int64_t duration_ns() const { return end_ns - start_ns; }
  bool gpu_bound() const { return gpu_ns > cpu_ns; }
};

struct CriticalPathReport {
  bool whole_trace = false;  // no ProfilerStep annotations: one path through the whole trace
  std::vector<StepCriticalPath> steps;
  // Over all steps.
  std::int64_t steps_ns = 0;
  std::int64_t cpu_ns = 0;
  std::int64_t gpu_ns = 0;
  std::uint64_t gpu_bound_steps = 0;
  std::vector<PathElement> top;
  std::string note;  // what limits the answer on this trace (no CPU events, no launches), or empty
};

// Reads the timeline only. `top`: elements kept per step and overall; `keep_spans`: every element of
// every path too; the step annotation starting at `skip_step_start` (the one left out by
// AnalysisOptions::exclude_last_step) gets no path.
CriticalPathReport critical_paths(const RankTimeline& timeline, const CpuNesting& nesting, std::size_t top,
                                  bool keep_spans = false,
                                  std::int64_t skip_step_start = std::numeric_limits<std::int64_t>::min());

}  // namespace gpuscope::trace
