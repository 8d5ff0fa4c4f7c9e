// PlainEventDecoder: Kineto events decoded from their bytes, without simdjson, when they are plain ASCII
// JSON: the parser's fast path (114 ns an event on the real trace, against 297 through On Demand).
//
// Why it is fast: a profiler writes every event of a kind with one format string, so one kernel differs
// from the next only in its values. The decoder reads the first event of each shape member by member,
// strictly, and remembers its shape: the bytes between its values (keys, punctuation, whitespace, and
// the "ph" and "cat" strings) and what each value is (the name, ts, dur, args.device, ..., or one no
// analysis reads). The next events of that shape are read by comparing those bytes and parsing the
// values alone. Both ways check every byte of the event against JSON's grammar, so an event is decoded
// exactly as decode_trace_event would decode it, or declined: anything unusual (every error, an escape
// in a string the analyses read, a \u escape, non-ASCII bytes, deep nesting) is left to
// decode_trace_event, which also reports the errors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/event_fields.h"
#include "trace/trace_event.h"

namespace gpuscope::trace {

class PlainEventDecoder {
 public:
  explicit PlainEventDecoder(DecodeOptions options = {});
  ~PlainEventDecoder();
  PlainEventDecoder(const PlainEventDecoder&) = delete;
  PlainEventDecoder& operator=(const PlainEventDecoder&) = delete;

  // One event object, '{' to '}' (only these bytes are read). nullopt: decode_trace_event must decide.
  // On kEvent, `event`'s name points into `bytes`.
  std::optional<DecodeOutcome> decode(std::string_view bytes, TraceEvent& event);

  struct Counts {
    std::uint64_t by_shape = 0;   // read by comparing with a known shape
    std::uint64_t by_reader = 0;  // read member by member
    std::uint64_t declined = 0;
    std::uint64_t shapes_learned = 0;
  };
  const Counts& counts() const { return counts_; }

  struct Shape;  // defined with the reader

 private:
  static constexpr std::size_t kMaxShapes = 8;

  DecodeOptions options_;
  std::vector<Shape> shapes_;  // the most used first
  std::unique_ptr<Shape> scratch_;  // where the reader notes the shape of the event it reads
  Counts counts_;
};

}  // namespace gpuscope::trace
