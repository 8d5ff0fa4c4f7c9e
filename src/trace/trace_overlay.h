// TraceOverlay: writes a copy of a Chrome-trace JSON file (plain or gzip) with extra events put into its
// traceEvents array: counter tracks ("ph":"C") and complete spans ("ph":"X") that gpuscope's analyses
// derived (launch-queue length, memory bandwidth, a critical path), so chrome://tracing and Perfetto
// show them beside the original events.
//
// Why streamed: a trace is 1-30 GB and `gpuscope trace` never holds one whole. The input is read through
// TraceByteReader (gzip detected by content) in 256 KiB pieces; only its beginning is walked, up to the
// '[' of the top-level "traceEvents" array (Kineto writes it after a few small members), where the new
// events go; the rest is copied byte for byte. So the output is valid JSON when the input is: read the
// input strictly (parse_trace without `lenient`) before augmenting it. The output is written to a
// temporary file beside it and renamed into place, so a failed write never leaves half a trace.
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "trace/trace_error.h"

namespace gpuscope::trace {

struct OverlayArg {
  std::string key;
  std::variant<std::int64_t, double, std::string> value;
};

// One event to add. Times are nanoseconds on the trace's clock (gpuscope's TraceEvent::start_ns): they
// are written back as the trace's microseconds with three decimals, exactly.
struct OverlayEvent {
  enum class Phase : char { kCounter = 'C', kComplete = 'X' };
  Phase phase = Phase::kCounter;
  std::string name;
  std::string category;  // "cat"; left out when empty
  std::int64_t pid = 0;  // Kineto's GPU events have pid = device, tid = stream
  std::int64_t tid = 0;
  std::int64_t ts_ns = 0;
  std::int64_t duration_ns = 0;  // kComplete only
  // A counter's args are its series (one track per name and pid; Perfetto names the track "NAME KEY").
  std::vector<OverlayArg> args;
};

// One value of a counter from `ts_ns` until the next point.
struct CounterPoint {
  std::int64_t ts_ns = 0;
  double value = 0;
};

// Appends a counter track: one "C" event per point, named `name`, with the value under `key`.
void append_counter_track(const std::string& name, const std::string& category, std::int64_t pid, const std::string& key,
                          std::span<const CounterPoint> points, std::vector<OverlayEvent>& out);

// The event as one JSON object (no trailing comma or newline).
std::string overlay_event_json(const OverlayEvent& event);

struct OverlaySummary {
  std::uint64_t input_json_bytes = 0;
  std::uint64_t output_file_bytes = 0;  // on disk (compressed for .gz)
  std::uint64_t added_events = 0;
  bool gzip = false;
};

// Whether `output` gets gzip: a name ending in .gz (".json.gz"); plain for ".json"; anything else is an
// error (a trace viewer and gpuscope itself tell the format by content, but a plain file named .gz or a
// gzip one named .json confuses every other tool).
std::expected<bool, std::string> overlay_output_gzip(const std::string& output);

// Copies the trace at `input` to `output` with `events` at the start of its traceEvents array (a trace
// that is a bare array of events gets them at its start too). Errors (one line): the output name, an
// output equal to the input, a directory that cannot be written, a full disk, an input that is not a
// Chrome trace (no top-level traceEvents array) or cannot be read. TraceError::file is the file at fault.
std::expected<OverlaySummary, TraceError> write_trace_overlay(const std::string& input, const std::string& output,
                                                              std::span<const OverlayEvent> events);

}  // namespace gpuscope::trace
