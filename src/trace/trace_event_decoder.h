// TraceEventDecoder: one Kineto event object (simdjson On Demand) to a TraceEvent, reading only the
// fields the analyses use and checking their types; everything else is skipped unparsed.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "trace/trace_error.h"
#include "trace/trace_event.h"

namespace gpuscope::trace {

// What went wrong in one event; `where` points at the offending bytes in the parsed buffer (null when
// simdjson lost track and the caller has to ask the document).
struct EventProblem {
  TraceErrorKind kind = TraceErrorKind::kNotJson;
  std::string message;
  const char* where = nullptr;
};

enum class DecodeOutcome {
  kEvent,    // a complete event the analyses want: `event` is filled
  kIgnored,  // metadata, flow, instant events; python_function unless asked for
};

struct DecodeOptions {
  bool python_functions = false;
};

std::expected<DecodeOutcome, EventProblem> decode_trace_event(simdjson::ondemand::object object,
                                                              const DecodeOptions& options, TraceEvent& event);

// Kineto's microsecond numbers ("1682725898082228", "12.5", "3e2") as integer nanoseconds; digits after
// the third decimal are dropped. nullopt for anything that is not a JSON number.
std::optional<std::int64_t> microseconds_text_to_ns(std::string_view text);

}  // namespace gpuscope::trace
