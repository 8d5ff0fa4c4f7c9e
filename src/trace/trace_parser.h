// TraceParser: streams one Kineto Chrome-trace JSON document (plain or gzip) to a TraceEventSink with
// memory bounded by a window, never by the file size.
//
// Why this design: simdjson's On Demand API needs the whole document in memory (plus padding), and a
// trace is 1-30 GB. So the document is read through a fixed window (256 KiB, grown only for a single
// larger event): a small hand-written walker reads the top-level object (keys, distributedInfo,
// deviceProperties); inside "traceEvents" the JsonStructureScanner (SIMD, 64 bytes a step) finds where
// each event object ends. Events no analysis reads (cpu_op, flow and metadata events: about two thirds
// of the bytes) are recognised by their first members and dropped unparsed; the others are decoded
// from the window by the PlainEventDecoder (mostly by comparing with a learned shape), and the few it
// declines are parsed by On Demand one event at a time (which is also where errors are reported). A
// plain file is mmap'ed and the window slides over the mapping (no copy through read(2)); the pages
// behind the window are handed back with MADV_DONTNEED every 256 KiB, since mapped pages count in the
// process's RSS while page-cache pages do not. Gzip is inflated (GzipInflater) into a window buffer. The peak
// memory is the window, simdjson's buffers for the largest event, and what the sink keeps (about 72
// bytes per GPU activity).
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <string>
#include <vector>

#include "trace/trace_byte_reader.h"
#include "trace/trace_error.h"
#include "trace/trace_event.h"

namespace gpuscope::trace {

struct ParseOptions {
  // Skip what cannot be read (bad events, garbage between events, a truncated end) and report how much,
  // instead of failing at the first problem.
  bool lenient = false;
  bool python_functions = false;
  // Also parse (and so check) the events no analysis reads: cpu_op, flow, metadata and instant events
  // are otherwise recognised by their first members and skipped unparsed (their strings and brackets are
  // still checked by the scanner).
  bool parse_unused_events = false;
  // Tests: false sends every event the analyses read through simdjson, as before the plain decoder, to
  // check that both ways give the same answers.
  bool plain_decoder = true;
  // Called after each read with the file bytes consumed so far (compressed bytes for gzip).
  std::function<void(std::uint64_t consumed)> progress;
  // Called with what the top-level object held before its "traceEvents" array (Kineto writes
  // distributedInfo and deviceProperties first); false stops the parse there, unread, with
  // ParseSummary::stopped_before_events set. Not called for a bare array of events.
  std::function<bool(const TraceHeader& header)> before_events;
  // The read window; tests shrink it to put window boundaries inside events.
  std::size_t window_bytes = 256u << 10;
};

struct ParseSummary {
  std::uint64_t json_bytes = 0;       // JSON text read (decompressed); an nsys export: the database's size
  std::string_view input = "JSON";    // what was read, as the report names it ("an nsys SQLite export")
  std::uint64_t event_objects = 0;    // elements of traceEvents
  std::uint64_t complete_events = 0;  // "ph":"X" events handed to the sink
  std::uint64_t unparsed_events = 0;  // recognised as unused by their first members, not parsed
  std::uint64_t skipped_events = 0;   // lenient: events that could not be read
  std::uint64_t skipped_bytes = 0;    // lenient: bytes skipped (bad events, garbage, a truncated end)
  bool truncated = false;             // lenient: the input ended inside the document
  bool stopped_before_events = false; // before_events said to stop
  std::vector<std::string> problems;  // lenient: the first few problems, each with its byte offset
};

// Reads the whole input. `header` receives distributedInfo and deviceProperties wherever they are in the
// top-level object. The error's `file` is left empty for the caller to fill in.
std::expected<ParseSummary, TraceError> parse_trace(TraceByteReader& reader, TraceEventSink& sink, TraceHeader& header,
                                                    const ParseOptions& options);

}  // namespace gpuscope::trace
