// TraceEventDecoder: one Kineto event object (simdjson On Demand) to a TraceEvent, reading only the
// fields the analyses use and checking their types; everything else is skipped unparsed.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "trace/event_fields.h"
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

std::expected<DecodeOutcome, EventProblem> decode_trace_event(simdjson::ondemand::object object,
                                                              const DecodeOptions& options, TraceEvent& event);

}  // namespace gpuscope::trace
