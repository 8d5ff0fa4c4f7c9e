// OpAttribution: the GPU time of each aten op and each record_function / NVTX annotation, found the way
// the work was launched: a GPU activity -> the runtime call with its correlation id -> the CPU events
// enclosing that call on the call's thread, by time nesting.
//
// An activity counts for the innermost op around its launch (aten::addmm, not the aten::linear around
// it: the op that launched it), so the ops' GPU times add up to the attributed GPU time; it counts for
// every annotation around its launch (forward and the ProfilerStep around it both get it), once per
// annotation name. Annotation names that differ only in a trailing "#N" (ProfilerStep#1009) are one row
// ("ProfilerStep#*"). Kineto's "External id" would link ops and calls too, but only newer traces carry
// it on both sides; time nesting works on every trace, nsys exports included.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/rank_timeline.h"

namespace gpuscope::trace {

// The CPU events around each runtime call on its thread.
struct CpuCallContext {
  std::int32_t op = -1;          // innermost enclosing cpu_op (index in RankTimeline::cpu_events), -1: none
  std::int32_t annotation = -1;  // innermost enclosing user annotation, -1: none
};

// One CPU thread's events and calls, as ranges of CpuNesting::events_by_thread / calls_by_thread.
struct CpuThread {
  std::int32_t tid = -1;
  std::size_t events_begin = 0, events_end = 0;  // by start, an enclosing event first
  std::size_t calls_begin = 0, calls_end = 0;    // by start
};

struct CpuNesting {
  std::vector<CpuCallContext> of_call;         // by index in RankTimeline::runtime_calls
  std::vector<std::int32_t> enclosing_annotation;  // by cpu_events index: the annotation around it, -1: none
  std::uint64_t misnested = 0;  // CPU events that overlap one they started in without ending inside it
  std::vector<CpuThread> threads;
  std::vector<std::uint32_t> events_by_thread;  // cpu_events indices (cpu_op and user_annotation only)
  std::vector<std::uint32_t> calls_by_thread;   // runtime_calls indices
  std::vector<std::int32_t> launch_of_activity;  // launching_calls(timeline)
};

// Nests every thread's cpu_op and user_annotation events by time and places each runtime call in them.
// An event that starts inside another and ends after it is taken as nested in it (and counted).
CpuNesting nest_cpu_events(const RankTimeline& timeline);

struct AttributionRow {
  std::string name;
  std::uint64_t instances = 0;  // op calls or annotation ranges
  std::int64_t cpu_ns = 0;      // their summed durations on the CPU (an op's includes its children)
  std::uint64_t launches = 0;   // runtime calls made inside them that launched GPU work
  std::uint64_t activities = 0; // kernels, copies and memsets launched inside them
  std::int64_t gpu_ns = 0;      // the activities' summed durations
  std::int64_t launch_delay_total_ns = 0;  // activity start - launch call start, summed
  std::int64_t launch_delay_max_ns = 0;
  double gpu_share = 0;  // of all GPU activity time of the rank

  std::int64_t launch_delay_mean_ns() const {
    return activities > 0 ? launch_delay_total_ns / static_cast<std::int64_t>(activities) : 0;
  }
};

struct OpAttribution {
  std::vector<AttributionRow> ops;          // every op name, most GPU time first (then CPU time)
  std::vector<AttributionRow> annotations;  // every annotation name, the same order
  std::uint64_t activities = 0;             // all GPU activities of the rank
  std::int64_t activity_ns = 0;
  std::uint64_t without_launch = 0;         // no runtime call with their correlation id
  std::int64_t without_launch_ns = 0;
  std::uint64_t outside_ops = 0;            // launched by a call that no cpu_op encloses
  std::int64_t outside_ops_ns = 0;
  std::uint64_t cpu_ops = 0;                // cpu_op events read
  std::uint64_t misnested = 0;
  std::uint64_t threads = 0;                // threads with CPU events or runtime calls
};

// For each GPU activity (by index in RankTimeline::activities), the runtime call that launched it (the
// earliest with its correlation id), -1 where there is none.
std::vector<std::int32_t> launching_calls(const RankTimeline& timeline);

// "ProfilerStep#1009" -> "ProfilerStep#*"; other names as they are.
std::string annotation_group(std::string_view name);

// Reads the timeline only (any order of its vectors).
OpAttribution attribute_ops(const RankTimeline& timeline, const CpuNesting& nesting);

}  // namespace gpuscope::trace
