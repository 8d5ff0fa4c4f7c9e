// Memory bandwidth over time per transfer direction (H2D, D2H, D2D, P2P, H2H, memset, other), as
// Holistic Trace Analysis defines it (TraceCounters.get_memory_bw_time_series / get_memory_bw_summary):
// each memcpy or memset moves its bytes evenly over its duration, and the copies of one direction that
// overlap add up. The series steps up by a copy's rate (bytes / duration; bytes per ns is GB/s) when it
// starts and down when it ends.
//
// Conventions (docs in /work/notes/trace_counters.md): a copy's rate is its bytes over its duration from
// the trace (HTA reads Kineto's "memory bandwidth (GB/s)" argument, the same figure before Kineto rounded
// the duration to microseconds in older traces); a copy of zero duration lasts 1 us, as in HTA; at one
// timestamp, ends count before starts (a copy that follows another back to back is not counted on top of
// it); the summary, as HTA's, is over the values after each change, leaving out zeros.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trace/trace_overlay.h"

namespace gpuscope::trace {

struct GpuActivity;

struct DirectionBandwidth {
  std::string direction;  // "H2D", "D2H", "D2D", "P2P", "H2H", "memset", "other"
  std::uint64_t copies = 0;
  std::int64_t bytes = 0;
  std::int64_t active_ns = 0;  // union of the copies' durations
  // HTA's summary, in GB/s (1e9 bytes/s): over the non-zero values after each start and end.
  std::uint64_t samples = 0;
  double mean_gbps = 0;
  double p50_gbps = 0;  // interpolated between samples, as pandas
  double p95_gbps = 0;
  double max_gbps = 0;
  // bytes / active time: the rate while this direction was copying.
  double active_gbps() const { return active_ns > 0 ? static_cast<double>(bytes) / static_cast<double>(active_ns) : 0; }
  std::vector<CounterPoint> series;  // only when asked for: GB/s after each distinct timestamp
};

struct MemoryBandwidthReport {
  std::vector<DirectionBandwidth> directions;  // in TransferDirection order, only those with copies
};

// `activities`: one device's, in any order; `names` maps their name_id to the name (the memcpy kind is
// in it: "Memcpy HtoD (Pinned -> Device)").
MemoryBandwidthReport analyze_memory_bandwidth(std::span<const GpuActivity> activities, const std::vector<std::string>& names,
                                               bool series);

// The report's series as counter tracks of process `pid`: one "Memory bandwidth DIR" track per direction.
void append_memory_bandwidth_counters(const MemoryBandwidthReport& report, std::int64_t pid, std::vector<OverlayEvent>& out);

}  // namespace gpuscope::trace
