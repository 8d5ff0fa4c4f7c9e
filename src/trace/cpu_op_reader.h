// read_kineto_cpu_op: the members of a Kineto cpu_op event the op attribution reads (name, tid, ts,
// dur), taken from its first bytes without parsing the rest.
//
// Why: cpu_op events are half of a trace's bytes and 40% of its events, and most of each is "args"
// (input shapes and types, call stacks) that no analysis reads; their "args" also differ from one op
// to the next, so the PlainEventDecoder's shapes would not fit them and would be pushed out by them.
// Kineto writes the members the analyses read first, in one order: they are read here, strictly (the
// same numbers as decode_trace_event), and the rest is skipped unparsed, as cpu_op events were before
// they were read at all (the scanner still checks their strings and brackets; `--all-events` parses and
// checks every byte). Anything else, a name with an escape or non-ASCII bytes, another order, a bad
// value, is declined and goes through the decoders, which also word the errors.
#pragma once

#include <string_view>

#include "trace/trace_event.h"

namespace gpuscope::trace {

// `bytes` is one event, '{' to '}'. True when it is a complete cpu_op event in Kineto's layout:
// {"ph": "X", "cat": "cpu_op", "name": "...", ["pid": N,] ["tid": N,] "ts": N, "dur": N, "args": ...}
// (any whitespace between tokens); `event` then holds it (name pointing into `bytes`).
bool read_kineto_cpu_op(std::string_view bytes, TraceEvent& event);

}  // namespace gpuscope::trace
